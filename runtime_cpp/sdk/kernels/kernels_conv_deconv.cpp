// Deconvolution (transposed convolution) as GEMM + col2im, the way Caffe computes it: for each
// (batch item, group) the columns C[co * kh * kw, pixels] = W^T[co * kh * kw, ci] * X[ci, pixels]
// come from the packed SGEMM (W^T packed once at compile), then every column value is added
// to the output pixel its kernel tap lands on. Input rows are taken in chunks so the columns
// buffer stays bounded (a few MB) however large the feature map.
//
// The scatter-add is written as a gather, one task per output row: the row sums the columns
// of the taps (ky, kx) and input rows iy with iy * sh - pad_top + ky * dh == oy, in a fixed
// order, so the result does not depend on the thread count and no two threads write the
// same row. Groups of one input channel (depthwise deconvs) skip the GEMM and gather
// weight * input directly.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels.h"
#include "kernels_gemm.h"

namespace pz_sdk {
namespace {

// Columns floats per chunk: input rows are grouped until the columns would pass this.
constexpr std::size_t kColumnBudget = std::size_t{1} << 20;

// A conv's shape read off the deconv (filter [ci, co / group, kh, kw] has kh and kw where a
// conv's has them; `k` is unused), and the columns per input pixel.
struct DeconvShape : ConvShape {
  int m;  // cog * kh * kw
};

DeconvShape shapeOf(const OpDesc& d) {
  DeconvShape s{convShapeOf(d), 0};
  s.m = s.cog * s.kh * s.kw;
  return s;
}

int floorDiv(int a, int b) { return a >= 0 ? a / b : -((-a + b - 1) / b); }

// Input columns [lo, hi) whose tap at offset `tap` (kx * dw - pad_left) lands inside the
// output row: 0 <= ix * stride + tap < out_size.
void tapRange(int in_size, int out_size, int stride, int tap, int* lo, int* hi) {
  *lo = std::max(0, floorDiv(-tap + stride - 1, stride));
  *hi = std::min(in_size, floorDiv(out_size - 1 - tap, stride) + 1);
  if (*hi < *lo) *hi = *lo;
}

// Adds the columns of input rows [iy0, iy0 + rows) to the output planes of one group.
// cols: [m][rows * w], row (c * kh + ky) * kw + kx.
void col2im(const DeconvShape& s, const DeconvParams& p, const float* cols, int iy0, int rows,
            float* dst, int threads) {
  const int ncols = rows * s.w;
  const long long tasks = static_cast<long long>(s.cog) * s.ho;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long t = 0; t < tasks; ++t) {
    const int c = static_cast<int>(t / s.ho), oy = static_cast<int>(t % s.ho);
    float* orow = dst + (static_cast<std::size_t>(c) * s.ho + oy) * s.wo;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int shifted = oy + p.hu - ky * p.dh;  // iy * sh
      if (shifted < 0 || shifted % p.sh != 0) continue;
      const int iy = shifted / p.sh;
      if (iy < iy0 || iy >= iy0 + rows) continue;
      for (int kx = 0; kx < s.kw; ++kx) {
        const int tap = kx * p.dw - p.wl;
        int lo, hi;
        tapRange(s.w, s.wo, p.sw, tap, &lo, &hi);
        const float* crow = cols + static_cast<std::size_t>((c * s.kh + ky) * s.kw + kx) * ncols +
                            static_cast<std::size_t>(iy - iy0) * s.w;
        if (p.sw == 1) {
          float* o = orow + (lo + tap);
          const float* c_in = crow + lo;
#pragma omp simd
          for (int i = 0; i < hi - lo; ++i) o[i] += c_in[i];
        } else {
          for (int ix = lo; ix < hi; ++ix) orow[ix * p.sw + tap] += crow[ix];
        }
      }
    }
  }
}

// One input channel per group (depthwise-like): too little reuse for a GEMM, so each output
// row gathers weight * input directly, in the same (ky, kx) order as col2im.
void singleInputChannel(const DeconvShape& s, const DeconvParams& p, const float* filter,
                        const float* in, float* out, int threads) {
  const long long tasks = static_cast<long long>(s.n) * s.co * s.ho;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long t = 0; t < tasks; ++t) {
    const int oy = static_cast<int>(t % s.ho);
    const long long nc = t / s.ho;
    const int co = static_cast<int>(nc % s.co), n = static_cast<int>(nc / s.co);
    const int g = co / s.cog;  // == the input channel
    const float* plane = in + (static_cast<std::size_t>(n) * s.ci + g) * s.h * s.w;
    const float* wk = filter + static_cast<std::size_t>(co) * s.kh * s.kw;  // [ci][cog] == co
    float* orow = out + static_cast<std::size_t>(t) * s.wo;
    for (int ky = 0; ky < s.kh; ++ky) {
      const int shifted = oy + p.hu - ky * p.dh;
      if (shifted < 0 || shifted % p.sh != 0 || shifted / p.sh >= s.h) continue;
      const float* xrow = plane + static_cast<std::size_t>(shifted / p.sh) * s.w;
      for (int kx = 0; kx < s.kw; ++kx) {
        const float wv = wk[ky * s.kw + kx];
        const int tap = kx * p.dw - p.wl;
        int lo, hi;
        tapRange(s.w, s.wo, p.sw, tap, &lo, &hi);
        if (p.sw == 1) {
          float* o = orow + (lo + tap);
          const float* x = xrow + lo;
#pragma omp simd
          for (int i = 0; i < hi - lo; ++i) o[i] += wv * x[i];
        } else {
          for (int ix = lo; ix < hi; ++ix) orow[ix * p.sw + tap] += wv * xrow[ix];
        }
      }
    }
  }
}

// Per (batch item, group, chunk of input rows): one GEMM into columns, then col2im adds
// them into the output.
void gemmCol2im(PreparedOp& op, const DeconvShape& s, const float* in, float* out) {
  const OpDesc& d = op.desc;
  const std::size_t per_group = gemm::packedASize(s.m, s.cig);
  const std::size_t plane = static_cast<std::size_t>(s.ho) * s.wo;
  float* packed_b = op.scratch.data();
  float* cols = packed_b + gemm::packedBSize(s.cig, op.chunk_rows * s.w);
  for (int n = 0; n < s.n; ++n) {
    for (int g = 0; g < s.group; ++g) {
      const float* src = in + (static_cast<std::size_t>(n) * s.ci + g * s.cig) * s.h * s.w;
      float* dst = out + (static_cast<std::size_t>(n) * s.co + g * s.cog) * plane;
      const float* a = op.packed_weights.data() + g * per_group;
      for (int iy0 = 0; iy0 < s.h; iy0 += op.chunk_rows) {
        const int rows = std::min(op.chunk_rows, s.h - iy0);
        const int ncols = rows * s.w;
        gemm::packB(src + static_cast<std::size_t>(iy0) * s.w, s.h * s.w, s.cig, ncols, packed_b,
                    op.threads);
        gemm::sgemmPacked(s.m, ncols, s.cig, a, packed_b, cols, ncols, nullptr, nullptr,
                          op.threads);
        col2im(s, d.deconv, cols, iy0, rows, dst, op.threads);
      }
    }
  }
}

}  // namespace

void prepareDeconv(PreparedOp& op) {
  const OpDesc& d = op.desc;
  const DeconvShape s = shapeOf(d);
  prepareBias(op, s.co);
  if (s.cig == 1) return;  // singleInputChannel reads the filter as it is
  // A = W_g^T [m][cig] for each group, where W_g [cig][m] is the group's slice of the filter.
  const float* filter = d.consts[0]->data.data();
  const std::size_t per_group = gemm::packedASize(s.m, s.cig);
  op.packed_weights.resize(per_group * s.group);
  std::vector<float> at(static_cast<std::size_t>(s.m) * s.cig);
  for (int g = 0; g < s.group; ++g) {
    const float* wg = filter + static_cast<std::size_t>(g) * s.cig * s.m;
    for (int k = 0; k < s.cig; ++k)
      for (int m = 0; m < s.m; ++m)
        at[static_cast<std::size_t>(m) * s.cig + k] = wg[static_cast<std::size_t>(k) * s.m + m];
    gemm::packA(at.data(), s.cig, s.m, s.cig, op.packed_weights.data() + g * per_group);
  }
  const std::size_t row_cols = static_cast<std::size_t>(s.m) * s.w;
  op.chunk_rows = static_cast<int>(
      std::max<std::size_t>(1, std::min<std::size_t>(s.h, kColumnBudget / row_cols)));
  const int chunk_cols = op.chunk_rows * s.w;
  op.scratch.resize(gemm::packedBSize(s.cig, chunk_cols) +
                    static_cast<std::size_t>(s.m) * chunk_cols);
}

void deconvForward(PreparedOp& op, const float* in, float* out) {
  const OpDesc& d = op.desc;
  const DeconvShape s = shapeOf(d);
  const std::size_t plane = static_cast<std::size_t>(s.ho) * s.wo;
  // The overlapping contributions are summed from zero and the bias added to the finished
  // sum (a large bias first would absorb their low bits).
  const int planes = s.n * s.co;
#pragma omp parallel for schedule(static) num_threads(op.threads)
  for (int nc = 0; nc < planes; ++nc) std::fill(out + nc * plane, out + (nc + 1) * plane, 0.0f);
  if (s.cig == 1) {
    singleInputChannel(s, d.deconv, d.consts[0]->data.data(), in, out, op.threads);
  } else {
    gemmCol2im(op, s, in, out);
  }
#pragma omp parallel for schedule(static) num_threads(op.threads)
  for (int nc = 0; nc < planes; ++nc) {
    const float b = op.bias[nc % s.co];
    for (float* p = out + nc * plane; p != out + (nc + 1) * plane; ++p) *p += b;
  }
}

}  // namespace pz_sdk
