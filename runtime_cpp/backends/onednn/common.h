// What both halves of the oneDNN SDK (fp32: backend.cpp and the files it dispatches to;
// quantized.cpp: fp16 and int8) share: one CPU engine, the op's MP as the thread count
// its primitives run on, and reading an op's operands and primitives.
#ifndef PZ_ONEDNN_COMMON_H_
#define PZ_ONEDNN_COMMON_H_

#include <omp.h>

#include <dnnl.hpp>
#include <dnnl_debug.h>
#include <string>
#include <vector>

#include "core/state.h"

namespace pz_sdk {
namespace onednn {

inline dnnl::engine& cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

// `user` (a handle) in the layout `md` a primitive chose: itself, or a copy reordered once,
// here (a const operand, at compile).
inline dnnl::memory inLayout(dnnl::memory user, const dnnl::memory::desc& md,
                             dnnl::stream& stream) {
  if (user.get_desc() == md) return user;
  dnnl::memory inner(md, cpuEngine());
  dnnl::reorder(user, inner).execute(stream, user, inner);
  stream.wait();
  return inner;
}

// Whether every operand of `v` is of `dtype` (the ops each half computes are of one dtype).
inline bool allOf(const std::vector<Operand>& v, cnmlDataType_t dtype) {
  for (const Operand& o : v)
    if (o.dtype != dtype) return false;
  return true;
}

// "<primitive kind> <implementation>", as ONEDNN_VERBOSE names them ("convolution
// brgconv_1x1:avx512_core"), for the SDK's implementation report.
inline std::string primitiveName(const dnnl::primitive& prim) {
  const char* info = nullptr;
  const_dnnl_primitive_desc_t pd = prim.get_primitive_desc();
  if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &info) != dnnl_success)
    info = nullptr;
  dnnl_primitive_kind_t kind = dnnl_undefined_primitive;
  dnnl_primitive_desc_query(pd, dnnl_query_primitive_kind, 0, &kind);
  return std::string(dnnl_prim_kind2str(kind)) + " " + (info ? info : "?");
}

// oneDNN's OpenMP runtime runs a primitive on omp_get_max_threads() threads, read at
// creation (kernel blocking) and at execution; MP sets it for both, then restores it.
class ThreadScope {
 public:
  explicit ThreadScope(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~ThreadScope() { omp_set_num_threads(saved_); }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int saved_;
};

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_COMMON_H_
