#include "compile_check.h"

#include "device_memory.h"

namespace pz_mock {

cnmlStatus_t checkTarget(cnmlCoreVersion_t version, int core_limit) {
  if (version < CNML_1H8 || version > CNML_MLU220) return CNML_STATUS_INVALIDPARAM;
  if (version != CNML_MLU100) return CNML_STATUS_UNSUPPORT;
  if (core_limit < 1 || core_limit > kMaxCoreLimit) return CNML_STATUS_INVALIDPARAM;
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t checkOperands(const std::vector<Operand>& declared, const cnmlTensor_t* tensors,
                           void* const* ptrs, int count) {
  if (count != static_cast<int>(declared.size())) return CNML_STATUS_INVALIDARG;
  if (!ptrs) return CNML_STATUS_INVALIDPARAM;
  for (int i = 0; i < count; ++i) {
    if (tensors && tensors[i] && tensors[i]->impl->dims != declared[i].dims)
      return CNML_STATUS_INVALIDPARAM;
    if (!ptrs[i] || !deviceRangeValid(ptrs[i], declared[i].bytes()))
      return CNML_STATUS_INVALIDPARAM;
  }
  return CNML_STATUS_SUCCESS;
}

}  // namespace pz_mock
