#include "sparse.h"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace pz_sdk {
namespace onednn {
namespace {

// Where the pair kernel beats oneDNN's dense inner product, measured on 2 cores
// (benchmarks/sparse_kernels.py, benchmarks/results/sparse.md): its time grows with the kept
// pair columns times the batch (a gather per input row), oneDNN's with the filter's bytes
// up to a few rows. A filter of 16 MB or more takes it while kept fraction x batch is at
// most 0.5 (25088x4096 at batch 1: 1.1x at half the pairs zero, 2.8x at 80%), a smaller one,
// which oneDNN reads from cache, at most 0.2 (1024x1000 at batch 1 and 80%: 1.3x).
constexpr double kLargeFilterBytes = 16.0 * (1 << 20);
constexpr double kKeptRowsLarge = 0.5;
constexpr double kKeptRowsSmall = 0.2;
// A 1x1 convolution takes its kernel while at most 0.2 of its pairs' columns are kept, on
// planes of 128 values or more, 0.1 on smaller ones (benchmarks/sparse_kernels.py --conv:
// at 80% zero pairs 1.3-2.8x on ResNet-50's and MobileNetV2's 1x1 shapes at 14x14 to 56x56,
// 0.84x at 7x7; at 67% up to 2.0x, and as low as 0.6x).
constexpr double kConvKeptLargePlane = 0.2;
constexpr double kConvKeptSmallPlane = 0.1;
constexpr long long kLargePlane = 128;

// A filter kept as pairs of output rows (2i, 2i+1: the pairs the sparse mode skips; an odd
// last row pairs with zeros): per pair, the input columns where either row is non-zero, with
// both rows' values there, and the bias.
class PairRows {
 public:
  PairRows(const TensorImpl& filter, const TensorImpl* bias) {
    rows_ = filter.dims[0];
    const std::size_t k = filter.data.size() / static_cast<std::size_t>(rows_);
    const float* w = filter.data.data();
    const int pairs = (rows_ + 1) / 2;
    start_.reserve(static_cast<std::size_t>(pairs) + 1);
    start_.push_back(0);
    for (int i = 0; i < pairs; ++i) {
      const float* r0 = w + static_cast<std::size_t>(2 * i) * k;
      const float* r1 = 2 * i + 1 < rows_ ? r0 + k : nullptr;
      for (std::size_t j = 0; j < k; ++j) {
        const float a = r0[j], b = r1 ? r1[j] : 0.0f;
        if (a == 0.0f && b == 0.0f) continue;
        column_.push_back(static_cast<std::int32_t>(j));
        first_.push_back(a);
        second_.push_back(b);
      }
      start_.push_back(column_.size());
    }
    bias_.assign(static_cast<std::size_t>(rows_) + 1, 0.0f);  // + 1: an odd last pair's
    if (bias != nullptr) std::copy(bias->data.begin(), bias->data.end(), bias_.begin());
    columns_ = k;
  }
  int rows() const { return rows_; }
  int count() const { return static_cast<int>(start_.size()) - 1; }
  std::size_t begin(int i) const { return start_[i]; }
  std::size_t end(int i) const { return start_[i + 1]; }
  std::int32_t column(std::size_t p) const { return column_[p]; }
  float first(std::size_t p) const { return first_[p]; }
  float second(std::size_t p) const { return second_[p]; }
  float bias(int row) const { return bias_[row]; }
  const std::int32_t* columns() const { return column_.data(); }
  const float* firsts() const { return first_.data(); }
  const float* seconds() const { return second_.data(); }
  std::string keptText() const {
    const std::size_t all = static_cast<std::size_t>(count()) * columns_;
    return std::to_string(all ? 100 * column_.size() / all : 0) + "% of pair columns kept";
  }

 private:
  int rows_ = 0;
  std::size_t columns_ = 0;
  std::vector<std::size_t> start_;
  std::vector<std::int32_t> column_;
  std::vector<float> first_, second_;
  std::vector<float> bias_;
};

// A layer computed over its filter's pairs of rows by a kernel of the SDK's own (`kernel`
// names it in reports), on `threads` threads.
class PairRowsOp : public BackendOp {
 public:
  PairRowsOp(const OpDesc& d, int threads, const char* kernel)
      : pairs_(*d.consts[0], d.consts.size() > 1 ? d.consts[1].get() : nullptr),
        threads_(threads),
        kernel_(kernel) {}

  std::string describe() const override {
    return std::string(kernel_) + " (SDK kernel, " + pairs_.keptText() + ")";
  }

 protected:
  PairRows pairs_;
  int threads_;

 private:
  const char* kernel_;
};

class SparseMlpOp : public PairRowsOp {
 public:
  SparseMlpOp(const OpDesc& d, int threads) : PairRowsOp(d, threads, "sparse inner product") {
    batch_ = d.inputs[0].dims[0];
    k_ = static_cast<int>(d.inputs[0].elements() / static_cast<std::size_t>(batch_));
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const int pairs = pairs_.count();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (int i = 0; i < pairs; ++i)
      for (int b = 0; b < batch_;) {  // up to 8 input rows per pass over the pair's columns
        const int rows = batch_ - b;
        if (rows >= 8) {
          pairRows<8>(i, x, y, b);
          b += 8;
        } else if (rows >= 4) {
          pairRows<4>(i, x, y, b);
          b += 4;
        } else if (rows >= 2) {
          pairRows<2>(i, x, y, b);
          b += 2;
        } else {
          pairRows<1>(i, x, y, b);
          b += 1;
        }
      }
  }

 private:
  // GCC 12 warns that the intrinsics' internal _mm512_undefined_*() values are uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
  // Both rows of pair i against input rows b..b+R-1, written to y: the pair's kept columns
  // read once for the R rows, sixteen at a time (a gather of each row's x), the rest one by
  // one, in a fixed order (deterministic results).
  template <int R>
  void pairRows(int i, const float* x, float* y, int b) const {
    std::size_t p = pairs_.begin(i);
    const std::size_t end = pairs_.end(i);
    float s0[R] = {}, s1[R] = {};
    const float* in[R];
    for (int r = 0; r < R; ++r) in[r] = x + static_cast<std::size_t>(b + r) * k_;
#if defined(__AVX512F__)
    __m512 va[R], vb[R];
    for (int r = 0; r < R; ++r) va[r] = vb[r] = _mm512_setzero_ps();
    for (; p + 16 <= end; p += 16) {
      const __m512i idx = _mm512_loadu_si512(pairs_.columns() + p);
      const __m512 w0 = _mm512_loadu_ps(pairs_.firsts() + p);
      const __m512 w1 = _mm512_loadu_ps(pairs_.seconds() + p);
      for (int r = 0; r < R; ++r) {
        const __m512 xv = _mm512_i32gather_ps(idx, in[r], 4);
        va[r] = _mm512_fmadd_ps(w0, xv, va[r]);
        vb[r] = _mm512_fmadd_ps(w1, xv, vb[r]);
      }
    }
    for (int r = 0; r < R; ++r) {
      s0[r] = _mm512_reduce_add_ps(va[r]);
      s1[r] = _mm512_reduce_add_ps(vb[r]);
    }
#endif
    for (; p < end; ++p) {
      const std::int32_t j = pairs_.column(p);
      for (int r = 0; r < R; ++r) {
        s0[r] += pairs_.first(p) * in[r][j];
        s1[r] += pairs_.second(p) * in[r][j];
      }
    }
    const int co = pairs_.rows();
    for (int r = 0; r < R; ++r) {
      float* row = y + static_cast<std::size_t>(b + r) * co;
      row[2 * i] = s0[r] + pairs_.bias(2 * i);
      if (2 * i + 1 < co) row[2 * i + 1] = s1[r] + pairs_.bias(2 * i + 1);
    }
  }
#pragma GCC diagnostic pop

  int batch_ = 1, k_ = 0;
};

// A 1x1 convolution (stride 1, no pads, one group) in sparse mode: out[2i], out[2i+1]
// (planes of H x W) accumulate w * x[c] over the pair's kept input channels c, a tile of the
// plane at a time, so a kept weight costs two multiply-adds per output element and a zero
// pair none.
class SparseConv1x1Op : public PairRowsOp {
 public:
  SparseConv1x1Op(const OpDesc& conv, int threads)
      : PairRowsOp(conv, threads, "sparse 1x1 convolution") {
    const Dims& in = conv.inputs[0].dims;
    batch_ = in[0];
    ci_ = in[1];
    plane_ = static_cast<std::size_t>(in[2]) * in[3];
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const int pairs = pairs_.count();
    const std::size_t tiles = (plane_ + kTile - 1) / kTile;
    const long long tasks = static_cast<long long>(batch_) * pairs * static_cast<long long>(tiles);
    const int co = pairs_.rows();
#pragma omp parallel for schedule(static) num_threads(threads_)
    for (long long t = 0; t < tasks; ++t) {
      const std::size_t tile = static_cast<std::size_t>(t % static_cast<long long>(tiles));
      const int i = static_cast<int>((t / static_cast<long long>(tiles)) % pairs);
      const int n = static_cast<int>(t / static_cast<long long>(tiles) / pairs);
      const std::size_t lo = tile * kTile, len = std::min(kTile, plane_ - lo);
      const float* xn = x + static_cast<std::size_t>(n) * ci_ * plane_ + lo;
      float a[kTile], b[kTile];
      const float b0 = pairs_.bias(2 * i), b1 = pairs_.bias(2 * i + 1);
      for (std::size_t e = 0; e < len; ++e) a[e] = b0, b[e] = b1;
      for (std::size_t p = pairs_.begin(i); p < pairs_.end(i); ++p) {
        const float* row = xn + static_cast<std::size_t>(pairs_.column(p)) * plane_;
        const float w0 = pairs_.first(p), w1 = pairs_.second(p);
#pragma omp simd
        for (std::size_t e = 0; e < len; ++e) {
          a[e] += w0 * row[e];
          b[e] += w1 * row[e];
        }
      }
      float* out0 = y + (static_cast<std::size_t>(n) * co + 2 * i) * plane_ + lo;
      std::copy(a, a + len, out0);
      if (2 * i + 1 < co) std::copy(b, b + len, out0 + plane_);
    }
  }

 private:
  static constexpr std::size_t kTile = 256;  // floats of a plane per task (two 1 KB rows)

  int batch_ = 1, ci_ = 0;
  std::size_t plane_ = 0;
};

bool sparseHead(const OpDesc& d, OpKind kind) {
  if (d.kind != kind || !d.sparse || d.int8 || d.consts.empty() || !d.consts[0] ||
      !allOf(d.inputs, CNML_DATA_FLOAT32) || !allOf(d.outputs, CNML_DATA_FLOAT32))
    return false;
  const TensorImpl& filter = *d.consts[0];
  return !filter.data.empty() && filter.dims.size() >= 2 && filter.zero_pairs >= 0;
}

bool mlpTakes(const OpDesc& d) {
  if (!sparseHead(d, OpKind::kMlp)) return false;
  const TensorImpl& filter = *d.consts[0];
  const double bytes = 4.0 * static_cast<double>(filter.data.size());
  const double kept_rows = (1.0 - filter.zero_pairs) * d.inputs[0].dims[0];
  return kept_rows <= (bytes >= kLargeFilterBytes ? kKeptRowsLarge : kKeptRowsSmall);
}

bool conv1x1Takes(const OpDesc& d) {
  // In a fusion oneDNN's convolutions pass values in blocked layouts, which a dense kernel
  // between them would turn back and forth: a fused MobileNetV2 at 80% zero pairs ran 0.87x
  // with it, per layer 1.11x (benchmarks/results/sparse.md).
  if (!sparseHead(d, OpKind::kConv) || d.group != 1 || d.fused) return false;
  const Dims& f = d.consts[0]->dims;
  const ConvParams& c = d.conv;
  if (f.size() != 4 || f[2] != 1 || f[3] != 1 || c.sh != 1 || c.sw != 1 || c.pt || c.pb ||
      c.pl || c.pr || d.inputs[0].dims.size() != 4)
    return false;
  const Dims& in = d.inputs[0].dims;
  const long long plane = static_cast<long long>(in[2]) * in[3];
  return 1.0 - d.consts[0]->zero_pairs <=
         (plane >= kLargePlane ? kConvKeptLargePlane : kConvKeptSmallPlane);
}

}  // namespace

bool sparseTakes(const OpDesc& head) { return mlpTakes(head) || conv1x1Takes(head); }

std::unique_ptr<BackendOp> makeSparseOp(const std::vector<const OpDesc*>& chain, int threads) {
  if (chain.size() != 1) return nullptr;
  const OpDesc& head = *chain.front();
  if (mlpTakes(head)) return std::make_unique<SparseMlpOp>(head, threads);
  if (conv1x1Takes(head)) return std::make_unique<SparseConv1x1Op>(head, threads);
  return nullptr;
}

}  // namespace onednn
}  // namespace pz_sdk
