// Fully connected: out[n, co] = in[n, :] . filter[co, :] + bias[co].
// Small batches are bandwidth-bound on the filter, so they use a dot product per output
// parallelised over co; larger batches use the packed GEMM with the filter packed as B.
#include <algorithm>

#include "kernels.h"
#include "kernels_gemm.h"

namespace pz_mock {
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

}  // namespace pz_mock
