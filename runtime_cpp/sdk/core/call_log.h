// The call log (mock extension, cnml_mock.h): while enabled, every successful CNML/CNRT call
// that builds, compiles, runs or frees a session is appended as a record of its function name
// and arguments, with handles as symbolic ids. Paleozoic prints a recorded wrapper session
// as the same session written with direct SDK calls (`--emit raw`), so the SDK call sequence
// of a layer kind is written once, in the wrapper.
//
// Each entry point ends its success path with
//   return logged(status, "cnmlFoo", [&](Call& c) { c.created(op).handle(input)...; });
// The describing lambda only runs while the log is enabled and the call succeeded, so the
// log costs one atomic load per call otherwise. Destroy calls take the handle's id before
// the handle goes (doomed()), as the call nulls it.
#ifndef PZ_SDK_CALL_LOG_H_
#define PZ_SDK_CALL_LOG_H_

#include <cnml.h>
#include <cnrt.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace pz_sdk {
namespace call_log {

// C type names of the handles, as printed in declarations.
template <typename T>
struct HandleType;
#define PZ_SDK_HANDLE_TYPE(T) \
  template <>                  \
  struct HandleType<T> {       \
    static constexpr const char* name = #T; \
  };
PZ_SDK_HANDLE_TYPE(cnmlTensor_t)
PZ_SDK_HANDLE_TYPE(cnmlCpuTensor_t)
PZ_SDK_HANDLE_TYPE(cnmlBaseOp_t)
PZ_SDK_HANDLE_TYPE(cnmlFusionOp_t)
PZ_SDK_HANDLE_TYPE(cnmlConvOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlPoolOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlLrnOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlReshapeOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlTransposeOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlNdStridedSliceOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlDeconvOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlNearestNeighborOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlInterpOpParam_t)
PZ_SDK_HANDLE_TYPE(cnmlQuantizedParam_t)
PZ_SDK_HANDLE_TYPE(cnrtQuantizedParam_t)
#undef PZ_SDK_HANDLE_TYPE

// A handle about to be destroyed: its id (0 when it was never recorded).
struct Doomed {
  std::uint64_t id;
};

// One record under construction: appends JSON arguments (see cnmlMockCallLogTake).
class Call {
 public:
  Call& value(int v, const char* hint = nullptr);
  Call& value(std::size_t v);
  Call& value(bool v);
  Call& value(double v);  // printed as an exact double
  Call& value(float v);   // printed as an exact float
  Call& value(cnmlTensorType_t v);
  Call& value(cnmlDataType_t v);
  Call& value(cnmlCoreVersion_t v);
  Call& value(cnmlPoolMode_t v);
  Call& value(cnmlPoolStrategyMode_t v);
  Call& value(cnmlActiveFunction_t v);
  Call& value(cnmlDimension_t v);
  Call& value(cnmlLrnType_t v);
  Call& value(cnmlInterpCoordinateMode_t v);
  Call& value(cnmlNearestNeighborRoundMode_t v);
  Call& value(cnmlCastType_t v);
  Call& value(cnmlSparseMode_t v);
  Call& value(cnmlDataOrder_t v);
  Call& value(cnrtChannelType_t v);
  Call& value(cnmlDataPreprocessStrategy_t v);
  Call& value(cnrtDataType_t v);
  Call& null();
  Call& queue();
  // A pointer the SDK does not read here: null, or unknown.
  Call& opaque(const void* p);
  // A forward's `extra`: null, or a cnrtInvokeFuncParam_t (its data parallelism, affinity).
  Call& invoke(const void* extra);
  // An int array argument; the printer declares it as <owner>_<hint>.
  Call& ints(const char* hint, const int* values, int count);
  // A float array argument (printed exactly); the printer declares it as <owner>_<hint>.
  Call& floats(const char* hint, const float* values, int count);
  // Host data bound to a const tensor: its size and a digest, so the printer can tell which
  // weight it is (the caller may have copied it) without the log holding the bytes.
  Call& hostData(const void* data, std::size_t bytes);
  // Host memory a call writes (cnrtCastDataType's dst): its size and the digest of what was
  // written, so a later bind of the same bytes can be traced to the conversion.
  Call& hostOut(const void* data, std::size_t bytes);

  template <typename T>
  Call& created(T* slot) {
    return newHandle(HandleType<T>::name, *slot, true);
  }
  template <typename T>
  Call& handle(T h) {
    return use(static_cast<const void*>(h), false);
  }
  // &handle passed to a call that modifies the object (not creating it).
  template <typename T>
  Call& handleRef(T* slot) {
    return use(static_cast<const void*>(*slot), true);
  }
  Call& destroyed(Doomed doomed, bool by_address = true);
  Call& tensors(const char* hint, const cnmlTensor_t* tensors, int count);
  // Device buffers: created by cnrtMalloc, used as the data of `tensor` (or tensors[i]).
  Call& newBuffer(void** slot);
  Call& buffer(void* data, cnmlTensor_t tensor);
  Call& buffers(const char* hint, void* const* data, const cnmlTensor_t* tensors, int count);
  // A forward's lists of inputs and outputs (Concat's, a fusion op's): tensors, buffers, count.
  Call& forwardLists(const cnmlTensor_t* in_tensors, void* const* inputs, int input_num,
                     const cnmlTensor_t* out_tensors, void* const* outputs, int output_num);

  std::string json() const { return "[" + args_ + "]"; }

 private:
  Call& raw(const std::string& arg);
  Call& newHandle(const char* type, const void* handle, bool by_address);
  Call& use(const void* handle, bool by_address);

  std::string args_;
};

// One atomic load: the fast path of every entry point.
bool enabled();
// True while a recording skips the arithmetic of forwards (the log only needs the calls).
bool skipsCompute();
// Id of a recorded handle about to be destroyed (before the destroy nulls it).
Doomed doomedId(const void* handle);
template <typename T>
Doomed doomed(T* slot) {
  return doomedId(slot != nullptr ? static_cast<const void*>(*slot) : nullptr);
}
void append(const char* fn, const Call& call);

template <typename Status, typename Describe>
Status logged(Status status, const char* fn, Describe&& describe) {
  if (static_cast<int>(status) == 0 && enabled()) {
    Call call;
    describe(call);
    append(fn, call);
  }
  return status;
}

// The destroy entry points of plain handles: takes the handle's id before it goes, frees it,
// nulls the caller's slot and records the call.
template <typename T>
cnmlStatus_t destroyLogged(const char* fn, T** slot) {
  const Doomed gone = doomed(slot);
  if (!slot || !*slot) return CNML_STATUS_INVALIDPARAM;
  delete *slot;
  *slot = nullptr;
  return logged(CNML_STATUS_SUCCESS, fn, [&](Call& c) { c.destroyed(gone); });
}

}  // namespace call_log
}  // namespace pz_sdk

#endif  // PZ_SDK_CALL_LOG_H_
