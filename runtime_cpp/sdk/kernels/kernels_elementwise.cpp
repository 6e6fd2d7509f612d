// Element-wise kernels: trivially parallel loops the compiler vectorises. The unary ops
// (Sqrt, Rsqrt, Power, Erf, Gelu, Exp, Log, Abs, Neg, ...) compute in double.
#include <algorithm>
#include <cmath>

#include "kernels.h"

namespace pz_sdk {
namespace {

struct AddFn {
  float operator()(float x, float y) const { return x + y; }
};
struct SubFn {
  float operator()(float x, float y) const { return x - y; }
};
struct MultFn {
  float operator()(float x, float y) const { return x * y; }
};
struct DivFn {
  float operator()(float x, float y) const { return x / y; }
};
// In double, then one rounding: powf's error grows with the exponent.
// Comparisons are IEEE's (false with a nan, but not-equal true); logic reads nonzero as true.
#define PZ_BOOL_FN(name, expr)                                        \
  struct name {                                                       \
    float operator()(float x, float y) const { return (expr) ? 1.0f : 0.0f; } \
  };
PZ_BOOL_FN(EqualFn, x == y)
PZ_BOOL_FN(NotEqualFn, x != y)
PZ_BOOL_FN(LessFn, x < y)
PZ_BOOL_FN(LessEqualFn, x <= y)
PZ_BOOL_FN(GreaterFn, x > y)
PZ_BOOL_FN(GreaterEqualFn, x >= y)
PZ_BOOL_FN(AndFn, x != 0.0f && y != 0.0f)
PZ_BOOL_FN(OrFn, x != 0.0f || y != 0.0f)
PZ_BOOL_FN(XorFn, (x != 0.0f) != (y != 0.0f))
#undef PZ_BOOL_FN
struct PowFn {
  float operator()(float x, float y) const {
    return static_cast<float>(std::pow(static_cast<double>(x), static_cast<double>(y)));
  }
};

// Floats per task of the broadcast row loop: large enough to amortise a row's b offset,
// small enough that one long row (a scalar-like b) still spreads over the threads.
constexpr long long kRowChunk = 1 << 14;

// a's axes with b's right-aligned to them, merged into runs: neighbouring axes merge when b
// is broadcast along both or along neither, and unit axes of a drop out. So [N, C, H, W]
// against a per-channel b [1, C, 1, 1] is {N: b broadcast, C: b varies, H*W: b broadcast},
// and [1, C, H, W] against [1, 1, H, W] is {C: b broadcast, H*W: b varies}.
struct Runs {
  long long size[kMaxDims] = {};
  bool b_broadcast[kMaxDims] = {};
  int count = 0;
};

Runs mergeRuns(const Dims& a, const Dims& b) {
  Runs r;
  const std::size_t lead = a.size() - b.size();
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (a[i] == 1) continue;
    const bool broadcast = i < lead || b[i - lead] == 1;
    if (r.count > 0 && r.b_broadcast[r.count - 1] == broadcast) {
      r.size[r.count - 1] *= a[i];
    } else {
      r.size[r.count] = a[i];
      r.b_broadcast[r.count] = broadcast;
      ++r.count;
    }
  }
  return r;
}

template <typename Fn>
void binaryLoop(Fn fn, const Dims& a_dims, const Dims& b_dims, const float* a, const float* b,
                float* out, int threads) {
  const long long n = static_cast<long long>(elementCount(a_dims));
  const Runs r = mergeRuns(a_dims, b_dims);
  if (r.count == 0 || (r.count == 1 && !r.b_broadcast[0])) {
    // Equal shapes (up to unit axes): one flat loop.
    parallelRanges(n, threads, [&](long long begin, long long end) {
#pragma omp simd
      for (long long i = begin; i < end; ++i) out[i] = fn(a[i], b[i]);
    });
    return;
  }
  if (r.count == 1) {
    // Scalar-like b ([1, 1, 1, 1], [1], ...): one value against every element.
    const float bv = b[0];
    parallelRanges(n, threads, [&](long long begin, long long end) {
#pragma omp simd
      for (long long i = begin; i < end; ++i) out[i] = fn(a[i], bv);
    });
    return;
  }
  // Rows of the innermost run, each against one b value (per-channel b: the run is H*W) or
  // against a contiguous b row (b broadcast along outer axes only). A row's b offset comes
  // from its index over the outer runs, with stride 0 where b is broadcast; this covers
  // every broadcast (the general strided case) with contiguous, vectorised inner loops.
  const int last = r.count - 1;
  const long long inner = r.size[last];
  const bool inner_broadcast = r.b_broadcast[last];
  long long b_stride[kMaxDims] = {};
  long long step = inner_broadcast ? 1 : inner;
  for (int k = last - 1; k >= 0; --k) {
    if (r.b_broadcast[k]) continue;
    b_stride[k] = step;
    step *= r.size[k];
  }
  const long long rows = n / inner;
  const long long chunks = (inner + kRowChunk - 1) / kRowChunk;
  const long long tasks = rows * chunks;
  parallelFor(tasks, threads, [&](long long t) {
    const long long row = t / chunks;
    const long long j0 = (t % chunks) * kRowChunk, j1 = std::min(inner, j0 + kRowChunk);
    long long rest = row, b_offset = 0;
    for (int k = last - 1; k >= 0; --k) {
      b_offset += (rest % r.size[k]) * b_stride[k];
      rest /= r.size[k];
    }
    const float* x = a + row * inner;
    float* y = out + row * inner;
    if (inner_broadcast) {
      const float bv = b[b_offset];
#pragma omp simd
      for (long long j = j0; j < j1; ++j) y[j] = fn(x[j], bv);
    } else {
      const float* bb = b + b_offset;
#pragma omp simd
      for (long long j = j0; j < j1; ++j) y[j] = fn(x[j], bb[j]);
    }
  });
}


double unary(const OpDesc& d, double x) {
  const double power = d.power;
  switch (d.unary) {
    case UnaryFn::kSqrt: return std::sqrt(x);
    case UnaryFn::kRsqrt: return 1.0 / std::sqrt(x);
    case UnaryFn::kPower: return power == 2.0 ? x * x : std::pow(x, power);
    case UnaryFn::kErf: return std::erf(x);
    // erfc keeps the far negative tail (1 + erf(x) cancels to 0 there).
    case UnaryFn::kGelu: return 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    case UnaryFn::kGeluTanh: {
      // 1 + tanh(u) = 2 / (1 + exp(-2u)), without the cancellation for u << 0.
      const double u = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
      return x / (1.0 + std::exp(-2.0 * u));
    }
    case UnaryFn::kExp: return std::exp(x);
    case UnaryFn::kLog: return std::log(x);
    case UnaryFn::kAbs: return std::fabs(x);
    case UnaryFn::kNeg: return -x;
    case UnaryFn::kNot: return x == 0.0 ? 1.0 : 0.0;
    case UnaryFn::kSin: return std::sin(x);
    case UnaryFn::kCos: return std::cos(x);
    case UnaryFn::kClip: {  // ONNX's min(max(x, lower), upper): nan stays nan
      const double t = x < d.lower ? d.lower : x;
      return t > d.upper ? d.upper : t;
    }
  }
  return x;
}

}  // namespace

void activeForward(cnmlActiveFunction_t fn, const float* in, float* out, std::size_t n,
                   int threads) {
  const long long count = static_cast<long long>(n);
  // Named bounds, not literals: std::max(x, 0.0f) binds a reference to a temporary, which
  // GCC's omp simd lowering turns into a per-lane array it then will not vectorise (the
  // ReLU ran scalar, a branch per element, slower than the sigmoid). Same results.
  const float zero = 0.0f, one = 1.0f, six = 6.0f, slope = 0.2f, half = 0.5f;
  switch (fn) {
    case CNML_ACTIVE_RELU:
      parallelRanges(count, threads, [&](long long begin, long long end) {
#pragma omp simd
        for (long long i = begin; i < end; ++i) out[i] = std::max(in[i], zero);
      });
      break;
    case CNML_ACTIVE_RELU6:
      parallelRanges(count, threads, [&](long long begin, long long end) {
#pragma omp simd
        for (long long i = begin; i < end; ++i) out[i] = std::min(std::max(in[i], zero), six);
      });
      break;
    case CNML_ACTIVE_RELU1:
      parallelRanges(count, threads, [&](long long begin, long long end) {
#pragma omp simd
        for (long long i = begin; i < end; ++i) out[i] = std::min(std::max(in[i], zero), one);
      });
      break;
    case CNML_ACTIVE_HARD_SIGMOID:
      parallelRanges(count, threads, [&](long long begin, long long end) {
#pragma omp simd
        for (long long i = begin; i < end; ++i)
          out[i] = std::min(std::max(slope * in[i] + half, zero), one);
      });
      break;
    case CNML_ACTIVE_SIGMOID:
      parallelFor(count, threads, [&](long long i) { out[i] = 1.0f / (1.0f + std::exp(-in[i])); });
      break;
    case CNML_ACTIVE_TANH:
      parallelFor(count, threads, [&](long long i) { out[i] = std::tanh(in[i]); });
      break;
    case CNML_ACTIVE_NONE:
      if (out != in) copyForward(in, out, n, threads);
      break;
  }
}

void addForward(const float* a, const float* b, float* out, std::size_t n, int threads) {
  parallelRanges(static_cast<long long>(n), threads, [&](long long begin, long long end) {
#pragma omp simd
    for (long long i = begin; i < end; ++i) out[i] = a[i] + b[i];
  });
}

void binaryForward(const OpDesc& d, const float* a, const float* b, float* out, int threads) {
  const Dims& ad = d.inputs[0].dims;
  const Dims& bd = d.inputs[1].dims;
  switch (d.binary) {
    case BinaryOp::kAdd: binaryLoop(AddFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kSub: binaryLoop(SubFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kMult: binaryLoop(MultFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kRealDiv: binaryLoop(DivFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kPow: binaryLoop(PowFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kEqual: binaryLoop(EqualFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kNotEqual: binaryLoop(NotEqualFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kLess: binaryLoop(LessFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kLessEqual: binaryLoop(LessEqualFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kGreater: binaryLoop(GreaterFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kGreaterEqual:
      binaryLoop(GreaterEqualFn{}, ad, bd, a, b, out, threads);
      break;
    case BinaryOp::kAnd: binaryLoop(AndFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kOr: binaryLoop(OrFn{}, ad, bd, a, b, out, threads); break;
    case BinaryOp::kXor: binaryLoop(XorFn{}, ad, bd, a, b, out, threads); break;
  }
}

void preluForward(const OpDesc& d, const float* in, float* out, int threads) {
  const Dims& dims = d.inputs[0].dims;
  const int n = dims[0], c = dims[1];
  const long long spatial =
      static_cast<long long>(d.inputs[0].elements() / (static_cast<std::size_t>(n) * c));
  const std::vector<float>& slope = d.consts[0]->data;
  const bool shared = slope.size() == 1;
  parallelFor(static_cast<long long>(n) * c, threads, [&](long long pl) {
    const float s = slope[shared ? 0 : pl % c];
    const float* x = in + pl * spatial;
    float* y = out + pl * spatial;
#pragma omp simd
    for (long long i = 0; i < spatial; ++i) y[i] = x[i] >= 0.0f ? x[i] : s * x[i];
  });
}

void unaryForward(const OpDesc& d, const float* in, float* out, int threads) {
  const long long n = static_cast<long long>(d.inputs[0].elements());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long i = 0; i < n; ++i) out[i] = static_cast<float>(unary(d, in[i]));
}

}  // namespace pz_sdk
