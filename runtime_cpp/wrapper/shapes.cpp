// Output shape functions of the spatial layers (floor, or ceil_mode for pooling).
#include <algorithm>

#include "detail.h"

namespace pz {
namespace {

void requireNchw(const Shape& in, const char* what) {
  if (in.size() != 4) {
    throw Error(std::string(what) + " needs a 4-D NCHW input, got " + shapeToString(in));
  }
}

// Floor or ceil division of the sliding range; a ceil window must start inside input + pad_begin.
int slidingOutput(int in, int pad_begin, int pad_end, int effective_window, int stride, bool ceil,
                  const char* axis, const char* what) {
  if (stride < 1) throw Error(std::string(what) + ": stride along " + axis + " must be >= 1");
  const int span = in + pad_begin + pad_end - effective_window;
  if (span < 0) {
    throw Error(std::string(what) + ": window of " + std::to_string(effective_window) +
                " along " + axis + " is larger than the padded input (" +
                std::to_string(in + pad_begin + pad_end) + ")");
  }
  int out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

}  // namespace

Shape convOutputShape(const Shape& in, const Conv& p) {
  requireNchw(in, "conv");
  if (p.groups_ < 1 || in[1] % p.groups_ != 0 || p.out_channels % p.groups_ != 0) {
    throw Error("conv: groups = " + std::to_string(p.groups_) +
                " must divide the input channels (" +
                std::to_string(in[1]) + ") and the output channels (" +
                std::to_string(p.out_channels) + ")");
  }
  if (p.kernel.h < 1 || p.kernel.w < 1 || p.dilation_.h < 1 || p.dilation_.w < 1) {
    throw Error("conv: kernel and dilation must be >= 1");
  }
  const int kh = p.dilation_.h * (p.kernel.h - 1) + 1;
  const int kw = p.dilation_.w * (p.kernel.w - 1) + 1;
  return {in[0], p.out_channels,
          slidingOutput(in[2], p.pads_.top, p.pads_.bottom, kh, p.stride_.h, false, "H", "conv"),
          slidingOutput(in[3], p.pads_.left, p.pads_.right, kw, p.stride_.w, false, "W", "conv")};
}

Shape poolOutputShape(const Shape& in, const Pool& p) {
  requireNchw(in, "pool");
  if (p.kernel.h < 1 || p.kernel.w < 1) throw Error("pool: kernel must be >= 1");
  return {in[0], in[1],
          slidingOutput(in[2], p.pads_.top, p.pads_.bottom, p.kernel.h, p.stride_.h, p.ceil_mode_,
                        "H", "pool"),
          slidingOutput(in[3], p.pads_.left, p.pads_.right, p.kernel.w, p.stride_.w, p.ceil_mode_,
                        "W", "pool")};
}

Shape deconvOutputShape(const Shape& in, const Deconv& p) {
  requireNchw(in, "deconv");
  if (p.groups_ < 1 || in[1] % p.groups_ != 0 || p.out_channels % p.groups_ != 0) {
    throw Error("deconv: groups = " + std::to_string(p.groups_) +
                " must divide the input channels (" + std::to_string(in[1]) +
                ") and the output channels (" + std::to_string(p.out_channels) + ")");
  }
  if (p.kernel.h < 1 || p.kernel.w < 1 || p.dilation_.h < 1 || p.dilation_.w < 1 ||
      p.stride_.h < 1 || p.stride_.w < 1) {
    throw Error("deconv: kernel, stride and dilation must be >= 1");
  }
  if (p.pads_.top < 0 || p.pads_.bottom < 0 || p.pads_.left < 0 || p.pads_.right < 0) {
    throw Error("deconv: pads must be >= 0");
  }
  const Window& op = p.output_padding_;
  if (op.h < 0 || op.w < 0 || op.h >= std::max(p.stride_.h, p.dilation_.h) ||
      op.w >= std::max(p.stride_.w, p.dilation_.w)) {
    throw Error("deconv: output padding (" + std::to_string(op.h) + ", " + std::to_string(op.w) +
                ") must be >= 0 and smaller than the stride or the dilation of its axis");
  }
  const int full_h = (in[2] - 1) * p.stride_.h + p.dilation_.h * (p.kernel.h - 1) + 1;
  const int full_w = (in[3] - 1) * p.stride_.w + p.dilation_.w * (p.kernel.w - 1) + 1;
  const int ho = full_h - p.pads_.top - p.pads_.bottom + op.h;
  const int wo = full_w - p.pads_.left - p.pads_.right + op.w;
  if (ho < 1 || wo < 1) {
    throw Error("deconv: pads crop away the whole " + std::to_string(full_h) + "x" +
                std::to_string(full_w) + " output");
  }
  return {in[0], p.out_channels, ho, wo};
}

Shape interpOutputShape(const Shape& in, const Interp& p) {
  requireNchw(in, "interp");
  if (p.size.h < 1 || p.size.w < 1) {
    throw Error("interp: output size must be >= 1, got " + std::to_string(p.size.h) + "x" +
                std::to_string(p.size.w));
  }
  return {in[0], in[1], p.size.h, p.size.w};
}

}  // namespace pz
