// Error types, SDK status checks, shape helpers and enum_table.h's unknown-name error.
#include <sstream>

#include "detail.h"

namespace pz {
namespace {

const char* cnmlStatusName(int status) {
  switch (status) {
    case CNML_STATUS_NODEVICE: return "CNML_STATUS_NODEVICE";
    case CNML_STATUS_SUCCESS: return "CNML_STATUS_SUCCESS";
    case CNML_STATUS_DOMAINERR: return "CNML_STATUS_DOMAINERR";
    case CNML_STATUS_INVALIDARG: return "CNML_STATUS_INVALIDARG";
    case CNML_STATUS_LENGTHERR: return "CNML_STATUS_LENGTHERR";
    case CNML_STATUS_OUTOFRANGE: return "CNML_STATUS_OUTOFRANGE";
    case CNML_STATUS_RANGEERR: return "CNML_STATUS_RANGEERR";
    case CNML_STATUS_OVERFLOWERR: return "CNML_STATUS_OVERFLOWERR";
    case CNML_STATUS_UNDERFLOWERR: return "CNML_STATUS_UNDERFLOWERR";
    case CNML_STATUS_INVALIDPARAM: return "CNML_STATUS_INVALIDPARAM";
    case CNML_STATUS_BADALLOC: return "CNML_STATUS_BADALLOC";
    case CNML_STATUS_BADTYPEID: return "CNML_STATUS_BADTYPEID";
    case CNML_STATUS_BADCAST: return "CNML_STATUS_BADCAST";
    case CNML_STATUS_UNSUPPORT: return "CNML_STATUS_UNSUPPORT";
    default: return "CNML_STATUS_<unknown>";
  }
}

const char* cnrtRetName(int ret) {
  switch (ret) {
    case CNRT_RET_SUCCESS: return "CNRT_RET_SUCCESS";
    case CNRT_RET_WARNING_FAKE_DEVICE: return "CNRT_RET_WARNING_FAKE_DEVICE";
    case CNRT_RET_ERR_NOT_READY: return "CNRT_RET_ERR_NOT_READY";
    case CNRT_RET_ERR_INVALID: return "CNRT_RET_ERR_INVALID";
    case CNRT_RET_ERR_NOMEM: return "CNRT_RET_ERR_NOMEM";
    case CNRT_RET_ERR_NODEV: return "CNRT_RET_ERR_NODEV";
    case CNRT_RET_ERR_BUSY: return "CNRT_RET_ERR_BUSY";
    case CNRT_RET_ERR_TIMEOUT: return "CNRT_RET_ERR_TIMEOUT";
    case CNRT_RET_ERR_UNSUPPORTED: return "CNRT_RET_ERR_UNSUPPORTED";
    case CNRT_RET_ERR_INVALID_POINTER: return "CNRT_RET_ERR_INVALID_POINTER";
    case CNRT_RET_ERR_INIT: return "CNRT_RET_ERR_INIT";
    case CNRT_RET_ERR_QUEUE: return "CNRT_RET_ERR_QUEUE";
    case CNRT_RET_ERR_OUT_RANGE: return "CNRT_RET_ERR_OUT_RANGE";
    case CNRT_RET_ERR_INVALID_OP: return "CNRT_RET_ERR_INVALID_OP";
    case CNRT_RET_ERR_MLU: return "CNRT_RET_ERR_MLU";
    case CNRT_RET_ERR_NOTIFIER: return "CNRT_RET_ERR_NOTIFIER";
    case CNRT_RET_ERR_MEMCPY: return "CNRT_RET_ERR_MEMCPY";
    case CNRT_RET_ERR_UNKNOWN: return "CNRT_RET_ERR_UNKNOWN";
    default: return "CNRT_RET_<unknown>";
  }
}

std::string sdkMessage(const std::string& layer, const std::string& call, int status,
                       const std::string& status_name) {
  std::ostringstream out;
  out << layer << ": " << call << " failed with " << status_name << " (" << status << ")";
  return out.str();
}

}  // namespace

std::string shapeToString(const Shape& shape) {
  std::ostringstream out;
  out << "[";
  for (std::size_t i = 0; i < shape.size(); ++i) out << (i ? ", " : "") << shape[i];
  out << "]";
  return out.str();
}

std::size_t elementCount(const Shape& shape) {
  std::size_t n = 1;
  for (int d : shape) n *= static_cast<std::size_t>(d > 0 ? d : 0);
  return n;
}

SdkError::SdkError(const std::string& layer, const std::string& call, int status,
                   const std::string& status_name, const std::string& hint)
    : std::runtime_error(sdkMessage(layer, call, status, status_name) +
                         (hint.empty() ? "" : "; " + hint)),
      layer_(layer),
      status_(status) {}

void check(cnmlStatus_t status, const std::string& layer, const char* call) {
  if (status != CNML_STATUS_SUCCESS) throw SdkError(layer, call, status, cnmlStatusName(status));
}

void check(cnmlStatus_t status, const std::string& layer, const char* call,
           const std::string& hint) {
  if (status != CNML_STATUS_SUCCESS) {
    throw SdkError(layer, call, status, cnmlStatusName(status), hint);
  }
}

void check(cnrtRet_t status, const std::string& layer, const char* call) {
  if (status != CNRT_RET_SUCCESS) throw SdkError(layer, call, status, cnrtRetName(status));
}

void checkCompile(cnmlStatus_t status, const std::string& layer, const char* call, int mp) {
  if (status == CNML_STATUS_SUCCESS) return;
  std::string hint;
  if (mp < 1 || mp > kMaxMp) {
    hint = "mp " + std::to_string(mp) + " is outside 1.." + std::to_string(kMaxMp) +
           " (the MLU100's cores); change the block's MP in its pz::BlockKnobs";
  }
  throw SdkError(layer, call, status, cnmlStatusName(status), hint);
}

namespace detail {

namespace {

std::string callName(const char* call_text) {
  const std::string text(call_text);
  return text.substr(0, text.find('('));
}

}  // namespace

cnmlStatus_t checkCall(cnmlStatus_t status, const std::string& owner, const char* call_text) {
  if (status != CNML_STATUS_SUCCESS) check(status, owner, callName(call_text).c_str());
  return status;
}

cnrtRet_t checkCall(cnrtRet_t status, const std::string& owner, const char* call_text) {
  if (status != CNRT_RET_SUCCESS) check(status, owner, callName(call_text).c_str());
  return status;
}

int normaliseAxis(const std::string& layer, int axis, int rank) {
  const int normalised = axis < 0 ? axis + rank : axis;
  if (normalised < 0 || normalised >= rank) {
    throw Error(layer + ": axis " + std::to_string(axis) + " is out of range for a " +
                std::to_string(rank) + "-D tensor; use an axis in [" + std::to_string(-rank) +
                ", " + std::to_string(rank - 1) + "]");
  }
  return normalised;
}

void throwUnknownName(std::string_view where, const char* what, std::string_view text,
                      const std::string& choices) {
  std::string message = where.empty() ? "" : std::string(where) + ": ";
  message += std::string("unknown ") + what + " '" + std::string(text) + "'; use " + choices;
  throw Error(message);
}

void requireNchw(const Shape& in, const char* what) {
  if (in.size() != 4) {
    throw Error(std::string(what) + " needs a 4-D NCHW input, got " + shapeToString(in));
  }
}

// Floor or ceil division of the sliding range; a ceil window must start inside input + pad_begin.
int slidingOutput(int in, int pad_begin, int pad_end, int effective_window, int stride, bool ceil,
                  const char* axis, const char* what) {
  if (stride < 1) throw Error(std::string(what) + ": stride along " + axis + " must be >= 1");
  const int span = in + pad_begin + pad_end - effective_window;
  if (span < 0) {
    throw Error(std::string(what) + ": window of " + std::to_string(effective_window) +
                " along " + axis + " is larger than the padded input (" +
                std::to_string(in + pad_begin + pad_end) + ")");
  }
  int out = (ceil ? (span + stride - 1) / stride : span / stride) + 1;
  if (ceil && (out - 1) * stride >= in + pad_begin) --out;
  return out;
}

int channels(const std::string& layer, const Shape& in) {
  if (in.size() < 2) {
    throw Error(layer + ": needs an input with a channel axis (axis 1), got " + shapeToString(in));
  }
  return in[1];
}

}  // namespace detail
}  // namespace pz
