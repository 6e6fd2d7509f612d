// Tensor descriptors. Data is dense fp32 in logical row-major order (Mock rule), so the
// only accepted strides are the dense ones and the only dtype is FLOAT32.
#include <atomic>
#include <cstring>

#include "call_log.h"
#include "state.h"

using namespace pz_mock;
using namespace pz_mock::call_log;  // logged(), doomed(), Call

namespace {
std::atomic<std::uint64_t> g_next_tensor_id{1};
}

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
    tensor->impl->dims.assign(dim_values, dim_values + dim_num);
    tensor->impl->shape_set = true;
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
  if (data_type != CNML_DATA_FLOAT32) return CNML_STATUS_UNSUPPORT;
  tensor->impl->dtype = data_type;
  return logged(CNML_STATUS_SUCCESS, "cnmlSetTensorDataType", [&](Call& c) {
    c.handle(tensor).value(data_type);
  });
}

cnmlStatus_t cnmlGetTensorSize_V2(cnmlTensor_t tensor, size_t* size) {
  if (!tensor || !size) return CNML_STATUS_INVALIDPARAM;
  if (!tensor->impl->shape_set) return CNML_STATUS_INVALIDARG;
  *size = elementCount(tensor->impl->dims) * sizeof(float);
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlGetTensorDataType(cnmlTensor_t tensor, cnmlDataType_t* data_type) {
  if (!tensor || !data_type) return CNML_STATUS_INVALIDPARAM;
  *data_type = tensor->impl->dtype;
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlDestroyTensor(cnmlTensor_t* tensor) {
  const Doomed gone = doomed(tensor);
  if (!tensor || !*tensor) return CNML_STATUS_INVALIDPARAM;
  delete *tensor;
  *tensor = nullptr;
  return logged(CNML_STATUS_SUCCESS, "cnmlDestroyTensor", [&](Call& c) { c.destroyed(gone); });
}

cnmlStatus_t cnmlBindConstData_V2(cnmlTensor_t tensor, void* cpu_tensor_ptr,
                                  bool free_aftercompile) {
  // free_aftercompile is irrelevant: the data is copied here.
  if (!tensor || !cpu_tensor_ptr) return CNML_STATUS_INVALIDPARAM;
  TensorImpl& t = *tensor->impl;
  if (t.type != CNML_FILTER && t.type != CNML_CONST) return CNML_STATUS_INVALIDPARAM;
  if (!t.shape_set) return CNML_STATUS_INVALIDPARAM;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    std::size_t n = elementCount(t.dims);
    t.data.resize(n);
    std::memcpy(t.data.data(), cpu_tensor_ptr, n * sizeof(float));
    t.bound = true;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlBindConstData_V2", [&](Call& c) {
    c.handle(tensor).hostData(cpu_tensor_ptr, tensor->impl->data.size() * sizeof(float))
        .value(free_aftercompile);
  });
}

}  // extern "C"
