// Normalisation kernels: batch norm and scale (per-channel affine), LRN and layer norm.
//
// Cross-channel LRN. The window for channel c is [c - floor((n-1)/2), c + ceil((n-1)/2)]
// clipped to the channels (ONNX). Work goes in blocks of spatial positions so the channel
// window sums run over contiguous, cache-resident rows.
#include <algorithm>
#include <cmath>
#include <vector>

#include "kernels.h"

namespace pz_sdk {

void lrnForward(const OpDesc& d, const float* in, float* out, int threads) {
  const LrnParams& p = d.lrn;
  const Dims& dims = d.inputs[0].dims;
  const int n = dims[0], c = dims[1];
  const std::size_t spatial = d.inputs[0].elements() / (static_cast<std::size_t>(n) * c);
  const int before = (p.size - 1) / 2, after = p.size / 2;  // floor, ceil of (size-1)/2
  double divisor = 1.0;
  if (p.type == CNML_LRN_V1) divisor = std::min(p.size, 2 * c - 1);
  if (p.type == CNML_LRN_V3) divisor = p.size;
  const float scale = static_cast<float>(p.alpha / divisor);
  const float k = static_cast<float>(p.k), beta = static_cast<float>(p.beta);
  // Parallel over (batch item, block of spatial positions): channels are the reduction axis.
  const std::size_t block = 256;
  const std::size_t blocks = (spatial + block - 1) / block;
  const long long tasks = static_cast<long long>(n) * blocks;
#pragma omp parallel num_threads(threads)
  {
    std::vector<float> sq(block);
#pragma omp for schedule(static)
    for (long long t = 0; t < tasks; ++t) {
      int b = static_cast<int>(t / blocks);
      std::size_t s0 = (t % blocks) * block, len = std::min(block, spatial - s0);
      const float* x = in + static_cast<std::size_t>(b) * c * spatial + s0;
      float* y = out + static_cast<std::size_t>(b) * c * spatial + s0;
      for (int ch = 0; ch < c; ++ch) {
        int lo = std::max(0, ch - before), hi = std::min(c - 1, ch + after);
        std::fill(sq.begin(), sq.begin() + len, 0.0f);
        for (int j = lo; j <= hi; ++j) {
          const float* xj = x + static_cast<std::size_t>(j) * spatial;
          for (std::size_t i = 0; i < len; ++i) sq[i] += xj[i] * xj[i];
        }
        const float* xc = x + static_cast<std::size_t>(ch) * spatial;
        float* yc = y + static_cast<std::size_t>(ch) * spatial;
        for (std::size_t i = 0; i < len; ++i) yc[i] = xc[i] / std::pow(k + scale * sq[i], beta);
      }
    }
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
  parallelFor(static_cast<long long>(n) * c, threads, [&](long long pl) {
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
  });
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

}  // namespace pz_sdk
