// The reductions (sum, mean, max, min, prod over axes); sums and products accumulate in
// double, as pooling does, so a long row of large values is exact to the one rounding to
// float.
#include <cmath>
#include <vector>

#include "kernels.h"

namespace pz_sdk {

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

}  // namespace pz_sdk
