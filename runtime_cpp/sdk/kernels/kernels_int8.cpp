// int8 compute of Conv / ConvGroup (incl. depthwise) and Mlp, exactly as numerics.h states:
// the input quantised per tensor, the filter's int8 q values, products summed exactly in
// int32, one fp32 rescale per output (y = float(acc) * f_c + bias_c). The caller (executor)
// decodes the binary16 input to fp32 before and rounds y to binary16 after.
//
// Conv: the quantised input is kept as int16; each thread takes blocks of output columns,
// writes the block's im2col (all of K, int16, packed in panels of kNRi columns; the block is
// sized so it stays in L2) and multiplies it by the int16-packed filter with an int32
// register-tiled micro-kernel over the whole K, so no partial sums leave registers. Written
// with GCC vector extensions (-O3 -march=native picks the ISA). Depthwise convs use a
// direct int32 loop per plane. This file is compiled with -ffp-contract=off (the rescale
// must not fuse into an FMA).
#include <omp.h>

#include <algorithm>
#include <cstring>

#include "kernels.h"
#include "numerics.h"

namespace pz_sdk {
namespace {

#if defined(__AVX512F__)
constexpr int kVecI = 16;  // int32 lanes per vector register
constexpr int kMRi = 8;
#else
constexpr int kVecI = 8;
constexpr int kMRi = 6;
#endif
constexpr int kNRi = 2 * kVecI;
constexpr std::size_t kBlockBytes = 192 * 1024;  // im2col block budget (per thread, in L2)

typedef int vint __attribute__((vector_size(kVecI * sizeof(int))));
typedef short vshort __attribute__((vector_size(kVecI * sizeof(short))));

inline vint loadWiden(const std::int16_t* p) {
  vshort v;
  std::memcpy(&v, p, sizeof v);
  return __builtin_convertvector(v, vint);
}

// Per output channel: f_c = 2^(p_x + p_w,c) / (s_x * s_w,c) rounded once to fp32, and the
// bias (decoded FLOAT16, or 0).
void prepareRescale(PreparedOp& op, int channels) {
  const OpDesc& d = op.desc;
  const TensorQuant& q = d.consts[0]->quant;
  op.rescale.resize(channels);
  for (int c = 0; c < channels; ++c) {
    const int pw = q.positions.empty() ? q.position : q.positions[c];
    const float sw = q.scales.empty() ? q.scale : q.scales[c];
    op.rescale[c] = numerics::rescaleFactor(d.in_position, d.in_scale, pw, sw);
  }
  prepareBias(op, channels);
}

inline float rescale(std::int32_t acc, float f, float bias) {
  const float scaled = static_cast<float>(acc) * f;
  return scaled + bias;
}

// Floats of workspace that hold `n` int16 values.
std::size_t int16Floats(std::size_t n) { return (n * sizeof(std::int16_t) + 3) / 4; }
std::int16_t* int16s(const Scratch& s) { return reinterpret_cast<std::int16_t*>(s.data()); }

// Quantises the decoded input into op.qinput (int16 q values).
void quantizeInput(PreparedOp& op, const float* in, std::size_t n) {
  const double k = numerics::stepInverse(op.desc.in_position, op.desc.in_scale);
  std::int16_t* q = int16s(op.qinput);
  const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static) num_threads(op.threads) if (count > 65536)
  for (long long i = 0; i < count; ++i) q[i] = numerics::quantize(in[i], k);
}

// Output columns [lo, hi) whose input column ox*stride - pad + offset lies in [0, size).
void validRange(int size, int out_size, int stride, int pad, int offset, int* lo, int* hi) {
  int x = pad - offset;
  *lo = x <= 0 ? 0 : std::min(out_size, (x + stride - 1) / stride);
  int y = size - 1 + pad - offset;
  *hi = y < 0 ? 0 : std::min(out_size, y / stride + 1);
  if (*hi < *lo) *hi = *lo;
}

// im2col of output columns [n0, n0 + nb) over all K rows, as panels of kNRi columns
// ([K][kNRi] each, panel p at dst + p * K * kNRi); lanes past nb are zero.
void im2colBlock(const std::int16_t* in, const ConvShape& s, const ConvParams& p, int n0, int nb,
                 std::int16_t* dst) {
  const int panels = (nb + kNRi - 1) / kNRi;
  std::memset(dst, 0, sizeof(std::int16_t) * static_cast<std::size_t>(panels) * s.k * kNRi);
  for (int k = 0; k < s.k; ++k) {
    const int c = k / (s.kh * s.kw), r = k % (s.kh * s.kw), ky = r / s.kw, kx = r % s.kw;
    const std::int16_t* plane = in + static_cast<std::size_t>(c) * s.h * s.w;
    int lo, hi;
    validRange(s.w, s.wo, p.sw, p.pl, kx * p.dw, &lo, &hi);
    for (int j = 0; j < nb;) {
      const int col = n0 + j, oy = col / s.wo, ox0 = col % s.wo;
      const int run = std::min(nb - j, s.wo - ox0);  // rest of this output row
      const int iy = oy * p.sh - p.pt + ky * p.dh;
      if (iy >= 0 && iy < s.h) {
        const std::int16_t* row = plane + static_cast<std::size_t>(iy) * s.w - p.pl + kx * p.dw;
        const int a = std::max(ox0, lo), b = std::min(ox0 + run, hi);
        if (a < b) {
          int jj = j + a - ox0, lane = jj % kNRi;
          std::int16_t* o = dst + static_cast<std::size_t>(jj / kNRi) * s.k * kNRi +
                            static_cast<std::size_t>(k) * kNRi;
          for (int ox = a; ox < b; ++ox) {
            o[lane] = row[ox * p.sw];
            if (++lane == kNRi) {
              lane = 0;
              o += static_cast<std::size_t>(s.k) * kNRi;
            }
          }
        }
      }
      j += run;
    }
  }
}

// C[0:mr, 0:nr] of one kMRi x kNRi tile over the whole K: a = packed filter panel
// [K][kMRi], b = im2col panel [K][kNRi]; int32 sums, then the rescale.
void microKernel(int K, const std::int16_t* __restrict a, const std::int16_t* __restrict b,
                 float* __restrict c, int ldc, int mr, int nr, const float* f,
                 const float* bias) {
  vint acc[kMRi][2];
  for (int i = 0; i < kMRi; ++i) acc[i][0] = acc[i][1] = vint{};
  for (int k = 0; k < K; ++k) {
    const vint b0 = loadWiden(b), b1 = loadWiden(b + kVecI);
#pragma GCC unroll 16
    for (int i = 0; i < kMRi; ++i) {
      const int ai = a[i];
      acc[i][0] += ai * b0;
      acc[i][1] += ai * b1;
    }
    a += kMRi;
    b += kNRi;
  }
  alignas(64) std::int32_t tile[kMRi * kNRi];
  for (int i = 0; i < kMRi; ++i) {
    std::memcpy(tile + i * kNRi, &acc[i][0], sizeof(vint));
    std::memcpy(tile + i * kNRi + kVecI, &acc[i][1], sizeof(vint));
  }
  for (int i = 0; i < mr; ++i) {
    float* row = c + static_cast<std::size_t>(i) * ldc;
    for (int j = 0; j < nr; ++j) row[j] = rescale(tile[i * kNRi + j], f[i], bias[i]);
  }
}

void depthwiseInt8(PreparedOp& op, const ConvShape& s, float* out) {
  const ConvParams& p = op.desc.conv;
  const std::int8_t* filter = op.desc.consts[0]->q.data();
  const std::int16_t* in = int16s(op.qinput);
  const int planes = s.n * s.co;
#pragma omp parallel num_threads(op.threads)
  {
    std::vector<std::int32_t> acc(s.wo);
#pragma omp for schedule(static)
    for (int nc = 0; nc < planes; ++nc) {
      const int c = nc % s.co;
      const std::int16_t* src = in + static_cast<std::size_t>(nc) * s.h * s.w;
      float* dst = out + static_cast<std::size_t>(nc) * s.ho * s.wo;
      const std::int8_t* w = filter + static_cast<std::size_t>(c) * s.kh * s.kw;
      for (int oy = 0; oy < s.ho; ++oy) {
        std::fill(acc.begin(), acc.end(), 0);
        for (int ky = 0; ky < s.kh; ++ky) {
          const int iy = oy * p.sh - p.pt + ky * p.dh;
          if (iy < 0 || iy >= s.h) continue;
          const std::int16_t* irow = src + static_cast<std::size_t>(iy) * s.w;
          for (int kx = 0; kx < s.kw; ++kx) {
            const int wv = w[ky * s.kw + kx], off = kx * p.dw - p.pl;
            int lo, hi;
            validRange(s.w, s.wo, p.sw, p.pl, kx * p.dw, &lo, &hi);
            for (int ox = lo; ox < hi; ++ox) acc[ox] += wv * irow[ox * p.sw + off];
          }
        }
        float* orow = dst + static_cast<std::size_t>(oy) * s.wo;
        for (int ox = 0; ox < s.wo; ++ox) orow[ox] = rescale(acc[ox], op.rescale[c], op.bias[c]);
      }
    }
  }
}

}  // namespace

void prepareConvInt8(PreparedOp& op) {
  const ConvShape s = convShapeOf(op.desc);
  prepareRescale(op, s.co);
  op.qinput.resize(int16Floats(op.desc.inputs[0].elements()));
  op.depthwise = s.group == s.ci && s.group == s.co && s.group > 1;
  if (op.depthwise) return;
  // Filter q values packed per group as panels of kMRi rows: [K][kMRi] int16, rows past
  // cog zero.
  const std::int8_t* q = op.desc.consts[0]->q.data();
  const int mpanels = (s.cog + kMRi - 1) / kMRi;
  const std::size_t per_group = static_cast<std::size_t>(mpanels) * kMRi * s.k;
  op.qweights.assign(per_group * s.group, 0);
  for (int g = 0; g < s.group; ++g) {
    std::int16_t* dst = op.qweights.data() + g * per_group;
    for (int m = 0; m < s.cog; ++m) {
      const std::int8_t* row = q + (static_cast<std::size_t>(g) * s.cog + m) * s.k;
      std::int16_t* panel = dst + static_cast<std::size_t>(m / kMRi) * kMRi * s.k;
      for (int k = 0; k < s.k; ++k) panel[static_cast<std::size_t>(k) * kMRi + m % kMRi] = row[k];
    }
  }
  // Column block: whole panels, as many as fit the budget (at least one).
  const std::size_t panel_bytes = sizeof(std::int16_t) * static_cast<std::size_t>(s.k) * kNRi;
  op.block_panels = static_cast<int>(std::max<std::size_t>(1, kBlockBytes / panel_bytes));
  op.qscratch.resize(
      int16Floats(static_cast<std::size_t>(op.threads) * op.block_panels * s.k * kNRi));
  // The packed panels, rescale factors and bias are all the kernel reads: the filter's
  // values and q codes go (an int8 session holds its weights once, as int16 panels).
  stripConstData(op.desc);
}

void convForwardInt8(PreparedOp& op, const float* in, float* out) {
  const ConvShape s = convShapeOf(op.desc);
  quantizeInput(op, in, op.desc.inputs[0].elements());
  if (op.depthwise) {
    depthwiseInt8(op, s, out);
    return;
  }
  const int cols = s.ho * s.wo;
  const int panels = (cols + kNRi - 1) / kNRi;
  const int blocks = (panels + op.block_panels - 1) / op.block_panels;
  const int mpanels = (s.cog + kMRi - 1) / kMRi;
  const std::size_t per_group = static_cast<std::size_t>(mpanels) * kMRi * s.k;
  const std::size_t slab = static_cast<std::size_t>(op.block_panels) * s.k * kNRi;
  const int tasks = s.n * s.group * blocks;
#pragma omp parallel num_threads(op.threads)
  {
    std::int16_t* b = int16s(op.qscratch) + slab * omp_get_thread_num();
#pragma omp for schedule(dynamic, 1)
    for (int t = 0; t < tasks; ++t) {
      const int blk = t % blocks, g = (t / blocks) % s.group, n = t / blocks / s.group;
      const std::int16_t* src =
          int16s(op.qinput) + (static_cast<std::size_t>(n) * s.ci + g * s.cig) * s.h * s.w;
      float* dst = out + (static_cast<std::size_t>(n) * s.co + g * s.cog) * cols;
      const int n0 = blk * op.block_panels * kNRi;
      const int nb = std::min(cols - n0, op.block_panels * kNRi);
      im2colBlock(src, s, op.desc.conv, n0, nb, b);
      const std::int16_t* a = op.qweights.data() + g * per_group;
      for (int j0 = 0; j0 < nb; j0 += kNRi) {
        const std::int16_t* bp = b + static_cast<std::size_t>(j0 / kNRi) * s.k * kNRi;
        for (int m0 = 0; m0 < s.cog; m0 += kMRi) {
          const int c0 = g * s.cog + m0;
          microKernel(s.k, a + static_cast<std::size_t>(m0) * s.k, bp,
                      dst + static_cast<std::size_t>(m0) * cols + n0 + j0, cols,
                      std::min(kMRi, s.cog - m0), std::min(kNRi, nb - j0),
                      op.rescale.data() + c0, op.bias.data() + c0);
        }
      }
    }
  }
}

void prepareMlpInt8(PreparedOp& op) {
  const OpDesc& d = op.desc;
  const int co = d.consts[0]->dims[0];
  prepareRescale(op, co);
  const std::vector<std::int8_t>& q = d.consts[0]->q;
  op.qweights.assign(q.begin(), q.end());
  op.qinput.resize(int16Floats(d.inputs[0].elements()));
  stripConstData(op.desc);  // as prepareConvInt8
}

void mlpForwardInt8(PreparedOp& op, const float* in, float* out) {
  const OpDesc& d = op.desc;
  const int n = d.inputs[0].dims[0];
  const int k = static_cast<int>(d.inputs[0].elements() / n);
  const int co = d.consts[0]->dims[0];
  quantizeInput(op, in, d.inputs[0].elements());
  const std::int16_t* x = int16s(op.qinput);
  const std::int16_t* w = op.qweights.data();
#pragma omp parallel for schedule(static) num_threads(op.threads)
  for (int o = 0; o < co; ++o) {
    const std::int16_t* wrow = w + static_cast<std::size_t>(o) * k;
    for (int b = 0; b < n; ++b) {
      const std::int16_t* xrow = x + static_cast<std::size_t>(b) * k;
      std::int32_t acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int i = 0; i < k; ++i) acc += static_cast<std::int32_t>(xrow[i]) * wrow[i];
      out[static_cast<std::size_t>(b) * co + o] = rescale(acc, op.rescale[o], op.bias[o]);
    }
  }
}

}  // namespace pz_sdk
