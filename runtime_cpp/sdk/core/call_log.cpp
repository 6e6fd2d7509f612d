// The call log behind cnmlMockCallLog* (see call_log.h and cnml_mock.h).
#include "call_log.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include <cnml_mock.h>

#include "state.h"

namespace pz_sdk {
namespace call_log {
namespace {

// Process-wide like the SDK it belongs to. The mutex guards everything but the two flags,
// which the entry points read without it.
struct Log {
  std::atomic<bool> on{false};
  std::atomic<bool> skip_compute{false};
  std::mutex mu;
  std::string scope;
  std::vector<std::string> records;  // JSON objects, in call order
  std::unordered_map<const void*, std::uint64_t> ids;  // live recorded handles
  std::uint64_t next_id = 1;

  void reset() {
    scope.clear();
    records.clear();
    ids.clear();
    next_id = 1;
  }
};

Log& theLog() {
  static Log log;
  return log;
}

std::string quoted(const std::string& text) {
  std::string out = "\"";
  for (char ch : text) {
    const auto u = static_cast<unsigned char>(ch);
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", u);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::uint64_t idOf(const void* handle) {
  Log& log = theLog();
  std::lock_guard<std::mutex> lock(log.mu);
  auto it = log.ids.find(handle);
  return it == log.ids.end() ? 0 : it->second;  // 0: not created while recording
}

struct EnumName {
  int value;
  const char* name;
};

}  // namespace

bool enabled() { return theLog().on.load(std::memory_order_relaxed); }
bool skipsCompute() { return enabled() && theLog().skip_compute.load(std::memory_order_relaxed); }

Doomed doomedId(const void* handle) {
  if (handle == nullptr || !enabled()) return Doomed{0};
  return Doomed{idOf(handle)};
}

void append(const char* fn, const Call& call) {
  Log& log = theLog();
  std::lock_guard<std::mutex> lock(log.mu);
  log.records.push_back("{\"fn\":" + quoted(fn) + ",\"scope\":" + quoted(log.scope) +
                        ",\"args\":" + call.json() + "}");
}

Call& Call::raw(const std::string& arg) {
  if (!args_.empty()) args_ += ",";
  args_ += arg;
  return *this;
}

Call& Call::value(int v, const char* hint) {
  std::string arg = "{\"k\":\"int\",\"v\":" + std::to_string(v);
  if (hint != nullptr) arg += ",\"hint\":" + quoted(hint);
  return raw(arg + "}");
}

Call& Call::value(std::size_t v) { return raw("{\"k\":\"int\",\"v\":" + std::to_string(v) + "}"); }

Call& Call::value(bool v) {
  return raw(std::string("{\"k\":\"bool\",\"v\":") + (v ? "true" : "false") + "}");
}

// Numbers travel as text that reads back exactly (17 / 9 significant digits).
Call& Call::value(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return raw("{\"k\":\"double\",\"v\":" + quoted(buf) + "}");
}

Call& Call::value(float v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(v));
  return raw("{\"k\":\"float\",\"v\":" + quoted(buf) + "}");
}

namespace {

// An SDK enum by its value's name among `names`, or as the number when it has none. The
// last name wins for aliased values (CNML_C10 and CNML_MLU100 are both 3).
template <typename Enum>
std::string enumArg(Enum e, std::initializer_list<EnumName> names) {
  const int v = static_cast<int>(e);
  const char* found = nullptr;
  for (const EnumName& n : names)
    if (n.value == v) found = n.name;
  if (found == nullptr) return "{\"k\":\"int\",\"v\":" + std::to_string(v) + "}";
  return "{\"k\":\"enum\",\"v\":" + quoted(found) + "}";
}

}  // namespace

Call& Call::value(cnmlTensorType_t v) {
  return raw(enumArg(v, {{0, "CNML_TENSOR"}, {1, "CNML_FILTER"}, {2, "CNML_CONST"},
      {3, "CNML_VARIABLE"}}));
}

Call& Call::value(cnmlDataType_t v) {
  return raw(enumArg(v, {{0, "CNML_DATA_INVALID"}, {1, "CNML_DATA_FLOAT16"},
      {2, "CNML_DATA_FLOAT32"}, {3, "CNML_DATA_DOUBLE"}, {4, "CNML_DATA_FIX8"},
      {4, "CNML_DATA_INT8"}, {6, "CNML_DATA_INT16"}, {7, "CNML_DATA_INT32"}, {8, "CNML_DATA_UINT8"},
      {9, "CNML_DATA_UINT16"}, {10, "CNML_DATA_UINT32"}, {11, "CNML_DATA_QUANT8"},
      {12, "CNML_DATA_BINARY"}, {13, "CNML_DATA_BOOL"}, {14, "CNML_DATA_INT4"}}));
}

Call& Call::value(cnmlCoreVersion_t v) {
  return raw(enumArg(v, {{1, "CNML_1H8"}, {2, "CNML_1H16"}, {3, "CNML_C10"}, {3, "CNML_MLU100"},
      {4, "CNML_1H8MINI"}, {5, "CNML_MLU270"}, {6, "CNML_MLU220"}}));
}

Call& Call::value(cnmlPoolMode_t v) {
  return raw(enumArg(v, {{0, "CNML_POOL_AVG"}, {1, "CNML_POOL_MAX"}, {2, "CNML_POOL_MAXINDEX"},
      {3, "CNML_POOL_SUM"}, {4, "CNML_POOL_BLEND"}}));
}

Call& Call::value(cnmlPoolStrategyMode_t v) {
  return raw(enumArg(v, {{0, "CNML_POOL_KFULL"}, {1, "CNML_POOL_KVALID"}}));
}

Call& Call::value(cnmlActiveFunction_t v) {
  return raw(enumArg(v, {{0, "CNML_ACTIVE_NONE"}, {1, "CNML_ACTIVE_SIGMOID"},
      {2, "CNML_ACTIVE_RELU"}, {3, "CNML_ACTIVE_TANH"}, {4, "CNML_ACTIVE_RELU1"},
      {5, "CNML_ACTIVE_RELU6"}, {6, "CNML_ACTIVE_HARD_SIGMOID"}}));
}

Call& Call::value(cnmlDimension_t v) {
  return raw(enumArg(v, {{0, "CNML_DIM_N"}, {1, "CNML_DIM_C"}, {2, "CNML_DIM_H"}, {3, "CNML_DIM_W"},
      {4, "CNML_DIM_HW"}, {5, "CNML_DIM_T"}}));
}

Call& Call::value(cnmlLrnType_t v) {
  return raw(enumArg(v, {{0, "CNML_LRN_V1"}, {1, "CNML_LRN_V2"}, {2, "CNML_LRN_V3"}}));
}

Call& Call::value(cnmlSparseMode_t v) {
  return raw(enumArg(v, {{0, "CNML_NoSparse"}, {1, "CNML_Sparse"}}));
}

Call& Call::value(cnrtChannelType_t v) {
  return raw(enumArg(v, {{-2, "CNRT_CHANNEL_TYPE_DUPLICATE"}, {-1, "CNRT_CHANNEL_TYPE_NONE"},
      {0, "CNRT_CHANNEL_TYPE_0"}, {1, "CNRT_CHANNEL_TYPE_1"}, {2, "CNRT_CHANNEL_TYPE_2"},
      {3, "CNRT_CHANNEL_TYPE_3"}}));
}

Call& Call::value(cnmlDataOrder_t v) {
  return raw(enumArg(v, {{0, "CNML_NCHW"}, {1, "CNML_NHWC"}}));
}

Call& Call::value(cnmlDataPreprocessStrategy_t v) {
  return raw(enumArg(v, {{0, "CNML_CPU_MLU_BALANCE"}, {1, "CNML_CPU_PRIORITY"},
      {2, "CNML_MLU_PRIORITY"}, {3, "CNML_NO_PREPROCESS"}}));
}

Call& Call::value(cnmlInterpCoordinateMode_t v) {
  return raw(enumArg(v, {{0, "CNML_INTERP_ASYMMETRIC"}, {1, "CNML_INTERP_ALIGN_CORNERS"},
      {2, "CNML_INTERP_HALF_PIXEL"}, {3, "CNML_INTERP_PYTORCH_HALF_PIXEL"}}));
}

Call& Call::value(cnmlNearestNeighborRoundMode_t v) {
  return raw(enumArg(v, {{0, "CNML_NEAREST_ROUND_PREFER_FLOOR"},
      {1, "CNML_NEAREST_ROUND_PREFER_CEIL"}, {2, "CNML_NEAREST_FLOOR"}, {3, "CNML_NEAREST_CEIL"}}));
}

Call& Call::value(cnmlCastType_t v) {
  return raw(enumArg(v, {{0, "CNML_CAST_FLOAT32_TO_UINT8"}, {1, "CNML_CAST_UINT8_TO_FLOAT32"},
      {3, "CNML_CAST_FIX8_TO_FLOAT16"}, {4, "CNML_CAST_FLOAT16_TO_FLOAT32"},
      {5, "CNML_CAST_FLOAT16_TO_FIX8"}, {6, "CNML_CAST_FLOAT32_TO_FLOAT16"},
      {7, "CNML_CAST_INT16_TO_FLOAT16"}, {8, "CNML_CAST_FLOAT16_TO_INT16"}}));
}

Call& Call::value(cnrtDataType_t v) {
  return raw(enumArg(v, {{0x0, "CNRT_INVALID"}, {0x12, "CNRT_FLOAT16"}, {0x13, "CNRT_FLOAT32"},
      {0x14, "CNRT_FLOAT64"}, {0x21, "CNRT_INT8"}, {0x22, "CNRT_INT16"}, {0x23, "CNRT_INT32"},
      {0x31, "CNRT_UINT8"}, {0x33, "CNRT_UINT32"}, {0x41, "CNRT_FIX8"}, {0x51, "CNRT_QUANT8"},
      {0x61, "CNRT_BOOL"}}));
}

Call& Call::null() { return raw("{\"k\":\"null\"}"); }
Call& Call::queue() { return raw("{\"k\":\"queue\"}"); }
Call& Call::opaque(const void* p) {
  return p == nullptr ? null() : raw("{\"k\":\"handle\",\"id\":0}");
}

Call& Call::invoke(const void* extra) {
  if (extra == nullptr) return null();
  const auto* param = static_cast<const cnrtInvokeFuncParam_t*>(extra);
  const std::string affinity =
      param->affinity ? ",\"affinity\":" + std::to_string(*param->affinity) : "";
  return raw("{\"k\":\"invoke\",\"dp\":" + std::to_string(*param->data_parallelism) +
             affinity + "}");
}

Call& Call::ints(const char* hint, const int* values, int count) {
  std::string list;
  for (int i = 0; i < count; ++i) list += (i ? "," : "") + std::to_string(values[i]);
  return raw("{\"k\":\"ints\",\"hint\":" + quoted(hint) + ",\"v\":[" + list + "]}");
}

Call& Call::floats(const char* hint, const float* values, int count) {
  std::string list;
  for (int i = 0; i < count; ++i) {
    char buf[40];
    std::snprintf(buf, sizeof(buf), "%.9g", static_cast<double>(values[i]));
    list += (i ? "," : "") + quoted(buf);
  }
  return raw("{\"k\":\"floats\",\"hint\":" + quoted(hint) + ",\"v\":[" + list + "]}");
}

Call& Call::hostOut(const void* data, std::size_t bytes) {
  char digest[24];
  std::snprintf(digest, sizeof(digest), "%016" PRIx64, cnmlMockDataDigest(data, bytes));
  return raw("{\"k\":\"hostout\",\"bytes\":" + std::to_string(bytes) + ",\"digest\":" +
             quoted(digest) + "}");
}

Call& Call::hostData(const void* data, std::size_t bytes) {
  char digest[24];
  std::snprintf(digest, sizeof(digest), "%016" PRIx64, cnmlMockDataDigest(data, bytes));
  const auto* p = static_cast<const unsigned char*>(data);
  bool zero = true;
  for (std::size_t i = 0; i < bytes && zero; ++i) zero = p[i] == 0;
  return raw("{\"k\":\"host\",\"bytes\":" + std::to_string(bytes) + ",\"digest\":" +
             quoted(digest) + ",\"zero\":" + (zero ? "true" : "false") + "}");
}

Call& Call::newHandle(const char* type, const void* handle, bool by_address) {
  std::uint64_t id;
  {
    Log& log = theLog();
    std::lock_guard<std::mutex> lock(log.mu);
    id = log.next_id++;
    log.ids[handle] = id;
  }
  return raw("{\"k\":\"new\",\"id\":" + std::to_string(id) + ",\"type\":" + quoted(type) +
             ",\"addr\":" + (by_address ? "true" : "false") + "}");
}

Call& Call::use(const void* handle, bool by_address) {
  return raw(std::string("{\"k\":\"") + (by_address ? "ref" : "handle") +
             "\",\"id\":" + std::to_string(idOf(handle)) + "}");
}

Call& Call::destroyed(Doomed doomed, bool by_address) {
  {
    Log& log = theLog();
    std::lock_guard<std::mutex> lock(log.mu);
    for (auto it = log.ids.begin(); it != log.ids.end(); ++it) {
      if (it->second == doomed.id) {
        log.ids.erase(it);  // the address may be reused by a later handle
        break;
      }
    }
  }
  return raw("{\"k\":\"del\",\"id\":" + std::to_string(doomed.id) +
             ",\"addr\":" + (by_address ? "true" : "false") + "}");
}

Call& Call::tensors(const char* hint, const cnmlTensor_t* tensors, int count) {
  std::string list;
  for (int i = 0; i < count; ++i) list += (i ? "," : "") + std::to_string(idOf(tensors[i]));
  return raw("{\"k\":\"tensors\",\"hint\":" + quoted(hint) + ",\"ids\":[" + list + "]}");
}

Call& Call::newBuffer(void** slot) { return newHandle("void*", *slot, true); }

Call& Call::buffer(void* data, cnmlTensor_t tensor) {
  return raw("{\"k\":\"buffer\",\"id\":" + std::to_string(idOf(data)) +
             ",\"of\":" + std::to_string(idOf(tensor)) + "}");
}

Call& Call::buffers(const char* hint, void* const* data, const cnmlTensor_t* tensors, int count) {
  std::string list, of;
  for (int i = 0; i < count; ++i) {
    list += (i ? "," : "") + std::to_string(idOf(data[i]));
    of += (i ? "," : "") + std::to_string(idOf(tensors[i]));
  }
  return raw("{\"k\":\"buffers\",\"hint\":" + quoted(hint) + ",\"ids\":[" + list +
             "],\"of\":[" + of + "]}");
}

Call& Call::forwardLists(const cnmlTensor_t* in_tensors, void* const* inputs, int input_num,
                         const cnmlTensor_t* out_tensors, void* const* outputs,
                         int output_num) {
  return tensors("inputs", in_tensors, input_num)
      .buffers("in_data", inputs, in_tensors, input_num).value(input_num)
      .tensors("outputs", out_tensors, output_num)
      .buffers("out_data", outputs, out_tensors, output_num).value(output_num);
}

}  // namespace call_log
}  // namespace pz_sdk

extern "C" {

cnmlStatus_t cnmlMockCallLogStart(int flags) {
  auto& log = pz_sdk::call_log::theLog();
  std::lock_guard<std::mutex> lock(log.mu);
  if (log.on.load()) return CNML_STATUS_INVALIDARG;  // one recording at a time
  log.reset();
  log.skip_compute.store((flags & CNML_MOCK_LOG_SKIP_COMPUTE) != 0);
  log.on.store(true);
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlMockCallLogStop(void) {
  auto& log = pz_sdk::call_log::theLog();
  std::lock_guard<std::mutex> lock(log.mu);
  log.on.store(false);
  log.skip_compute.store(false);
  log.reset();
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlMockCallLogSetScope(const char* scope) {
  if (scope == nullptr) return CNML_STATUS_INVALIDPARAM;
  auto& log = pz_sdk::call_log::theLog();
  std::lock_guard<std::mutex> lock(log.mu);
  if (!log.on.load()) return CNML_STATUS_INVALIDARG;
  return pz_sdk::guarded(CNML_STATUS_BADALLOC, [&] {
    log.scope = scope;
    return CNML_STATUS_SUCCESS;
  });
}

const char* cnmlMockCallLogTake(void) {
  thread_local std::string taken;
  auto& log = pz_sdk::call_log::theLog();
  std::lock_guard<std::mutex> lock(log.mu);
  try {
    taken = "[";
    for (std::size_t i = 0; i < log.records.size(); ++i)
      taken += (i ? ",\n" : "") + log.records[i];
    taken += "]";
    log.records.clear();
  } catch (const std::bad_alloc&) {
    return nullptr;
  }
  return taken.c_str();
}

// FNV-1a, 64 bits: enough to tell a layer's few weight tensors apart.
uint64_t cnmlMockDataDigest(const void* data, size_t bytes) {
  const auto* p = static_cast<const unsigned char*>(data);
  std::uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < bytes; ++i) {
    h ^= p[i];
    h *= 1099511628211ULL;
  }
  return h;
}

}  // extern "C"
