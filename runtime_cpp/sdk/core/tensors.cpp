// Tensor descriptors and their quantisation. Data is dense in logical row-major order in
// the tensor's dtype (Mock rule), so the only accepted strides are the dense ones.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "call_log.h"
#include "kernels/numerics.h"
#include "state.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), destroyLogged(), Call

namespace {
std::atomic<std::uint64_t> g_next_tensor_id{1};
}

std::uint64_t pz_sdk::newTensorId() { return g_next_tensor_id++; }

namespace {

// The handle's tensor, copied first when a compiled op shares it (TensorImpl::frozen).
TensorImpl& writable(cnmlTensor_t tensor) {
  if (tensor->impl->frozen) {
    tensor->impl = std::make_shared<TensorImpl>(*tensor->impl);
    tensor->impl->frozen = false;
  }
  return *tensor->impl;
}

// The quantisation position and scale are set alike: one for the whole tensor, or one per
// channel; either form replaces the other.
template <typename T>
struct QuantField {
  bool (*valid)(T);
  bool TensorQuant::*has_one;
  T TensorQuant::*one;
  std::vector<T> TensorQuant::*per_channel;
};
const QuantField<int> kPosition{numerics::validPosition, &TensorQuant::has_position,
                                &TensorQuant::position, &TensorQuant::positions};
const QuantField<float> kScale{numerics::validScale, &TensorQuant::has_scale, &TensorQuant::scale,
                               &TensorQuant::scales};

template <typename T>
cnmlStatus_t setPerTensor(cnmlTensor_t tensor, const QuantField<T>& field, T value) {
  if (!tensor) return CNML_STATUS_INVALIDPARAM;
  if (!field.valid(value)) return CNML_STATUS_INVALIDARG;
  TensorQuant& q = writable(tensor).quant;
  q.*field.has_one = true;
  q.*field.one = value;
  (q.*field.per_channel).clear();
  return CNML_STATUS_SUCCESS;
}

template <typename T>
cnmlStatus_t setPerChannel(cnmlTensor_t tensor, const QuantField<T>& field, const T* values,
                           int channel_num) {
  if (!tensor || !values || channel_num < 1) return CNML_STATUS_INVALIDPARAM;
  for (int i = 0; i < channel_num; ++i)
    if (!field.valid(values[i])) return CNML_STATUS_INVALIDARG;
  return guarded(CNML_STATUS_BADALLOC, [&] {
    TensorQuant& q = writable(tensor).quant;
    (q.*field.per_channel).assign(values, values + channel_num);
    q.*field.has_one = false;
    return CNML_STATUS_SUCCESS;
  });
}

}  // namespace

namespace {

// The fraction of a filter's output-channel pairs (2i, 2i+1 along axis 0) that are zero at
// the same position; 0 for a filter of fewer than two output channels.
template <typename T>
double zeroPairs(const Dims& dims, const T* w) {
  if (dims.size() < 2 || dims[0] < 2) return 0.0;
  const std::size_t per = elementCount(dims) / static_cast<std::size_t>(dims[0]);
  const std::size_t pairs = static_cast<std::size_t>(dims[0] / 2);
  // Counted in 32-bit runs, both tests evaluated (&, not &&): the loop then vectorises, and
  // a board measuring blocks binds every block's filters (an eighth of its time before).
  constexpr std::size_t kRun = std::size_t{1} << 30;
  std::size_t zero = 0;
  for (std::size_t i = 0; i < pairs; ++i) {
    const T* a = w + 2 * i * per;
    const T* b = a + per;
    for (std::size_t from = 0; from < per; from += kRun) {
      const std::size_t to = std::min(per, from + kRun);
      std::uint32_t run = 0;
      for (std::size_t j = from; j < to; ++j)
        run += static_cast<std::uint32_t>((a[j] == T(0)) & (b[j] == T(0)));
      zero += run;
    }
  }
  return static_cast<double>(zero) / static_cast<double>(pairs * per);
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlInit(int) { return CNML_STATUS_SUCCESS; }
cnmlStatus_t cnmlExit(void) { return CNML_STATUS_SUCCESS; }

cnmlStatus_t cnmlCreateTensor_V2(cnmlTensor_t* tensor, cnmlTensorType_t tensor_type) {
  if (!tensor) return CNML_STATUS_INVALIDPARAM;
  if (tensor_type < CNML_TENSOR || tensor_type > CNML_VARIABLE) return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    auto* t = new cnmlTensor();
    t->impl = std::make_shared<TensorImpl>();
    t->impl->id = g_next_tensor_id++;
    t->impl->type = tensor_type;
    *tensor = t;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCreateTensor_V2", [&](Call& c) {
    c.created(tensor).value(tensor_type);
  });
}

cnmlStatus_t cnmlSetTensorShape_V2(cnmlTensor_t tensor, int dim_num, int dim_values[],
                                   int dim_strides[]) {
  if (!tensor || !dim_values) return CNML_STATUS_INVALIDPARAM;
  if (dim_num < 1 || dim_num > kMaxDims) return CNML_STATUS_INVALIDPARAM;
  for (int i = 0; i < dim_num; ++i)
    if (dim_values[i] <= 0) return CNML_STATUS_INVALIDPARAM;
  if (dim_strides) {
    long long expect = 1;
    for (int i = dim_num - 1; i >= 0; --i) {
      if (dim_strides[i] != expect) return CNML_STATUS_UNSUPPORT;  // only dense layouts
      expect *= dim_values[i];
    }
  }
  if (tensor->impl->bound) return CNML_STATUS_INVALIDARG;  // data was sized for the old shape
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    TensorImpl& t = writable(tensor);
    t.dims.assign(dim_values, dim_values + dim_num);
    t.shape_set = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlSetTensorShape_V2", [&](Call& c) {
    c.handle(tensor).value(dim_num).ints("dims", dim_values, dim_num);
    if (dim_strides) c.ints("strides", dim_strides, dim_num);
    else c.null();
  });
}

cnmlStatus_t cnmlSetTensorDataType(cnmlTensor_t tensor, cnmlDataType_t data_type) {
  if (!tensor) return CNML_STATUS_INVALIDPARAM;
  TensorImpl& t = *tensor->impl;
  bool ok = data_type == CNML_DATA_FLOAT32;
  if (t.type == CNML_TENSOR || t.type == CNML_CONST) ok = ok || data_type == CNML_DATA_FLOAT16;
  // Index and pixel activations (GatherV2's indices; uint8 images).
  if (t.type == CNML_TENSOR)
    ok = ok || data_type == CNML_DATA_INT32 || data_type == CNML_DATA_UINT8;
  if (t.type == CNML_FILTER)
    ok = ok || data_type == CNML_DATA_FLOAT16 || data_type == CNML_DATA_INT8;
  if (!ok) return CNML_STATUS_UNSUPPORT;
  if (t.bound && t.dtype != data_type) return CNML_STATUS_INVALIDARG;  // data is in the old dtype
  writable(tensor).dtype = data_type;
  return logged(CNML_STATUS_SUCCESS, "cnmlSetTensorDataType", [&](Call& c) {
    c.handle(tensor).value(data_type);
  });
}

cnmlStatus_t cnmlGetTensorSize_V2(cnmlTensor_t tensor, size_t* size) {
  if (!tensor || !size) return CNML_STATUS_INVALIDPARAM;
  if (!tensor->impl->shape_set) return CNML_STATUS_INVALIDARG;
  *size = elementCount(tensor->impl->dims) * dtypeSize(tensor->impl->dtype);
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlGetTensorDataType(cnmlTensor_t tensor, cnmlDataType_t* data_type) {
  if (!tensor || !data_type) return CNML_STATUS_INVALIDPARAM;
  *data_type = tensor->impl->dtype;
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlDestroyTensor(cnmlTensor_t* tensor) {
  return destroyLogged("cnmlDestroyTensor", tensor);
}

cnmlStatus_t cnmlBindConstData_V2(cnmlTensor_t tensor, void* cpu_tensor_ptr,
                                  bool free_aftercompile) {
  // FLOAT32 data is read when the ops using it compile (TensorImpl::borrowed); FLOAT16 and
  // INT8 data is decoded here. free_aftercompile hands the buffer (from malloc) to the SDK,
  // which copies it (FLOAT32: TensorImpl::given, dropped after compile) or decodes it and
  // frees it here: a compile then holds one plain copy of an op's weights, not two.
  if (!tensor || !cpu_tensor_ptr) return CNML_STATUS_INVALIDPARAM;
  if (tensor->impl->type != CNML_FILTER && tensor->impl->type != CNML_CONST)
    return CNML_STATUS_INVALIDPARAM;
  TensorImpl& t = writable(tensor);
  if (t.type != CNML_FILTER && t.type != CNML_CONST) return CNML_STATUS_INVALIDPARAM;
  if (!t.shape_set) return CNML_STATUS_INVALIDPARAM;
  const std::size_t n = elementCount(t.dims);
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    t.q.clear();
    t.borrowed = nullptr;
    t.owned_copy.reset();
    t.given.reset();
    t.spent = false;
    if (t.dtype == CNML_DATA_FLOAT16) {
      std::vector<float>().swap(t.data);  // handed over: decoded below, after the log reads it
      if (!free_aftercompile) {
        t.data.resize(n);
        numerics::decodeHalf(static_cast<const std::uint16_t*>(cpu_tensor_ptr), t.data.data(), n,
                             1);
      }
    } else if (t.dtype == CNML_DATA_INT8) {
      // The codes alone: the int8 kernels (both SDKs) read them, nothing reads them as floats.
      const auto* q = static_cast<const std::int8_t*>(cpu_tensor_ptr);
      std::vector<float>().swap(t.data);
      t.q.assign(q, q + n);
    } else {
      std::vector<float>().swap(t.data);
      t.borrowed = static_cast<const float*>(cpu_tensor_ptr);
    }
    if (t.type == CNML_FILTER && t.dtype == CNML_DATA_FLOAT32)
      t.zero_pairs = zeroPairs(t.dims, t.borrowed);
    else if (t.type == CNML_FILTER && t.dtype == CNML_DATA_INT8)
      t.zero_pairs = zeroPairs(t.dims, t.q.data());
    else if (t.type == CNML_FILTER && !free_aftercompile)
      t.zero_pairs = zeroPairs(t.dims, t.data.data());
    t.bound = true;
    return CNML_STATUS_SUCCESS;
  });
  cnmlStatus_t result = logged(status, "cnmlBindConstData_V2", [&](Call& c) {
    c.handle(tensor).hostData(cpu_tensor_ptr, n * dtypeSize(tensor->impl->dtype))
        .value(free_aftercompile);
  });
  if (result != CNML_STATUS_SUCCESS || !free_aftercompile) return result;
  // The log has read the buffer: the SDK takes FLOAT32 data into a const of its own, decodes
  // FLOAT16 into one (INT8 is in one already), frees the buffer, and drops that const with
  // the compile.
  result = guarded(CNML_STATUS_BADALLOC, [&] {
    if (t.dtype == CNML_DATA_FLOAT16) {
      decodeHalfDraining(t.data, static_cast<const std::uint16_t*>(cpu_tensor_ptr), n);
      if (t.type == CNML_FILTER) t.zero_pairs = zeroPairs(t.dims, t.data.data());
    }
    t.given = t.dtype == CNML_DATA_FLOAT32 ? givenCopy(t, static_cast<float*>(cpu_tensor_ptr))
                                           : givenDecoded(t);
    t.owned_copy = t.given;
    return CNML_STATUS_SUCCESS;
  });
  t.borrowed = nullptr;
  t.bound = result == CNML_STATUS_SUCCESS;
  std::free(cpu_tensor_ptr);
  return result;
}

// ---- quantisation ----------------------------------------------------------------------

cnmlStatus_t cnmlCreateQuantizedParam(cnmlQuantizedParam_t* param, int position, float scale,
                                      float offset) {
  if (!param) return CNML_STATUS_INVALIDPARAM;
  if (!numerics::validPosition(position) || !numerics::validScale(scale))
    return CNML_STATUS_INVALIDARG;
  if (offset != 0.0f) return CNML_STATUS_UNSUPPORT;  // symmetric only
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    *param = new cnmlQuantizedParam{position, scale};
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCreateQuantizedParam", [&](Call& c) {
    c.created(param).value(position).value(scale).value(offset);
  });
}

cnmlStatus_t cnmlDestroyQuantizedParam(cnmlQuantizedParam_t* param) {
  return destroyLogged("cnmlDestroyQuantizedParam", param);
}

cnmlStatus_t cnmlSetQuantizedPosition(cnmlTensor_t tensor, int position) {
  return logged(setPerTensor(tensor, kPosition, position), "cnmlSetQuantizedPosition",
                [&](Call& c) { c.handle(tensor).value(position); });
}

cnmlStatus_t cnmlSetQuantizedScale(cnmlTensor_t tensor, float scale) {
  return logged(setPerTensor(tensor, kScale, scale), "cnmlSetQuantizedScale",
                [&](Call& c) { c.handle(tensor).value(scale); });
}

cnmlStatus_t cnmlSetQuantizedPositionByChannel(cnmlTensor_t tensor, int* positions,
                                               int channel_num) {
  return logged(setPerChannel(tensor, kPosition, positions, channel_num),
                "cnmlSetQuantizedPositionByChannel", [&](Call& c) {
    c.handle(tensor).ints("positions", positions, channel_num).value(channel_num);
  });
}

cnmlStatus_t cnmlSetQuantizedScaleByChannel(cnmlTensor_t tensor, float* scales,
                                            int channel_num) {
  return logged(setPerChannel(tensor, kScale, scales, channel_num),
                "cnmlSetQuantizedScaleByChannel", [&](Call& c) {
    c.handle(tensor).floats("scales", scales, channel_num).value(channel_num);
  });
}

}  // extern "C"
