// Fully connected: out[n, co] = in[n, :] . filter[co, :] + bias[co].
// Small batches are bandwidth-bound on the filter, so they use a dot product per output
// parallelised over co; larger batches use the packed GEMM with the filter packed as B.
// BatchDot (MatMul of two activations) accumulates in double.
#include <algorithm>
#include <vector>

#include "kernels.h"
#include "kernels_gemm.h"

namespace pz_sdk {
namespace {

constexpr int kGemvMaxBatch = 4;
constexpr int kDotBlock = 256;

struct MlpShape {
  int n, k, co;
};

MlpShape shapeOf(const OpDesc& d) {
  MlpShape s{};
  s.n = d.inputs[0].dims[0];
  s.k = static_cast<int>(d.inputs[0].elements() / s.n);
  s.co = d.consts[0]->dims[0];
  return s;
}

}  // namespace

void prepareMlp(PreparedOp& op) {
  const OpDesc& d = op.desc;
  MlpShape s = shapeOf(d);
  prepareBias(op, s.co);
  if (s.n <= kGemvMaxBatch) return;
  op.packed_weights.resize(gemm::packedBSize(s.k, s.co));
  gemm::packBTransposed(d.consts[0]->data.data(), s.k, s.k, s.co, op.packed_weights.data(),
                        op.threads);
  op.scratch.resize(gemm::packedASize(s.n, s.k));
}

void mlpForward(PreparedOp& op, const float* in, float* out) {
  const OpDesc& d = op.desc;
  MlpShape s = shapeOf(d);
  const float* w = d.consts[0]->data.data();
  if (s.n <= kGemvMaxBatch) {
    parallelFor(s.co, op.threads, [&](long long o) {
      const float* wrow = w + static_cast<std::size_t>(o) * s.k;
      for (int n = 0; n < s.n; ++n) {
        const float* x = in + static_cast<std::size_t>(n) * s.k;
        // Vector partial sums over blocks of K, the blocks summed in double: one float
        // sum over VGG's K = 25,088 loses bits that onnxruntime's blocked GEMM keeps.
        double total = op.bias[o];
        for (int k0 = 0; k0 < s.k; k0 += kDotBlock) {
          const int k1 = std::min(s.k, k0 + kDotBlock);
          float acc = 0.0f;
#pragma omp simd reduction(+ : acc)
          for (int k = k0; k < k1; ++k) acc += x[k] * wrow[k];
          total += acc;
        }
        out[static_cast<std::size_t>(n) * s.co + o] = static_cast<float>(total);
      }
    });
    return;
  }
  gemm::packA(in, s.k, s.n, s.k, op.scratch.data());
  gemm::sgemmPacked(s.n, s.co, s.k, op.scratch.data(), op.packed_weights.data(), out, s.co,
                    nullptr, op.bias.data(), op.threads);
}

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

}  // namespace pz_sdk
