// Kernels that move data between layouts (concat, transpose, reshape, slice, gather) or
// reduce along one axis (softmax, log softmax, which share the axis split with concat). All
// work on dense row-major N-D buffers described by the op's dims.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernels.h"
#include "numerics.h"

namespace pz_sdk {
namespace {

// dims split at `axis` into (outer, len, inner) so the axis has stride `inner`.
void splitAt(const Dims& dims, int axis, std::size_t* outer, std::size_t* len,
             std::size_t* inner) {
  *outer = *inner = 1;
  for (int i = 0; i < axis; ++i) *outer *= dims[i];
  *len = dims[axis];
  for (std::size_t i = axis + 1; i < dims.size(); ++i) *inner *= dims[i];
}

}  // namespace

void copyForward(const float* in, float* out, std::size_t n, int threads) {
  if (in == out) return;
  const std::size_t chunk = 1 << 16;
  const long long chunks = static_cast<long long>((n + chunk - 1) / chunk);
  parallelFor(chunks, threads, [&](long long i) {
    std::size_t s = i * chunk, len = std::min(chunk, n - s);
    std::memcpy(out + s, in + s, len * sizeof(float));
  });
}

void softmaxForward(const OpDesc& d, const float* in, float* out, int threads) {
  std::size_t outer, len, inner;
  splitAt(d.inputs[0].dims, d.axis, &outer, &len, &inner);
  // Tasks are (outer index, block of inner positions); each block reduces over the axis
  // with contiguous inner rows, which vectorises for inner > 1.
  const std::size_t block = 64;
  const std::size_t blocks = (inner + block - 1) / block;
  const long long tasks = static_cast<long long>(outer * blocks);
#pragma omp parallel num_threads(threads)
  {
    // The sum runs in double: a float sum of 1,000 near-equal terms (a classifier that is
    // not sure) is off by several ulps, and that error lands on every output alike.
    std::vector<float> mx(block);
    std::vector<double> sum(block);
#pragma omp for schedule(static)
    for (long long t = 0; t < tasks; ++t) {
      std::size_t o = t / blocks, i0 = (t % blocks) * block, w = std::min(block, inner - i0);
      const float* x = in + o * len * inner + i0;
      float* y = out + o * len * inner + i0;
      std::fill(mx.begin(), mx.begin() + w, -std::numeric_limits<float>::infinity());
      std::fill(sum.begin(), sum.begin() + w, 0.0);
      for (std::size_t l = 0; l < len; ++l)
        for (std::size_t i = 0; i < w; ++i) mx[i] = std::max(mx[i], x[l * inner + i]);
      for (std::size_t l = 0; l < len; ++l)
        for (std::size_t i = 0; i < w; ++i) {
          float e = std::exp(x[l * inner + i] - mx[i]);
          y[l * inner + i] = e;
          sum[i] += e;
        }
      // A double reciprocal keeps the one rounding (to float) without a division per
      // element on this path.
      for (std::size_t i = 0; i < w; ++i) sum[i] = 1.0 / sum[i];
      for (std::size_t l = 0; l < len; ++l)
        for (std::size_t i = 0; i < w; ++i)
          y[l * inner + i] = static_cast<float>(y[l * inner + i] * sum[i]);
    }
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

void concatForward(const OpDesc& d, const float* const* inputs, float* out, int threads) {
  std::size_t outer, out_len, inner;
  splitAt(d.outputs[0].dims, d.axis, &outer, &out_len, &inner);
  // Operands in concat order: inputs, and CNML_CONST operands (fp32 values, also for an fp16
  // op, whose consts hold exactly the binary16 values).
  const int n_in = static_cast<int>(d.pieces.size());
  std::vector<const float*> src(n_in);
  std::vector<std::size_t> offset(n_in), chunk(n_in);
  std::size_t acc = 0;
  for (int i = 0; i < n_in; ++i) {
    const int p = d.pieces[i];
    const Dims& dims = p >= 0 ? d.inputs[p].dims : d.consts[-1 - p]->dims;
    src[i] = p >= 0 ? inputs[p] : d.consts[-1 - p]->data.data();
    chunk[i] = static_cast<std::size_t>(dims[d.axis]) * inner;
    offset[i] = acc;
    acc += chunk[i];
  }
  const long long tasks = static_cast<long long>(outer) * n_in;
  parallelFor(tasks, threads, [&](long long t) {
    std::size_t o = t / n_in;
    int i = static_cast<int>(t % n_in);
    std::memcpy(out + o * acc + offset[i], src[i] + o * chunk[i], chunk[i] * sizeof(float));
  });
}

void transposeForward(const OpDesc& d, const float* in, float* out, int threads) {
  const Dims& id = d.inputs[0].dims;
  const int nd = static_cast<int>(id.size());
  // Pad to kMaxDims leading unit dims so one fixed loop nest handles every rank.
  std::size_t in_stride[kMaxDims];
  std::size_t s = 1;
  for (int i = nd - 1; i >= 0; --i) {
    in_stride[i] = s;
    s *= id[i];
  }
  int od[kMaxDims];
  std::size_t src_stride[kMaxDims];  // input stride of each output dim
  const int lead = kMaxDims - nd;
  for (int i = 0; i < kMaxDims; ++i) {
    if (i < lead) {
      od[i] = 1;
      src_stride[i] = 0;
    } else {
      od[i] = id[d.perm[i - lead]];
      src_stride[i] = in_stride[d.perm[i - lead]];
    }
  }
  // Parallel over the first four (padded) output dims so low-rank and batch-1 transposes
  // still split across threads; the last two dims form contiguous output runs.
  const long long outer = static_cast<long long>(od[0]) * od[1] * od[2] * od[3];
  const std::size_t inner_count = static_cast<std::size_t>(od[4]) * od[5];
  parallelFor(outer, threads, [&](long long t) {
    long long r = t;
    const int i3 = static_cast<int>(r % od[3]);
    r /= od[3];
    const int i2 = static_cast<int>(r % od[2]);
    r /= od[2];
    const int i1 = static_cast<int>(r % od[1]);
    const int i0 = static_cast<int>(r / od[1]);
    const float* base = in + i0 * src_stride[0] + i1 * src_stride[1] + i2 * src_stride[2] +
                        i3 * src_stride[3];
    float* dst = out + t * inner_count;
    for (int i4 = 0; i4 < od[4]; ++i4) {
      const float* src = base + i4 * src_stride[4];
      for (int i5 = 0; i5 < od[5]; ++i5) *dst++ = src[i5 * src_stride[5]];
    }
  });
}

void sliceForward(const OpDesc& d, const float* in, float* out, int threads) {
  const Dims& id = d.inputs[0].dims;
  const Dims& od = d.outputs[0].dims;
  const SliceParams& p = d.slice;
  const int lead = kMaxDims - static_cast<int>(id.size());
  // Padded to kMaxDims leading unit axes like transposeForward, so one loop nest serves
  // every rank. step: input elements between neighbouring outputs along each axis.
  int size[kMaxDims];
  std::size_t step[kMaxDims];
  std::size_t base = 0, stride = 1;
  for (int i = kMaxDims - 1; i >= 0; --i) {
    if (i < lead) {
      size[i] = 1;
      step[i] = 0;
      continue;
    }
    const int a = i - lead;
    size[i] = od[a];
    step[i] = stride * p.stride[a];
    base += stride * p.begin[a];
    stride *= id[a];
  }
  // One task per output row (all axes but the last); the row is a memcpy when the last axis
  // is not strided.
  long long rows = 1;
  for (int i = 0; i < kMaxDims - 1; ++i) rows *= size[i];
  const int inner = size[kMaxDims - 1];
  const std::size_t inner_step = step[kMaxDims - 1];
  parallelFor(rows, threads, [&](long long t) {
    long long r = t;
    std::size_t offset = base;
    for (int k = kMaxDims - 2; k >= 0; --k) {
      offset += static_cast<std::size_t>(r % size[k]) * step[k];
      r /= size[k];
    }
    const float* src = in + offset;
    float* dst = out + t * inner;
    if (inner_step == 1) {
      std::memcpy(dst, src, static_cast<std::size_t>(inner) * sizeof(float));
    } else {
      for (int j = 0; j < inner; ++j) dst[j] = src[j * inner_step];
    }
  });
}

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

}  // namespace pz_sdk
