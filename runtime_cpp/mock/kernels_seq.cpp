// Kernels of the sequence-model ops: BatchDot, LayerNorm, LogSoftmax, the reductions and the
// unary element-wise ops (Sqrt, Rsqrt, Power, Erf, Gelu, Exp, Log, Abs, Neg). Reductions accumulate in double, as pooling does, so a
// long dot product or a row of large values is exact to the one rounding to float.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "kernels.h"
#include "numerics.h"

namespace pz_mock {
namespace {

// Row-major strides of `dims` right-aligned to `rank` axes, 0 on a broadcast (size 1) axis.
std::vector<std::size_t> broadcastStrides(const Dims& dims, std::size_t rank,
                                          const Dims& full) {
  std::vector<std::size_t> strides(rank, 0);
  std::size_t stride = 1;
  for (std::size_t i = dims.size(); i-- > 0;) {
    const std::size_t axis = rank - dims.size() + i;
    strides[axis] = dims[i] == 1 && full[axis] != 1 ? 0 : stride;
    stride *= dims[i];
  }
  return strides;
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

void batchDotForward(const OpDesc& d, const float* a, const float* b, float* out,
                     int threads) {
  const Dims &da = d.inputs[0].dims, &db = d.inputs[1].dims, &dout = d.outputs[0].dims;
  const std::size_t rank = dout.size(), ra = da.size();
  const int m = dout[rank - 2], n = dout[rank - 1];
  const int k = d.trans_a ? da[ra - 2] : da[ra - 1];
  const Dims batch(dout.begin(), dout.end() - 2);
  const std::vector<std::size_t> sa =
      broadcastStrides(Dims(da.begin(), da.end() - 2), batch.size(), batch);
  const std::vector<std::size_t> sb =
      broadcastStrides(Dims(db.begin(), db.end() - 2), batch.size(), batch);
  const std::size_t batches = elementCount(batch), mat_a = static_cast<std::size_t>(m) * k,
                    mat_b = static_cast<std::size_t>(k) * n;
  // A[i, l] and B[l, j] in the stored layouts.
  const std::size_t a_row = d.trans_a ? 1 : k, a_col = d.trans_a ? m : 1;
  const std::size_t b_row = d.trans_b ? 1 : n, b_col = d.trans_b ? k : 1;
  const long long tasks = static_cast<long long>(batches) * m;
#pragma omp parallel num_threads(threads)
  {
    std::vector<double> acc(n);
#pragma omp for schedule(static)
    for (long long t = 0; t < tasks; ++t) {
      const std::size_t bi = t / m, i = t % m;
      std::size_t oa = 0, ob = 0, rest = bi;
      for (std::size_t ax = batch.size(); ax-- > 0;) {
        const std::size_t idx = rest % batch[ax];
        rest /= batch[ax];
        oa += idx * sa[ax];
        ob += idx * sb[ax];
      }
      const float* pa = a + oa * mat_a + i * a_row;
      const float* pb = b + ob * mat_b;
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int l = 0; l < k; ++l) {
        const double x = pa[l * a_col];
        const float* brow = pb + l * b_row;
        for (int j = 0; j < n; ++j) acc[j] += x * brow[j * b_col];
      }
      float* y = out + t * static_cast<std::size_t>(n);
      for (int j = 0; j < n; ++j) y[j] = static_cast<float>(acc[j]);
    }
  }
}

void layerNormForward(const OpDesc& d, const float* in, float* out, int threads) {
  const Dims& dims = d.inputs[0].dims;
  const std::size_t len = elementCount(Dims(dims.begin() + d.axis, dims.end()));
  const long long rows = static_cast<long long>(d.inputs[0].elements() / len);
  const std::vector<float>& scale = d.consts[0]->data;
  const float* bias = d.consts.size() > 1 && d.consts[1] ? d.consts[1]->data.data() : nullptr;
  const double eps = d.eps;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long r = 0; r < rows; ++r) {
    const float* x = in + r * len;
    float* y = out + r * len;
    // Two passes in double: the mean, then the mean squared deviation (no E[x^2] - E[x]^2
    // cancellation for rows with a large mean).
    double sum = 0.0;
    for (std::size_t i = 0; i < len; ++i) sum += x[i];
    const double mean = sum / static_cast<double>(len);
    double sq = 0.0;
    for (std::size_t i = 0; i < len; ++i) {
      const double dev = x[i] - mean;
      sq += dev * dev;
    }
    const double inv = 1.0 / std::sqrt(sq / static_cast<double>(len) + eps);
    for (std::size_t i = 0; i < len; ++i)
      y[i] = static_cast<float>((x[i] - mean) * inv * scale[i] + (bias ? bias[i] : 0.0));
  }
}

void logSoftmaxForward(const OpDesc& d, const float* in, float* out, int threads) {
  const Dims& dims = d.inputs[0].dims;
  std::size_t outer = 1, inner = 1;
  const std::size_t len = static_cast<std::size_t>(dims[d.axis]);
  for (int a = 0; a < d.axis; ++a) outer *= static_cast<std::size_t>(dims[a]);
  for (std::size_t a = d.axis + 1; a < dims.size(); ++a) inner *= static_cast<std::size_t>(dims[a]);
  const long long columns = static_cast<long long>(outer * inner);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long c = 0; c < columns; ++c) {
    const std::size_t o = c / inner, i = c % inner;
    const float* x = in + o * len * inner + i;
    float* y = out + o * len * inner + i;
    // Max-subtracted: exp never overflows and the largest term is exactly 1, so the log of
    // the sum (in double) is >= 0 and no small probability becomes log(0).
    float mx = -std::numeric_limits<float>::infinity();
    for (std::size_t l = 0; l < len; ++l) mx = std::max(mx, x[l * inner]);
    double sum = 0.0;
    for (std::size_t l = 0; l < len; ++l) sum += std::exp(static_cast<double>(x[l * inner]) - mx);
    const double shift = static_cast<double>(mx) + std::log(sum);
    for (std::size_t l = 0; l < len; ++l)
      y[l * inner] = static_cast<float>(static_cast<double>(x[l * inner]) - shift);
  }
}

void reduceForward(const OpDesc& d, const float* in, float* out, int threads) {
  const Dims& dims = d.inputs[0].dims;
  const std::size_t rank = dims.size();
  std::vector<std::size_t> stride(rank, 1);
  for (std::size_t a = rank; a-- > 1;) stride[a - 1] = stride[a] * dims[a];
  std::vector<bool> reduced(rank, false);
  for (int a : d.axes) reduced[a] = true;
  // Offsets of the reduced block (one per reduced element) and of each output's first input
  // element: out[o] reduces in[base[o] + block[r]] over r.
  std::vector<std::size_t> block{0}, base{0};
  for (std::size_t a = 0; a < rank; ++a) {
    std::vector<std::size_t>& v = reduced[a] ? block : base;
    std::vector<std::size_t> next;
    next.reserve(v.size() * dims[a]);
    for (std::size_t off : v)
      for (int k = 0; k < dims[a]; ++k) next.push_back(off + k * stride[a]);
    v.swap(next);
  }
  const long long outputs = static_cast<long long>(base.size());
  const std::size_t count = block.size();
  const ReduceFn fn = d.reduce;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long o = 0; o < outputs; ++o) {
    const float* x = in + base[o];
    double acc;
    if (fn == ReduceFn::kMax || fn == ReduceFn::kMin) {
      // nan propagates (as numpy's max and onnxruntime's ReduceMax do).
      float best = x[block[0]];
      for (std::size_t r = 1; r < count && !std::isnan(best); ++r) {
        const float v = x[block[r]];
        if (std::isnan(v) || (fn == ReduceFn::kMax ? v > best : v < best)) best = v;
      }
      acc = best;
    } else if (fn == ReduceFn::kProd) {
      acc = 1.0;
      for (std::size_t r = 0; r < count; ++r) acc *= x[block[r]];
    } else {
      // A long row sums in double: exact to the one rounding for 1e4 terms of any sign.
      acc = 0.0;
      for (std::size_t r = 0; r < count; ++r) acc += x[block[r]];
      if (fn == ReduceFn::kMean) acc /= static_cast<double>(count);
    }
    out[o] = static_cast<float>(acc);
  }
}

void unaryForward(const OpDesc& d, const float* in, float* out, int threads) {
  const long long n = static_cast<long long>(d.inputs[0].elements());
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long i = 0; i < n; ++i) out[i] = static_cast<float>(unary(d, in[i]));
}

}  // namespace pz_mock

namespace pz_mock {

void gatherV2Forward(const PreparedOp& prepared, const std::int32_t* index, void* out) {
  const OpDesc& op = prepared.desc;
  const TensorImpl& table = *op.consts.at(0);
  const Dims& dims = table.dims;
  const std::size_t axis = static_cast<std::size_t>(op.axis);
  std::size_t outer = 1, inner = 1;
  for (std::size_t a = 0; a < axis; ++a) outer *= static_cast<std::size_t>(dims[a]);
  for (std::size_t a = axis + 1; a < dims.size(); ++a) inner *= static_cast<std::size_t>(dims[a]);
  const std::int64_t rows = dims[axis];
  const std::size_t count = op.inputs[0].elements();
  for (std::size_t i = 0; i < count; ++i)
    if (index[i] < 0 || index[i] >= rows) throw OpDataError{CNML_STATUS_INVALIDPARAM};
  // The table's values are held decoded (exact for its dtype): a copy, rounded to fp16
  // without loss when the op computes in it.
  std::vector<float> gathered(outer * count * inner);
  for (std::size_t o = 0; o < outer; ++o)
    for (std::size_t i = 0; i < count; ++i)
      std::copy_n(&table.data[(o * static_cast<std::size_t>(rows) +
                               static_cast<std::size_t>(index[i])) * inner],
                  inner, &gathered[(o * count + i) * inner]);
  if (op.outputs[0].dtype == CNML_DATA_FLOAT16) {
    numerics::encodeHalf(gathered.data(), static_cast<std::uint16_t*>(out), gathered.size(), 1);
  } else {
    std::copy(gathered.begin(), gathered.end(), static_cast<float*>(out));
  }
}

}  // namespace pz_mock
