// Convolution layers: convolution (plain and grouped) and deconvolution.
#include <algorithm>

#include "detail.h"

namespace pz {

// ---- output shapes ------------------------------------------------------------------

Shape convOutputShape(const Shape& in, const Conv& p) {
  detail::requireNchw(in, "conv");
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
          detail::slidingOutput(in[2], p.pads_.top, p.pads_.bottom, kh, p.stride_.h, false, "H",
                                "conv"),
          detail::slidingOutput(in[3], p.pads_.left, p.pads_.right, kw, p.stride_.w, false, "W",
                                "conv")};
}

Shape deconvOutputShape(const Shape& in, const Deconv& p) {
  detail::requireNchw(in, "deconv");
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

// ---- ConvLayer ----------------------------------------------------------------------

ConvLayer::ConvLayer(std::string name, Tensor& input, const Conv& params)
    : ParamLayer(name, {&input}, detail::layerShape(name, [&] {
              return convOutputShape(input.shape(), params);
            })) {
  const Shape filter{params.out_channels, input.shape()[1] / params.groups_, params.kernel.h,
                     params.kernel.w};
  const ConstTensor& weight = declareWeight("weight", CNML_FILTER, filter);
  const ConstTensor& bias =
      declareWeight("bias", CNML_CONST, Shape{params.out_channels}, /*optional=*/true);
  PZ_CHECK(name_,
           cnmlCreateConvOpParam_V2(param_.out(), params.stride_.h, params.stride_.w,
                                    params.dilation_.h, params.dilation_.w, params.pads_.top,
                                    params.pads_.bottom, params.pads_.left, params.pads_.right));
  allowInt8(weight);
  const int groups = params.groups_;
  const Pads& pads = params.pads_;
  if (groups > 1)
    allowSparse("it has groups (CNML has no sparse group convolution)");
  else if (pads.top != pads.bottom || pads.left != pads.right)
    allowSparse("cnmlCreateConvOpParam, which takes the sparse mode, splits each axis' pad "
                "evenly, and its pads are " + std::to_string(pads.top) + "," +
                std::to_string(pads.bottom) + "," + std::to_string(pads.left) + "," +
                std::to_string(pads.right) + " (top, bottom, left, right)");
  else
    allowSparse();
  if (groups > 1) {
    defineOp([this, &weight, &bias, groups] {
      PZ_CHECK(name_, cnmlCreateConvGroupOp(&op_, param_, in(0), output_.desc(), weight.desc(),
                                            bias.desc(), groups));
    });
    PZ_FORWARD(cnmlComputeConvGroupOpForward_V4);
  } else {
    defineOp([this, &weight, &bias, params] {
      // The sparse mode comes with the MLU100 param, whose pads are per-axis totals.
      SdkHandle<cnmlConvOpParam_t, cnmlDestroyConvOpParam> sparse_param;
      if (sparse())
        PZ_CHECK(name_, cnmlCreateConvOpParam(
                            sparse_param.out(), params.stride_.h, params.stride_.w,
                            params.dilation_.h, params.dilation_.w,
                            params.pads_.top + params.pads_.bottom,
                            params.pads_.left + params.pads_.right, CNML_Sparse));
      const cnmlConvOpParam_t param = sparse() ? sparse_param : param_;
      PZ_CHECK(name_, cnmlCreateConvOp(&op_, param, in(0), output_.desc(), weight.desc(),
                                       bias.desc()));
    });
    PZ_FORWARD(cnmlComputeConvOpForward_V4);
  }
}

// ---- DeconvLayer --------------------------------------------------------------------

namespace {

// CNML's param crops the full output; ONNX's output padding below the bottom pad is a
// smaller bottom crop. Dilation, or output padding past the pad, needs the mock's _V2.
bool deconvNeedsV2(const Deconv& p) {
  return p.dilation_.h != 1 || p.dilation_.w != 1 || p.output_padding_.h > p.pads_.bottom ||
         p.output_padding_.w > p.pads_.right;
}

}  // namespace

DeconvLayer::DeconvLayer(std::string name, Tensor& input, const Deconv& params)
    : ParamLayer(name, {&input}, detail::layerShape(name, [&] {
              return deconvOutputShape(input.shape(), params);
            })) {
  const Shape filter{input.shape()[1], params.out_channels / params.groups_, params.kernel.h,
                     params.kernel.w};
  const ConstTensor& weight = declareWeight("weight", CNML_FILTER, filter);
  const ConstTensor& bias =
      declareWeight("bias", CNML_CONST, Shape{params.out_channels}, /*optional=*/true);
  const Pads& pad = params.pads_;
  if (deconvNeedsV2(params)) {
    PZ_CHECK(name_, cnmlCreateDeconvOpParam_V2(param_.out(), params.stride_.h, params.stride_.w,
                                               params.dilation_.h, params.dilation_.w, pad.top,
                                               pad.bottom, pad.left, pad.right,
                                               params.output_padding_.h, params.output_padding_.w));
  } else {
    PZ_CHECK(name_, cnmlCreateDeconvOpParam(param_.out(), params.stride_.h, params.stride_.w,
                                            pad.top, pad.bottom - params.output_padding_.h,
                                            pad.left, pad.right - params.output_padding_.w));
  }
  const int groups = params.groups_;
  if (groups > 1) {
    defineOp([this, &weight, &bias, groups] {
      PZ_CHECK(name_, cnmlCreateDeconvGroupOp(&op_, param_, in(0), output_.desc(), weight.desc(),
                                              bias.desc(), groups));
    });
    PZ_FORWARD(cnmlComputeDeconvGroupOpForward_V4);
  } else {
    defineOp([this, &weight, &bias] {
      PZ_CHECK(name_, cnmlCreateDeconvOp(&op_, param_, in(0), output_.desc(), weight.desc(),
                                         bias.desc()));
    });
    PZ_FORWARD(cnmlComputeDeconvOpForward_V4);
  }
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace {

// The attributes a convolution and a transposed one share (ConvWindow).
template <typename Params>
Params convWindowParams(const LayerArgs& a) {
  Params p(a.integer("out_channels"), a.window("kernel"));
  const Window stride = a.window("stride", p.stride_);
  const Pads pads = a.pads("pads", p.pads_);
  const Window dilation = a.window("dilation", p.dilation_);
  p.stride(stride.h, stride.w)
      .pads(pads.top, pads.bottom, pads.left, pads.right)
      .dilation(dilation.h, dilation.w)
      .groups(a.integer("groups", p.groups_));
  return p;
}

Deconv deconvParams(const LayerArgs& a) {
  Deconv p = convWindowParams<Deconv>(a);
  const Window extra = a.window("output_padding", p.output_padding_);
  p.outputPadding(extra.h, extra.w);
  return p;
}

}  // namespace

namespace detail {

void addConvFactories(std::vector<LayerFactory>& factories) {
  factories.push_back({"conv", 1,
                       {"out_channels", "kernel", "stride", "pads", "dilation", "groups"},
                       [](const std::string& name, const std::vector<Tensor*>& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<ConvLayer>(name, detail::only(in),
                                                            convWindowParams<Conv>(a));
                       }});
  factories.push_back(
      {"deconv", 1,
       {"out_channels", "kernel", "stride", "pads", "dilation", "groups", "output_padding"},
       [](const std::string& name, const std::vector<Tensor*>& in,
          const LayerArgs& a) -> std::unique_ptr<Layer> {
         return std::make_unique<DeconvLayer>(name, detail::only(in), deconvParams(a));
       }});
}

}  // namespace detail

}  // namespace pz
