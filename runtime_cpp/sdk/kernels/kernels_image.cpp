// Resize of H and W (NearestNeighbor, Interp = bilinear) with ONNX Resize's semantics and
// onnxruntime's float arithmetic: scale = out / in as float, the coordinate transform of the
// op's mode, then nearest rounding and clamping, or bilinear neighbours and weights. Both
// axes are separable, so the index and weight tables (per output row and per output column)
// are built once at compile and a forward only gathers.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels.h"

namespace pz_sdk {
namespace {

// x_in of output coordinate x_out, as onnxruntime computes it (all in float).
float originalCoordinate(cnmlInterpCoordinateMode_t mode, int x_out, float scale, int len_out,
                         int len_in) {
  const float x = static_cast<float>(x_out);
  switch (mode) {
    case CNML_INTERP_HALF_PIXEL: return (x + 0.5f) / scale - 0.5f;
    case CNML_INTERP_PYTORCH_HALF_PIXEL: return len_out > 1 ? (x + 0.5f) / scale - 0.5f : 0.0f;
    case CNML_INTERP_ALIGN_CORNERS:
      return len_out == 1 ? 0.0f
                          : x * static_cast<float>(len_in - 1) / static_cast<float>(len_out - 1);
    case CNML_INTERP_ASYMMETRIC: break;
  }
  return x / scale;
}

long long nearestPixel(cnmlNearestNeighborRoundMode_t mode, float x) {
  switch (mode) {
    case CNML_NEAREST_ROUND_PREFER_CEIL: return static_cast<long long>(std::round(x));
    case CNML_NEAREST_FLOOR: return static_cast<long long>(std::floor(x));
    case CNML_NEAREST_CEIL: return static_cast<long long>(std::ceil(x));
    case CNML_NEAREST_ROUND_PREFER_FLOOR: break;
  }
  if (x == static_cast<float>(static_cast<long long>(x)) + 0.5f)
    return static_cast<long long>(std::floor(x));
  return static_cast<long long>(std::round(x));
}

void nearestTable(const InterpParams& p, int len_in, int len_out, std::vector<int>& index) {
  const float scale = static_cast<float>(len_out) / static_cast<float>(len_in);
  index.resize(len_out);
  for (int o = 0; o < len_out; ++o) {
    const long long i = nearestPixel(p.round, originalCoordinate(p.coords, o, scale, len_out,
                                                                 len_in));
    index[o] = static_cast<int>(std::max(0LL, std::min<long long>(len_in - 1, i)));
  }
}

// Bilinear: per output coordinate the neighbours (i1, i2) and distances (d1, d2) to them;
// i1 == i2 at a clamped edge, with d1 = d2 = 0.5 (onnxruntime's convention).
void bilinearTable(const InterpParams& p, int len_in, int len_out, std::vector<int>& index,
                   std::vector<float>& weight) {
  const float scale = static_cast<float>(len_out) / static_cast<float>(len_in);
  index.resize(2 * static_cast<std::size_t>(len_out));
  weight.resize(2 * static_cast<std::size_t>(len_out));
  for (int o = 0; o < len_out; ++o) {
    float x = scale == 1.0f ? static_cast<float>(o)
                            : originalCoordinate(p.coords, o, scale, len_out, len_in);
    x = std::max(0.0f, std::min(x, static_cast<float>(len_in - 1)));
    const int i1 = std::min(static_cast<int>(x), len_in - 1);
    const int i2 = std::min(i1 + 1, len_in - 1);
    float d1 = std::fabs(x - static_cast<float>(i1)), d2 = std::fabs(x - static_cast<float>(i2));
    if (i1 == i2) d1 = d2 = 0.5f;
    index[2 * o] = i1;
    index[2 * o + 1] = i2;
    weight[2 * o] = d1;
    weight[2 * o + 1] = d2;
  }
}

struct ResizeShape {
  int planes, h, w, ho, wo;
};

ResizeShape shapeOf(const OpDesc& d) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  return ResizeShape{in[0] * in[1], in[2], in[3], out[2], out[3]};
}

// Both resizes compute one output row at a time from one input plane (N x C of them):
// row(shape, plane, oy, dst) writes output row oy of that plane into dst.
template <typename Row>
void forEachOutputRow(const PreparedOp& op, const float* in, float* out, const Row& row) {
  const ResizeShape s = shapeOf(op.desc);
  const long long plane_size = static_cast<long long>(s.h) * s.w;
  parallelFor(static_cast<long long>(s.planes) * s.ho, op.threads, [&](long long t) {
    row(s, in + t / s.ho * plane_size, static_cast<int>(t % s.ho), out + t * s.wo);
  });
}

}  // namespace

void prepareResize(PreparedOp& op) {
  const OpDesc& d = op.desc;
  const ResizeShape s = shapeOf(d);
  if (d.kind == OpKind::kNearestNeighbor) {
    nearestTable(d.interp, s.h, s.ho, op.row_index);
    nearestTable(d.interp, s.w, s.wo, op.col_index);
  } else {
    bilinearTable(d.interp, s.h, s.ho, op.row_index, op.row_weight);
    bilinearTable(d.interp, s.w, s.wo, op.col_index, op.col_weight);
  }
}

void nearestForward(const PreparedOp& op, const float* in, float* out) {
  const int* cols = op.col_index.data();
  forEachOutputRow(op, in, out, [&](const ResizeShape& s, const float* plane, int oy, float* dst) {
    const float* src = plane + static_cast<std::size_t>(op.row_index[oy]) * s.w;
    for (int ox = 0; ox < s.wo; ++ox) dst[ox] = src[cols[ox]];
  });
}

void bilinearForward(const PreparedOp& op, const float* in, float* out) {
  const int* xi = op.col_index.data();
  const float* xw = op.col_weight.data();
  forEachOutputRow(op, in, out, [&](const ResizeShape& s, const float* plane, int oy, float* dst) {
    const float* r1 = plane + static_cast<std::size_t>(op.row_index[2 * oy]) * s.w;
    const float* r2 = plane + static_cast<std::size_t>(op.row_index[2 * oy + 1]) * s.w;
    const float dy1 = op.row_weight[2 * oy], dy2 = op.row_weight[2 * oy + 1];
    for (int ox = 0; ox < s.wo; ++ox) {
      const int x1 = xi[2 * ox], x2 = xi[2 * ox + 1];
      const float dx1 = xw[2 * ox], dx2 = xw[2 * ox + 1];
      // onnxruntime's order: X11 (y1, x1), X21 (y1, x2), X12 (y2, x1), X22 (y2, x2).
      dst[ox] = dx2 * dy2 * r1[x1] + dx1 * dy2 * r1[x2] + dx2 * dy1 * r2[x1] + dx1 * dy1 * r2[x2];
    }
  });
}

}  // namespace pz_sdk
