// Depthwise convolution (group == ci == co > 1): too little reuse for the GEMM, so a direct
// kernel. Its numbers are pinned by the float64-truth tests, so every output is the same
// sequence of roundings as in the first, row-at-a-time version of this kernel: a float sum
// from +0 over the taps in (ky, kx) order, each step `acc += w * x` as one FMA on targets
// that have it (madd below), taps outside the input skipped, then `+ bias`. Skipping is
// not adding a zero product: an inf weight would make that nan, and a -0 sum (an FMA
// rounding a tiny negative product) would turn +0. Speed comes only from which outputs
// advance together: vectors of neighbouring columns whose whole window is inside the row,
// and several of them (or several edge outputs) at once as independent FMA chains.
#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "kernels.h"
#include "kernels_conv_depthwise.h"

namespace pz_sdk {
namespace {

typedef float v16 __attribute__((vector_size(16 * sizeof(float))));
typedef float v8 __attribute__((vector_size(8 * sizeof(float))));
typedef float v4 __attribute__((vector_size(4 * sizeof(float))));

template <typename V>
inline V load(const float* p) {
  V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename V>
inline void store(float* p, V v) {
  std::memcpy(p, &v, sizeof v);
}

// acc + w * x rounded as the pinned numbers have it: they come from `acc += w * x`, which
// GCC contracts to one FMA in C++ by default wherever the target has a fast one. Left to
// the compiler here, some paths (the short vector blocks) came out as a product and a sum,
// so the FMA is spelt out; without a fast FMA nothing is contracted, and neither is this.
#ifdef __FP_FAST_FMAF
inline float madd(float acc, float w, float x) { return __builtin_fmaf(w, x, acc); }
template <typename V>
inline V madd(V acc, float w, V x) {
  V r;
  for (int i = 0; i < static_cast<int>(sizeof(V) / sizeof(float)); ++i)
    r[i] = __builtin_fmaf(w, x[i], acc[i]);
  return r;
}
#else
template <typename T>
inline T madd(T acc, float w, T x) {
  return acc + w * x;
}
#endif

// Where tap kx reads for output column ox: input column ox * sw + off, off = kx * dw - pl,
// valid for ox in [lo[kx], hi[kx]). With stride sw > 1 the kernel reads a copy of the
// plane split into sw phases (phase r holds columns r, r + sw, ...), where that column is
// element ox + q of phase r's row (off = q * sw + r, 0 <= r < sw): contiguous in ox, hence
// vector loads. In that copy ([h][sw][pw], the plane itself when sw == 1), output (oy, ox)
// reads tap t = (ky, kx) at row_base(oy) + ox + tap_offset[t], with
// row_base(oy) = (oy * sh - pt) * sw * pw.
struct Geometry {
  int sw, phase_width;
  std::vector<int> lo, hi;
  std::vector<long> tap_offset;  // per tap, ky-major
  int inner_lo, inner_hi;        // columns whose every kx is valid
};

Geometry geometryOf(const ConvParams& p, const ConvShape& s) {
  Geometry g;
  g.sw = p.sw;
  g.phase_width = (s.w + p.sw - 1) / p.sw;
  g.inner_lo = 0;
  g.inner_hi = s.wo;
  std::vector<int> r, q;
  for (int kx = 0; kx < s.kw; ++kx) {
    const int off = kx * p.dw - p.pl;
    // Output columns whose input column lies in [0, w).
    const int first = p.pl - kx * p.dw, last = s.w - 1 + p.pl - kx * p.dw;
    int lo = first <= 0 ? 0 : std::min(s.wo, (first + p.sw - 1) / p.sw);
    int hi = last < 0 ? 0 : std::min(s.wo, last / p.sw + 1);
    hi = std::max(hi, lo);
    g.lo.push_back(lo);
    g.hi.push_back(hi);
    r.push_back(((off % p.sw) + p.sw) % p.sw);
    q.push_back((off - r.back()) / p.sw);
    g.inner_lo = std::max(g.inner_lo, lo);
    g.inner_hi = std::min(g.inner_hi, hi);
  }
  g.inner_hi = std::max(g.inner_hi, g.inner_lo);
  for (int ky = 0; ky < s.kh; ++ky)
    for (int kx = 0; kx < s.kw; ++kx)
      g.tap_offset.push_back((static_cast<long>(ky) * p.dh * p.sw + r[kx]) * g.phase_width +
                             q[kx]);
  return g;
}

// One plane's work: its input (and phase copy), weights and bias.
struct Plane {
  const float* in;      // [h][w]
  const float* phases;  // [h][sw][phase_width]; `in` itself when sw == 1
  const float* w;       // [kh][kw]
  float bias;
};

// The taps [ky_lo, ky_hi) of output row oy that lie inside the input.
void validRows(const ConvShape& s, const ConvParams& p, int oy, int* ky_lo, int* ky_hi) {
  const int iy0 = oy * p.sh - p.pt;
  *ky_lo = iy0 >= 0 ? 0 : std::min(s.kh, (-iy0 + p.dh - 1) / p.dh);
  *ky_hi = iy0 > s.h - 1 ? 0 : std::min(s.kh, (s.h - 1 - iy0) / p.dh + 1);
  *ky_hi = std::max(*ky_hi, *ky_lo);
}

// Outputs advanced together (up to kMaxChains): U vectors of V columns (V = float: single
// columns) whose taps are the same ranges of ky and kx, each an independent FMA chain, so
// the FMA latency is paid once per tap rather than once per tap and output.
constexpr int kMaxChains = 8;
struct Chains {
  int count = 0, ky_lo = 0, ky_hi = 0, kx_lo = 0, kx_hi = 0;
  long at[kMaxChains];  // row_base + first column, in the phase copy
  float* dst[kMaxChains];
};

template <typename V, int U>
void advance(const Plane& pl, const ConvShape& s, const Geometry& g, const Chains& c) {
  // Unrolled so the accumulators live in registers.
  V acc[U];
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) acc[u] = V{};
  for (int ky = c.ky_lo; ky < c.ky_hi; ++ky) {
    for (int t = ky * s.kw + c.kx_lo; t < ky * s.kw + c.kx_hi; ++t) {
      const float wv = pl.w[t];
      const long off = g.tap_offset[t];  // may be negative; off + at never is
#pragma GCC unroll 8
      for (int u = 0; u < U; ++u)
        acc[u] = madd(acc[u], wv, load<V>(pl.phases + (c.at[u] + off)));
    }
  }
#pragma GCC unroll 8
  for (int u = 0; u < U; ++u) store(c.dst[u], acc[u] + pl.bias);
}

template <typename V>
class Collector {
 public:
  Collector(const Plane& pl, const ConvShape& s, const Geometry& g) : pl_(pl), s_(s), g_(g) {}
  ~Collector() { flush(); }

  void add(int ky_lo, int ky_hi, int kx_lo, int kx_hi, long at, float* dst) {
    if (c_.count > 0 && (ky_lo != c_.ky_lo || ky_hi != c_.ky_hi || kx_lo != c_.kx_lo ||
                         kx_hi != c_.kx_hi))
      flush();
    c_.ky_lo = ky_lo;
    c_.ky_hi = ky_hi;
    c_.kx_lo = kx_lo;
    c_.kx_hi = kx_hi;
    c_.at[c_.count] = at;
    c_.dst[c_.count] = dst;
    if (++c_.count == kMaxChains) flush();
  }

 private:
  void flush() {
    switch (c_.count) {
      case 1: advance<V, 1>(pl_, s_, g_, c_); break;
      case 2: advance<V, 2>(pl_, s_, g_, c_); break;
      case 3: advance<V, 3>(pl_, s_, g_, c_); break;
      case 4: advance<V, 4>(pl_, s_, g_, c_); break;
      case 5: advance<V, 5>(pl_, s_, g_, c_); break;
      case 6: advance<V, 6>(pl_, s_, g_, c_); break;
      case 7: advance<V, 7>(pl_, s_, g_, c_); break;
      case 8: advance<V, 8>(pl_, s_, g_, c_); break;
      default: break;
    }
    c_.count = 0;
  }

  const Plane& pl_;
  const ConvShape& s_;
  const Geometry& g_;
  Chains c_;
};

long rowBase(const ConvParams& p, const Geometry& g, int oy) {
  return static_cast<long>(oy * p.sh - p.pt) * g.sw * g.phase_width;
}

// Columns [a, b), each of whose taps is valid, in vectors of V; a row's last vector moves
// back to end at b (its overlap is recomputed to the same values).
template <typename V>
void interior(const Plane& pl, const ConvShape& s, const ConvParams& p, const Geometry& g,
              int a, int b, float* out) {
  constexpr int kLanes = sizeof(V) / sizeof(float);
  Collector<V> chains(pl, s, g);
  for (int oy = 0; oy < s.ho; ++oy) {
    int ky_lo, ky_hi;
    validRows(s, p, oy, &ky_lo, &ky_hi);
    for (int x = a; x < b; x += kLanes) {
      const int x0 = std::min(x, b - kLanes);
      chains.add(ky_lo, ky_hi, 0, s.kw, rowBase(p, g, oy) + x0,
                 out + static_cast<std::size_t>(oy) * s.wo + x0);
    }
  }
}

// Column ox one output at a time, over its valid kx (a contiguous range: the input column
// grows with kx).
void column(const Plane& pl, const ConvShape& s, const ConvParams& p, const Geometry& g,
            int ox, float* out) {
  int kx_lo = 0, kx_hi = 0;
  for (int kx = 0; kx < s.kw; ++kx) {
    if (ox < g.lo[kx] || ox >= g.hi[kx]) continue;
    if (kx_hi == 0) kx_lo = kx;
    kx_hi = kx + 1;
  }
  Collector<float> chains(pl, s, g);
  for (int oy = 0; oy < s.ho; ++oy) {
    int ky_lo, ky_hi;
    validRows(s, p, oy, &ky_lo, &ky_hi);
    chains.add(ky_lo, ky_hi, kx_lo, kx_hi, rowBase(p, g, oy) + ox,
               out + static_cast<std::size_t>(oy) * s.wo + ox);
  }
}

void planeForward(const Plane& pl, const ConvShape& s, const ConvParams& p, const Geometry& g,
                  float* out) {
  int a = g.inner_lo, b = g.inner_hi;
  if (b - a >= 16) {
    interior<v16>(pl, s, p, g, a, b, out);
  } else if (b - a >= 8) {
    interior<v8>(pl, s, p, g, a, b, out);
  } else if (b - a >= 4) {
    interior<v4>(pl, s, p, g, a, b, out);
  } else {
    a = b = 0;  // too narrow for vectors: every column on its own
  }
  for (int ox = 0; ox < a; ++ox) column(pl, s, p, g, ox, out);
  for (int ox = b; ox < s.wo; ++ox) column(pl, s, p, g, ox, out);
}

// Splits each input row into its sw phases.
void splitPhases(const float* in, const ConvShape& s, const Geometry& g, float* dst) {
  for (int iy = 0; iy < s.h; ++iy) {
    const float* row = in + static_cast<std::size_t>(iy) * s.w;
    float* prow = dst + static_cast<std::size_t>(iy) * g.sw * g.phase_width;
    for (int r = 0; r < g.sw; ++r)
      for (int j = 0; j * g.sw + r < s.w; ++j) prow[r * g.phase_width + j] = row[j * g.sw + r];
  }
}

std::size_t phaseFloats(const ConvParams& p, const ConvShape& s) {
  return p.sw == 1 ? 0
                   : static_cast<std::size_t>(s.h) * p.sw * ((s.w + p.sw - 1) / p.sw);
}

}  // namespace

void prepareDepthwise(PreparedOp& op) {
  op.scratch.resize(phaseFloats(op.desc.conv, convShapeOf(op.desc)) * op.threads);
}

void depthwiseForward(PreparedOp& op, const float* in, float* out) {
  const OpDesc& d = op.desc;
  const ConvParams& p = d.conv;
  const ConvShape s = convShapeOf(d);
  const Geometry g = geometryOf(p, s);
  const float* filter = d.consts[0]->data.data();
  const std::size_t per_thread = phaseFloats(p, s);
  const int planes = s.n * s.co;
#pragma omp parallel num_threads(op.threads)
  {
    float* phases = op.scratch.data() + per_thread * omp_get_thread_num();
#pragma omp for schedule(static)
    for (int nc = 0; nc < planes; ++nc) {
      const int c = nc % s.co;
      Plane pl;
      pl.in = in + static_cast<std::size_t>(nc) * s.h * s.w;
      pl.w = filter + static_cast<std::size_t>(c) * s.kh * s.kw;
      pl.bias = op.bias[c];
      pl.phases = pl.in;
      if (p.sw > 1) {
        splitPhases(pl.in, s, g, phases);
        pl.phases = phases;
      }
      planeForward(pl, s, p, g, out + static_cast<std::size_t>(nc) * s.ho * s.wo);
    }
  }
}

}  // namespace pz_sdk
