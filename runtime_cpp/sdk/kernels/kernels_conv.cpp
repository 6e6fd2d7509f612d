// Convolution: im2col written directly in packed-B layout + the packed SGEMM, one GEMM per
// (batch item, group); weights are packed once at compile. 1x1/stride-1/pad-0 convs skip the
// im2col gather (the input plane already is B) and only copy rows into panels. Depthwise convs
// (group == ci == co) have too little reuse for GEMM: kernels_conv_depthwise.cpp.
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels.h"
#include "kernels_conv_depthwise.h"
#include "kernels_gemm.h"

namespace pz_sdk {
ConvShape convShapeOf(const OpDesc& d) {
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

void prepareBias(PreparedOp& op, int channels) {
  const OpDesc& d = op.desc;
  op.bias.assign(channels, 0.0f);
  if (d.consts.size() > 1 && d.consts[1])
    std::copy(d.consts[1]->data.begin(), d.consts[1]->data.end(), op.bias.begin());
}

namespace {

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

// Appends values to one row of packed-B panels: kNR lanes per panel, panels `stride` apart.
struct PanelWriter {
  float* dst;
  std::size_t stride;
  int lane = 0;
  void put(float v) {
    dst[lane] = v;
    if (++lane == gemm::kNR) next();
  }
  void zeros(int n) {
    for (int i = 0; i < n; ++i) put(0.0f);
  }
  void copy(const float* src, int n) {  // contiguous source: whole lane runs at once
    while (n > 0) {
      int run = std::min(n, gemm::kNR - lane);
      std::memcpy(dst + lane, src, run * sizeof(float));
      lane += run;
      src += run;
      n -= run;
      if (lane == gemm::kNR) next();
    }
  }
  void next() {
    lane = 0;
    dst += stride;
  }
};

// Writes im2col rows [k_begin, k_end) restricted to output columns [n0, n0 + nb) as packed-B
// panels: row k lands at dst + (k - k_begin) * kNR, panels panel_stride apart. Lanes past nb
// in the last panel are zeroed.
void im2colRows(const float* in, const ConvShape& s, const ConvParams& p, bool pointwise,
                int k_begin, int k_end, int n0, int nb, float* dst, std::size_t panel_stride) {
  using gemm::kNR;
  const int padded = (nb + kNR - 1) / kNR * kNR;
  for (int k = k_begin; k < k_end; ++k) {
    PanelWriter out{dst + static_cast<std::size_t>(k - k_begin) * kNR, panel_stride};
    if (pointwise) {  // the input plane already is row k of B
      out.copy(in + static_cast<std::size_t>(k) * s.h * s.w + n0, nb);
      out.zeros(padded - nb);
      continue;
    }
    int c = k / (s.kh * s.kw), r = k % (s.kh * s.kw), ky = r / s.kw, kx = r % s.kw;
    const float* plane = in + static_cast<std::size_t>(c) * s.h * s.w;
    int lo, hi;
    validRange(s.w, s.wo, p.sw, p.pl, kx * p.dw, &lo, &hi);
    int oy = n0 / s.wo, ox = n0 % s.wo, left = nb;
    while (left > 0) {  // one output row segment [ox, ox_end) at a time
      int ox_end = std::min(s.wo, ox + left);
      left -= ox_end - ox;
      int iy = oy * p.sh - p.pt + ky * p.dh;
      if (iy < 0 || iy >= s.h) {
        out.zeros(ox_end - ox);
      } else {
        const float* row = plane + static_cast<std::size_t>(iy) * s.w - p.pl + kx * p.dw;
        int a = std::max(ox, std::min(lo, ox_end)), b = std::max(a, std::min(hi, ox_end));
        out.zeros(a - ox);
        if (p.sw == 1) {
          out.copy(row + a, b - a);
        } else {
          for (int x = a; x < b; ++x) out.put(row[x * p.sw]);
        }
        out.zeros(ox_end - b);
      }
      ox = 0;
      ++oy;
    }
    out.zeros(padded - nb);
  }
}

// Whole-matrix path for small outputs: full im2col in parallel over K, then the 2-D tiled
// GEMM, which can split output channels when there are too few columns to share.
void convWhole(PreparedOp& op, const ConvShape& s, bool pointwise, const float* src,
               const float* a_packed, const float* bias, float* dst) {
  const int cols = s.ho * s.wo;
  float* b = op.scratch.data();
  const std::size_t panel_stride = static_cast<std::size_t>(s.k) * gemm::kNR;
#pragma omp parallel for schedule(static) num_threads(op.threads)
  for (int k = 0; k < s.k; ++k)
    im2colRows(src, s, op.desc.conv, pointwise, k, k + 1, 0, cols,
               b + static_cast<std::size_t>(k) * gemm::kNR, panel_stride);
  gemm::sgemmPacked(s.cog, cols, s.k, a_packed, b, dst, cols, bias, nullptr, op.threads);
}

// Column blocks are whole panels dealt out evenly, and their count a multiple of the thread
// count, so no thread is left with a short tail block while another still works.
struct ColumnBlocks {
  int panels, count;
  int begin(int b) const { return static_cast<int>(static_cast<long long>(b) * panels / count); }
};

ColumnBlocks columnBlocks(int cols, int threads) {
  ColumnBlocks cb;
  cb.panels = (cols + gemm::kNR - 1) / gemm::kNR;
  int blocks = (cols + gemm::kNC - 1) / gemm::kNC;
  blocks = (blocks + threads - 1) / threads * threads;
  cb.count = std::max(1, std::min(blocks, cb.panels));
  return cb;
}

// Even splitting can widen a block past kNC by one panel.
std::size_t slabFloats() { return static_cast<std::size_t>(gemm::kKC) * (gemm::kNC + gemm::kNR); }

// Blocked path for large outputs: each thread takes column blocks and packs a kKC x kNC slab
// of im2col at a time into its own L2-resident buffer, right before multiplying it; the full
// im2col matrix is never written to memory.
void convBlocked(PreparedOp& op, const ConvShape& s, bool pointwise, const float* src,
                 const float* a_packed, const float* bias, float* dst) {
  using gemm::kKC;
  using gemm::kNR;
  const int cols = s.ho * s.wo;
  const ColumnBlocks cb = columnBlocks(cols, op.threads);
#pragma omp parallel num_threads(op.threads)
  {
    float* b = op.scratch.data() + slabFloats() * omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (int blk = 0; blk < cb.count; ++blk) {
      int n0 = cb.begin(blk) * kNR, nb = std::min(cols, cb.begin(blk + 1) * kNR) - n0;
      for (int pc = 0; pc < s.k; pc += kKC) {
        int kc = std::min(kKC, s.k - pc);
        im2colRows(src, s, op.desc.conv, pointwise, pc, pc + kc, n0, nb, b,
                   static_cast<std::size_t>(kc) * kNR);
        gemm::gemmBlock(s.cog, nb, kc, pc, s.k, a_packed, b, dst + n0, cols, bias);
      }
    }
  }
}

bool useBlocked(const ConvShape& s, int threads) {
  int blocks = (s.ho * s.wo + gemm::kNC - 1) / gemm::kNC;
  return threads == 1 || blocks >= threads;
}

}  // namespace

void prepareConv(PreparedOp& op) {
  const OpDesc& d = op.desc;
  ConvShape s = convShapeOf(d);
  prepareBias(op, s.co);
  op.depthwise = s.group == s.ci && s.group == s.co && s.group > 1;
  if (op.depthwise) {
    prepareDepthwise(op);
    return;
  }
  const float* filter = d.consts[0]->data.data();
  std::size_t per_group = gemm::packedASize(s.cog, s.k);
  op.packed_weights.resize(per_group * s.group);
  for (int g = 0; g < s.group; ++g)
    gemm::packA(filter + static_cast<std::size_t>(g) * s.cog * s.k, s.k, s.cog, s.k,
                op.packed_weights.data() + g * per_group);
  op.scratch.resize(useBlocked(s, op.threads)
                        ? slabFloats() * op.threads
                        : gemm::packedBSize(s.k, s.ho * s.wo));
}

void convForward(PreparedOp& op, const float* in, float* out) {
  const OpDesc& d = op.desc;
  ConvShape s = convShapeOf(d);
  if (op.depthwise) {
    depthwiseForward(op, in, out);
    return;
  }
  const bool pointwise = isPointwise(d, s);
  const bool blocked = useBlocked(s, op.threads);
  const int cols = s.ho * s.wo;
  const std::size_t per_group = gemm::packedASize(s.cog, s.k);
  for (int n = 0; n < s.n; ++n) {
    for (int g = 0; g < s.group; ++g) {
      const float* src = in + (static_cast<std::size_t>(n) * s.ci + g * s.cig) * s.h * s.w;
      float* dst = out + (static_cast<std::size_t>(n) * s.co + g * s.cog) * cols;
      const float* a = op.packed_weights.data() + g * per_group;
      const float* bias = op.bias.data() + g * s.cog;
      if (blocked)
        convBlocked(op, s, pointwise, src, a, bias, dst);
      else
        convWhole(op, s, pointwise, src, a, bias, dst);
    }
  }
}

}  // namespace pz_sdk
