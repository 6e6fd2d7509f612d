#include "sparse_mlp.h"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <cstdint>
#include <string>
#include <vector>

#include "common.h"

namespace pz_mock {
namespace onednn {
namespace {

// Where the pair kernel beats oneDNN's dense inner product, measured on 2 cores
// (benchmarks/sparse_mlp.py, benchmarks/results/sparse.md): its time grows with the kept
// pair columns times the batch (a gather per input row), oneDNN's with the filter's bytes
// up to a few rows. A filter of 16 MB or more takes it while kept fraction x batch is at
// most 0.5 (25088x4096 at batch 1: 1.1x at half the pairs zero, 2.8x at 80%), a smaller one,
// which oneDNN reads from cache, at most 0.2 (1024x1000 at batch 1 and 80%: 1.3x).
constexpr double kLargeFilterBytes = 16.0 * (1 << 20);
constexpr double kKeptRowsLarge = 0.5;
constexpr double kKeptRowsSmall = 0.2;

bool allFloat32(const std::vector<Operand>& operands) {
  for (const Operand& o : operands)
    if (o.dtype != CNML_DATA_FLOAT32) return false;
  return true;
}

class SparseMlpOp : public BackendOp {
 public:
  SparseMlpOp(const OpDesc& d, int threads) : threads_(threads) {
    const TensorImpl& filter = *d.consts[0];
    batch_ = d.inputs[0].dims[0];
    k_ = static_cast<int>(d.inputs[0].elements() / static_cast<std::size_t>(batch_));
    co_ = filter.dims[0];
    const float* w = filter.data.data();
    const int pairs = (co_ + 1) / 2;
    start_.reserve(static_cast<std::size_t>(pairs) + 1);
    start_.push_back(0);
    for (int i = 0; i < pairs; ++i) {
      const float* r0 = w + static_cast<std::size_t>(2 * i) * k_;
      const float* r1 = 2 * i + 1 < co_ ? r0 + k_ : nullptr;
      for (int j = 0; j < k_; ++j) {
        const float a = r0[j], b = r1 ? r1[j] : 0.0f;
        if (a == 0.0f && b == 0.0f) continue;
        column_.push_back(j);
        first_.push_back(a);
        second_.push_back(b);
      }
      start_.push_back(column_.size());
    }
    bias_.assign(static_cast<std::size_t>(co_), 0.0f);
    if (d.consts.size() > 1 && d.consts[1])
      bias_.assign(d.consts[1]->data.begin(), d.consts[1]->data.end());
  }

  std::string describe() const override {
    return "sparse inner product (SDK kernel, " +
           std::to_string(100 * column_.size() / (static_cast<std::size_t>(start_.size() - 1) *
                                                   static_cast<std::size_t>(k_))) +
           "% of pair columns kept)";
  }

  void run(const void* const* inputs, void* const* outputs) override {
    const auto* x = static_cast<const float*>(inputs[0]);
    auto* y = static_cast<float*>(outputs[0]);
    const int pairs = static_cast<int>(start_.size()) - 1;
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
    std::size_t p = start_[i];
    const std::size_t end = start_[i + 1];
    float s0[R] = {}, s1[R] = {};
    const float* in[R];
    for (int r = 0; r < R; ++r) in[r] = x + static_cast<std::size_t>(b + r) * k_;
#if defined(__AVX512F__)
    __m512 va[R], vb[R];
    for (int r = 0; r < R; ++r) va[r] = vb[r] = _mm512_setzero_ps();
    for (; p + 16 <= end; p += 16) {
      const __m512i idx = _mm512_loadu_si512(column_.data() + p);
      const __m512 w0 = _mm512_loadu_ps(first_.data() + p);
      const __m512 w1 = _mm512_loadu_ps(second_.data() + p);
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
      const std::int32_t j = column_[p];
      for (int r = 0; r < R; ++r) {
        s0[r] += first_[p] * in[r][j];
        s1[r] += second_[p] * in[r][j];
      }
    }
    for (int r = 0; r < R; ++r) {
      float* row = y + static_cast<std::size_t>(b + r) * co_;
      row[2 * i] = s0[r] + bias_[2 * i];
      if (2 * i + 1 < co_) row[2 * i + 1] = s1[r] + bias_[2 * i + 1];
    }
  }
#pragma GCC diagnostic pop

  int threads_;
  int batch_ = 1, k_ = 0, co_ = 0;
  std::vector<std::size_t> start_;  // per pair: its first kept column in the arrays below
  std::vector<std::int32_t> column_;
  std::vector<float> first_, second_;  // rows 2i and 2i+1 at each kept column
  std::vector<float> bias_;
};

}  // namespace

bool sparseMlpTakes(const OpDesc& d) {
  if (d.kind != OpKind::kMlp || !d.sparse || d.int8 || d.consts.empty() || !d.consts[0] ||
      !allFloat32(d.inputs) || !allFloat32(d.outputs))
    return false;
  const TensorImpl& filter = *d.consts[0];
  if (filter.data.empty() || filter.dims.size() < 2 || filter.zero_pairs < 0) return false;
  const double bytes = 4.0 * static_cast<double>(filter.data.size());
  const double kept_rows = (1.0 - filter.zero_pairs) * d.inputs[0].dims[0];
  return kept_rows <= (bytes >= kLargeFilterBytes ? kKeptRowsLarge : kKeptRowsSmall);
}

std::unique_ptr<BackendOp> makeSparseMlp(const OpDesc& d, int threads) {
  if (!sparseMlpTakes(d)) return nullptr;
  return std::make_unique<SparseMlpOp>(d, threads);
}

}  // namespace onednn
}  // namespace pz_mock
