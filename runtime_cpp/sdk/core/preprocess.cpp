// CNML's data-preprocess strategy: where a fusion I/O tensor's conversion between its host
// form (a twin CPU tensor's dtype) and its device form runs. Here: the twin CPU tensors, the
// strategy's rules, BALANCE resolved by the device model, and the estimate the optimizer
// prices the choice with. The fusion op adds the device-side casts (fusion.cpp).
#include <cnml_mock.h>

#include "call_log.h"
#include "device_model/device_model.h"
#include "device_model/op_cost.h"
#include "state.h"

using namespace pz_sdk;
using namespace pz_sdk::call_log;

cnmlDataType_t TensorImpl::transferType() const {
  return preprocess == CNML_MLU_PRIORITY ? twin_dtype : dtype;
}

namespace {

bool convertible(cnmlDataType_t dtype) {
  return dtype == CNML_DATA_FLOAT32 || dtype == CNML_DATA_FLOAT16;
}

IoConversion conversionOf(std::size_t elements, cnmlDataType_t host, cnmlDataType_t device,
                          bool on_device, int mp) {
  return ioConversionUs(static_cast<double>(elements), static_cast<int>(dtypeSize(host)),
                        static_cast<int>(dtypeSize(device)), on_device, mp, mockProfile());
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlCreateCpuTensor(cnmlCpuTensor_t* cpu_tensor, cnmlTensorType_t tensor_type,
                                 cnmlDataType_t data_type, cnmlDataOrder_t data_order, int n,
                                 int c, int h, int w) {
  if (!cpu_tensor) return CNML_STATUS_INVALIDPARAM;
  if (tensor_type != CNML_TENSOR || !convertible(data_type) || data_order != CNML_NCHW ||
      n < 1 || c < 1 || h < 1 || w < 1)
    return CNML_STATUS_INVALIDARG;
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    auto* t = new cnmlCpuTensor();
    t->dtype = data_type;
    t->elements = static_cast<std::size_t>(n) * c * h * w;
    *cpu_tensor = t;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlCreateCpuTensor", [&](Call& call) {
    call.created(cpu_tensor).value(tensor_type).value(data_type).value(data_order).value(n)
        .value(c).value(h).value(w);
  });
}

cnmlStatus_t cnmlDestroyCpuTensor(cnmlCpuTensor_t* cpu_tensor) {
  return destroyLogged("cnmlDestroyCpuTensor", cpu_tensor);
}

cnmlStatus_t cnmlSetDataPreprocessStrategy(cnmlTensor_t tensor, cnmlCpuTensor_t twins_cpu_tensor,
                                           cnmlDataPreprocessStrategy_t dps) {
  if (!tensor || !twins_cpu_tensor) return CNML_STATUS_INVALIDPARAM;
  if (dps < CNML_CPU_MLU_BALANCE || dps > CNML_NO_PREPROCESS) return CNML_STATUS_INVALIDARG;
  const TensorImpl& t = *tensor->impl;
  if (t.type != CNML_TENSOR || !t.shape_set || !convertible(t.dtype))
    return CNML_STATUS_INVALIDARG;
  const std::size_t elements = elementCount(t.dims);
  if (twins_cpu_tensor->elements != elements) return CNML_STATUS_INVALIDARG;
  const cnmlDataType_t twin = twins_cpu_tensor->dtype;
  if (dps == CNML_NO_PREPROCESS && twin != t.dtype) return CNML_STATUS_INVALIDARG;
  int resolved = dps;
  if (dps == CNML_CPU_MLU_BALANCE) {
    // The op's MP is not known yet: the device side is priced on the whole chip.
    const int cores = mockProfile().cores;
    resolved = conversionOf(elements, twin, t.dtype, true, cores).total() <
                       conversionOf(elements, twin, t.dtype, false, cores).total()
                   ? CNML_MLU_PRIORITY
                   : CNML_CPU_PRIORITY;
  }
  const cnmlStatus_t status = guarded(CNML_STATUS_BADALLOC, [&] {
    TensorImpl& w = *tensor->impl;  // a strategy is not part of a compiled op's snapshot
    w.preprocess = resolved;
    w.twin_dtype = twin;
    return CNML_STATUS_SUCCESS;
  });
  return logged(status, "cnmlSetDataPreprocessStrategy", [&](Call& c) {
    c.handle(tensor).handle(twins_cpu_tensor).value(dps);
  });
}

cnmlStatus_t cnmlMockGetDataPreprocessStrategy(cnmlTensor_t tensor,
                                               cnmlDataPreprocessStrategy_t* dps) {
  if (!tensor || !dps) return CNML_STATUS_INVALIDPARAM;
  if (tensor->impl->preprocess < 0) return CNML_STATUS_INVALIDARG;
  *dps = static_cast<cnmlDataPreprocessStrategy_t>(tensor->impl->preprocess);
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlMockEstimatePreprocessUs(size_t elements, cnmlDataType_t host,
                                          cnmlDataType_t device, int on_device, int mp,
                                          double* host_us, double* device_us) {
  if (!host_us || !device_us) return CNML_STATUS_INVALIDPARAM;
  if (!convertible(host) || !convertible(device) || mp < 1 || mp > mockProfile().cores)
    return CNML_STATUS_INVALIDPARAM;
  const IoConversion cost = conversionOf(elements, host, device, on_device != 0, mp);
  *host_us = cost.host_us;
  *device_us = cost.device_us;
  return CNML_STATUS_SUCCESS;
}

}  // extern "C"
