// Element-wise kernels: trivially parallel loops the compiler vectorises.
#include <algorithm>
#include <cmath>

#include "kernels.h"

namespace pz_mock {

void activeForward(cnmlActiveFunction_t fn, const float* in, float* out, std::size_t n,
                   int threads) {
  const long long count = static_cast<long long>(n);
  switch (fn) {
    case CNML_ACTIVE_RELU:
#pragma omp parallel for simd schedule(static) num_threads(threads)
      for (long long i = 0; i < count; ++i) out[i] = std::max(in[i], 0.0f);
      break;
    case CNML_ACTIVE_RELU6:
#pragma omp parallel for simd schedule(static) num_threads(threads)
      for (long long i = 0; i < count; ++i) out[i] = std::min(std::max(in[i], 0.0f), 6.0f);
      break;
    case CNML_ACTIVE_RELU1:
#pragma omp parallel for simd schedule(static) num_threads(threads)
      for (long long i = 0; i < count; ++i) out[i] = std::min(std::max(in[i], 0.0f), 1.0f);
      break;
    case CNML_ACTIVE_HARD_SIGMOID:
#pragma omp parallel for simd schedule(static) num_threads(threads)
      for (long long i = 0; i < count; ++i)
        out[i] = std::min(std::max(0.2f * in[i] + 0.5f, 0.0f), 1.0f);
      break;
    case CNML_ACTIVE_SIGMOID:
#pragma omp parallel for schedule(static) num_threads(threads)
      for (long long i = 0; i < count; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
      break;
    case CNML_ACTIVE_TANH:
#pragma omp parallel for schedule(static) num_threads(threads)
      for (long long i = 0; i < count; ++i) out[i] = std::tanh(in[i]);
      break;
    case CNML_ACTIVE_NONE:
      if (out != in) copyForward(in, out, n, threads);
      break;
  }
}

void channelAffineForward(const OpDesc& d, bool batchnorm, const float* in, float* out,
                          int threads) {
  const Dims& dims = d.inputs[0].dims;
  const int n = dims[0], c = dims[1];
  const long long spatial =
      static_cast<long long>(d.inputs[0].elements() / (static_cast<std::size_t>(n) * c));
  const TensorImpl& a = *d.consts[0];
  const TensorImpl* b = d.consts.size() > 1 ? d.consts[1].get() : nullptr;
  const bool a_scalar = a.data.size() == 1, b_scalar = b && b->data.size() == 1;
  const int planes = n * c;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int pl = 0; pl < planes; ++pl) {
    int ch = pl % c;
    float av = a.data[a_scalar ? 0 : ch];
    float bv = b ? b->data[b_scalar ? 0 : ch] : 0.0f;
    const float* x = in + pl * spatial;
    float* y = out + pl * spatial;
    if (batchnorm) {
      for (long long i = 0; i < spatial; ++i) y[i] = (x[i] - av) * bv;
    } else {
      for (long long i = 0; i < spatial; ++i) y[i] = x[i] * av + bv;
    }
  }
}

void addForward(const float* a, const float* b, float* out, std::size_t n, int threads) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for simd schedule(static) num_threads(threads)
  for (long long i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

}  // namespace pz_mock
