// Convolution: im2col written directly in packed-B layout + the packed SGEMM, one GEMM per
// (batch item, group); weights are packed once at compile. 1x1/stride-1/pad-0 convs skip the
// im2col (the input plane already is B) and only pack. Depthwise convs (group == ci == co)
// have too little reuse for GEMM and use a direct kernel instead.
#include <algorithm>
#include <cstring>

#include "kernels.h"
#include "kernels_gemm.h"

namespace pz_mock {
namespace {

struct ConvShape {
  int n, ci, h, w, co, ho, wo, kh, kw, group, cig, cog, k;
};

ConvShape shapeOf(const OpDesc& d) {
  const Dims& in = d.inputs[0].dims;
  const Dims& out = d.outputs[0].dims;
  const Dims& f = d.consts[0]->dims;
  ConvShape s{};
  s.n = in[0];
  s.ci = in[1];
  s.h = in[2];
  s.w = in[3];
  s.co = out[1];
  s.ho = out[2];
  s.wo = out[3];
  s.kh = f[2];
  s.kw = f[3];
  s.group = d.group;
  s.cig = s.ci / s.group;
  s.cog = s.co / s.group;
  s.k = s.cig * s.kh * s.kw;
  return s;
}

bool isPointwise(const OpDesc& d, const ConvShape& s) {
  const ConvParams& p = d.conv;
  return s.kh == 1 && s.kw == 1 && p.sh == 1 && p.sw == 1 && p.pt == 0 && p.pb == 0 &&
         p.pl == 0 && p.pr == 0;
}

// Output columns [lo, hi) whose input column ox*stride - pad + offset lies inside [0, size).
void validRange(int size, int out_size, int stride, int pad, int offset, int* lo, int* hi) {
  int x = pad - offset;
  *lo = x <= 0 ? 0 : std::min(out_size, (x + stride - 1) / stride);
  int y = size - 1 + pad - offset;
  *hi = y < 0 ? 0 : std::min(out_size, y / stride + 1);
  if (*hi < *lo) *hi = *lo;
}

void im2colPacked(const float* in, const ConvShape& s, const ConvParams& p, float* out,
                  int threads) {
  using gemm::kNR;
  const int cols = s.ho * s.wo;
  const int panels = (cols + kNR - 1) / kNR;
  const std::size_t panel_stride = static_cast<std::size_t>(s.k) * kNR;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int k = 0; k < s.k; ++k) {
    int c = k / (s.kh * s.kw), r = k % (s.kh * s.kw), ky = r / s.kw, kx = r % s.kw;
    const float* plane = in + static_cast<std::size_t>(c) * s.h * s.w;
    int lo, hi;
    validRange(s.w, s.wo, p.sw, p.pl, kx * p.dw, &lo, &hi);
    float* dst = out + static_cast<std::size_t>(k) * kNR;
    int lane = 0;
    auto put = [&](float v) {
      dst[lane] = v;
      if (++lane == kNR) {
        lane = 0;
        dst += panel_stride;
      }
    };
    for (int oy = 0; oy < s.ho; ++oy) {
      int iy = oy * p.sh - p.pt + ky * p.dh;
      if (iy < 0 || iy >= s.h) {
        for (int ox = 0; ox < s.wo; ++ox) put(0.0f);
        continue;
      }
      const float* row = plane + static_cast<std::size_t>(iy) * s.w - p.pl + kx * p.dw;
      for (int ox = 0; ox < lo; ++ox) put(0.0f);
      if (p.sw == 1 && hi - lo >= kNR) {
        // Stride 1: copy whole lane runs at once instead of element by element.
        int ox = lo;
        while (ox < hi) {
          int run = std::min(hi - ox, kNR - lane);
          std::memcpy(dst + lane, row + ox, run * sizeof(float));
          lane += run;
          ox += run;
          if (lane == kNR) {
            lane = 0;
            dst += panel_stride;
          }
        }
      } else {
        for (int ox = lo; ox < hi; ++ox) put(row[ox * p.sw]);
      }
      for (int ox = hi; ox < s.wo; ++ox) put(0.0f);
    }
    for (int n = cols; n < panels * kNR; ++n) put(0.0f);
  }
}

void depthwise(const OpDesc& d, const ConvShape& s, const float* filter, const float* bias,
               const float* in, float* out, int threads) {
  const ConvParams& p = d.conv;
  const int planes = s.n * s.co;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int nc = 0; nc < planes; ++nc) {
    int c = nc % s.co;
    const float* src = in + static_cast<std::size_t>(nc) * s.h * s.w;
    float* dst = out + static_cast<std::size_t>(nc) * s.ho * s.wo;
    const float* w = filter + static_cast<std::size_t>(c) * s.kh * s.kw;
    for (int oy = 0; oy < s.ho; ++oy) {
      float* orow = dst + static_cast<std::size_t>(oy) * s.wo;
      for (int ox = 0; ox < s.wo; ++ox) orow[ox] = bias[c];
      for (int ky = 0; ky < s.kh; ++ky) {
        int iy = oy * p.sh - p.pt + ky * p.dh;
        if (iy < 0 || iy >= s.h) continue;
        const float* irow = src + static_cast<std::size_t>(iy) * s.w;
        for (int kx = 0; kx < s.kw; ++kx) {
          float wv = w[ky * s.kw + kx];
          int off = kx * p.dw - p.pl, lo, hi;
          validRange(s.w, s.wo, p.sw, p.pl, kx * p.dw, &lo, &hi);
          if (p.sw == 1) {
            for (int ox = lo; ox < hi; ++ox) orow[ox] += wv * irow[ox + off];
          } else {
            for (int ox = lo; ox < hi; ++ox) orow[ox] += wv * irow[ox * p.sw + off];
          }
        }
      }
    }
  }
}

}  // namespace

void prepareConv(PreparedOp& op) {
  const OpDesc& d = op.desc;
  ConvShape s = shapeOf(d);
  op.bias.assign(s.co, 0.0f);
  if (d.consts.size() > 1 && d.consts[1])
    std::copy(d.consts[1]->data.begin(), d.consts[1]->data.end(), op.bias.begin());
  op.depthwise = s.group == s.ci && s.group == s.co && s.group > 1;
  if (op.depthwise) return;
  const float* filter = d.consts[0]->data.data();
  std::size_t per_group = gemm::packedASize(s.cog, s.k);
  op.packed_weights.resize(per_group * s.group);
  for (int g = 0; g < s.group; ++g)
    gemm::packA(filter + static_cast<std::size_t>(g) * s.cog * s.k, s.k, s.cog, s.k,
                op.packed_weights.data() + g * per_group);
  op.scratch.resize(gemm::packedBSize(s.k, s.ho * s.wo));
}

void convForward(PreparedOp& op, const float* in, float* out) {
  const OpDesc& d = op.desc;
  ConvShape s = shapeOf(d);
  if (op.depthwise) {
    depthwise(d, s, d.consts[0]->data.data(), op.bias.data(), in, out, op.threads);
    return;
  }
  const bool pointwise = isPointwise(d, s);
  const int cols = s.ho * s.wo;
  const std::size_t per_group = gemm::packedASize(s.cog, s.k);
  for (int n = 0; n < s.n; ++n) {
    for (int g = 0; g < s.group; ++g) {
      const float* src = in + (static_cast<std::size_t>(n) * s.ci + g * s.cig) * s.h * s.w;
      if (pointwise)
        gemm::packB(src, s.h * s.w, s.k, cols, op.scratch.data(), op.threads);
      else
        im2colPacked(src, s, d.conv, op.scratch.data(), op.threads);
      float* dst = out + (static_cast<std::size_t>(n) * s.co + g * s.cog) * cols;
      gemm::sgemmPacked(s.cog, cols, s.k, op.packed_weights.data() + g * per_group,
                        op.scratch.data(), dst, cols, op.bias.data() + g * s.cog, nullptr,
                        op.threads);
    }
  }
}

}  // namespace pz_mock
