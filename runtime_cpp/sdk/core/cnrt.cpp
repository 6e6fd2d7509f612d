// CNRT runtime: one fake device, queues with a simulated clock, tracked memory, notifiers.
// Forwards run synchronously at call time, so cnrtSyncQueue has nothing to wait for.
#include <cstring>
#include <mutex>
#include <set>

#include "call_log.h"
#include "device_memory.h"
#include "kernels/numerics.h"
#include "state.h"

namespace pz_sdk {
namespace {

struct Queues {
  std::mutex mu;
  std::set<cnrtQueue_t> live;
};
Queues& queues() {
  static Queues q;
  return q;
}

}  // namespace

bool queueAlive(cnrtQueue_t queue) {
  if (!queue) return false;
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mu);
  return q.live.count(queue) != 0;
}

void advanceQueue(cnrtQueue_t queue, double us) {
  Queues& q = queues();
  std::lock_guard<std::mutex> lock(q.mu);
  queue->clock_us += us;
}

}  // namespace pz_sdk

using namespace pz_sdk;
using namespace pz_sdk::call_log;  // logged(), doomed(), Call

namespace {
thread_local int g_channel = CNRT_CHANNEL_TYPE_NONE;
}  // namespace

int pz_sdk::currentChannel() { return g_channel; }

extern "C" {

cnrtRet_t cnrtInit(unsigned int) { return CNRT_RET_SUCCESS; }
void cnrtDestroy(void) {}

const char* cnrtGetErrorStr(cnrtRet_t err_code) {
  switch (err_code) {
#define PZ_NAME(x) \
  case x:          \
    return #x;
    PZ_NAME(CNRT_RET_SUCCESS)
    PZ_NAME(CNRT_RET_WARNING_FAKE_DEVICE)
    PZ_NAME(CNRT_RET_ERR_NOT_READY)
    PZ_NAME(CNRT_RET_ERR_INVALID)
    PZ_NAME(CNRT_RET_ERR_NOMEM)
    PZ_NAME(CNRT_RET_ERR_NODEV)
    PZ_NAME(CNRT_RET_ERR_BUSY)
    PZ_NAME(CNRT_RET_ERR_TIMEOUT)
    PZ_NAME(CNRT_RET_ERR_UNSUPPORTED)
    PZ_NAME(CNRT_RET_ERR_INVALID_POINTER)
    PZ_NAME(CNRT_RET_ERR_INIT)
    PZ_NAME(CNRT_RET_ERR_QUEUE)
    PZ_NAME(CNRT_RET_ERR_OUT_RANGE)
    PZ_NAME(CNRT_RET_ERR_INVALID_OP)
    PZ_NAME(CNRT_RET_ERR_MLU)
    PZ_NAME(CNRT_RET_ERR_NOTIFIER)
    PZ_NAME(CNRT_RET_ERR_MEMCPY)
    PZ_NAME(CNRT_RET_ERR_UNKNOWN)
#undef PZ_NAME
  }
  return "CNRT_RET_ERR_UNKNOWN";
}

cnrtRet_t cnrtGetDeviceCount(unsigned int* dev_num) {
  if (!dev_num) return CNRT_RET_ERR_INVALID_POINTER;
  *dev_num = 1;
  return CNRT_RET_SUCCESS;
}

// Ordinal -1 is the G3 fake device; the mock has exactly one device either way.
cnrtRet_t cnrtGetDeviceHandle(cnrtDev_t* pdev, int ordinal) {
  if (!pdev) return CNRT_RET_ERR_INVALID_POINTER;
  if (ordinal != 0 && ordinal != -1) return CNRT_RET_ERR_NODEV;
  *pdev = 0;
  return CNRT_RET_SUCCESS;
}

cnrtRet_t cnrtSetCurrentDevice(cnrtDev_t dev) {
  return dev == 0 ? CNRT_RET_SUCCESS : CNRT_RET_ERR_NODEV;
}

// Per host thread, as CNRT documents it: the DDR channel the thread's MP-1 forwards use
// (checkInvokeParam prices them on it). DUPLICATE (data on every channel) prices as NONE.
cnrtRet_t cnrtSetCurrentChannel(cnrtChannelType_t channel) {
  if (channel < CNRT_CHANNEL_TYPE_DUPLICATE || channel > CNRT_CHANNEL_TYPE_3)
    return CNRT_RET_ERR_INVALID;
  g_channel = channel;
  return logged(CNRT_RET_SUCCESS, "cnrtSetCurrentChannel", [&](Call& c) { c.value(channel); });
}

cnrtRet_t cnrtCreateQueue(cnrtQueue_t* pqueue) {
  if (!pqueue) return CNRT_RET_ERR_INVALID_POINTER;
  return guarded(CNRT_RET_ERR_NOMEM, [&] {
    auto* q = new cnrtQueue();
    Queues& reg = queues();
    std::lock_guard<std::mutex> lock(reg.mu);
    reg.live.insert(q);
    *pqueue = q;
    return CNRT_RET_SUCCESS;
  });
}

cnrtRet_t cnrtDestroyQueue(cnrtQueue_t queue) {
  if (!queue) return CNRT_RET_ERR_INVALID_POINTER;
  Queues& reg = queues();
  std::lock_guard<std::mutex> lock(reg.mu);
  if (!reg.live.erase(queue)) return CNRT_RET_ERR_QUEUE;
  delete queue;
  return CNRT_RET_SUCCESS;
}

cnrtRet_t cnrtSyncQueue(cnrtQueue_t queue) {
  if (!queue) return CNRT_RET_ERR_INVALID_POINTER;
  return queueAlive(queue) ? CNRT_RET_SUCCESS : CNRT_RET_ERR_QUEUE;
}

cnrtRet_t cnrtMalloc(void** pPtr, size_t bytes) {
  if (!pPtr) return CNRT_RET_ERR_INVALID_POINTER;
  if (bytes == 0) return CNRT_RET_ERR_INVALID;
  void* p = deviceAlloc(bytes);
  if (!p) return CNRT_RET_ERR_NOMEM;
  *pPtr = p;
  return logged(CNRT_RET_SUCCESS, "cnrtMalloc", [&](Call& c) { c.newBuffer(pPtr).value(bytes); });
}

cnrtRet_t cnrtFree(void* ptr) {
  const Doomed gone = doomedId(ptr);
  if (!ptr) return CNRT_RET_ERR_INVALID_POINTER;
  return logged(deviceFree(ptr) ? CNRT_RET_SUCCESS : CNRT_RET_ERR_INVALID_POINTER,
                "cnrtFree", [&](Call& c) {
    c.destroyed(gone, false);
  });
}

cnrtRet_t cnrtMemset(void* ptr, int c, size_t bytes) {
  if (!ptr || !isDevicePointer(ptr)) return CNRT_RET_ERR_INVALID_POINTER;
  if (!deviceRangeValid(ptr, bytes)) return CNRT_RET_ERR_INVALID;
  std::memset(ptr, c, bytes);
  return CNRT_RET_SUCCESS;
}

cnrtRet_t cnrtMemcpy(void* dst, void* src, size_t bytes, cnrtMemTransDir_t dir) {
  if (!dst || !src) return CNRT_RET_ERR_INVALID_POINTER;
  bool dst_dev = false, src_dev = false;
  switch (dir) {
    case CNRT_MEM_TRANS_DIR_HOST2DEV: dst_dev = true; break;
    case CNRT_MEM_TRANS_DIR_DEV2HOST: src_dev = true; break;
    case CNRT_MEM_TRANS_DIR_DEV2DEV: dst_dev = src_dev = true; break;
    case CNRT_MEM_TRANS_DIR_HOST2HOST: break;
    default: return CNRT_RET_ERR_INVALID;  // one device: no peer copies
  }
  if (dst_dev && !isDevicePointer(dst)) return CNRT_RET_ERR_INVALID_POINTER;
  if (src_dev && !isDevicePointer(src)) return CNRT_RET_ERR_INVALID_POINTER;
  if (dst_dev && !deviceRangeValid(dst, bytes)) return CNRT_RET_ERR_INVALID;
  if (src_dev && !deviceRangeValid(src, bytes)) return CNRT_RET_ERR_INVALID;
  if (bytes) std::memmove(dst, src, bytes);
  return CNRT_RET_SUCCESS;
}

cnrtRet_t cnrtCreateNotifier(cnrtNotifier_t* notifier) {
  if (!notifier) return CNRT_RET_ERR_INVALID_POINTER;
  return guarded(CNRT_RET_ERR_NOMEM, [&] {
    *notifier = new cnrtNotifier();
    return CNRT_RET_SUCCESS;
  });
}

cnrtRet_t cnrtDestroyNotifier(cnrtNotifier_t* notifier) {
  if (!notifier || !*notifier) return CNRT_RET_ERR_INVALID_POINTER;
  delete *notifier;
  *notifier = nullptr;
  return CNRT_RET_SUCCESS;
}

cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue) {
  if (!notifier || !queue) return CNRT_RET_ERR_INVALID_POINTER;
  if (!queueAlive(queue)) return CNRT_RET_ERR_QUEUE;
  notifier->placed = true;
  notifier->time_us = queue->clock_us;
  return CNRT_RET_SUCCESS;
}

cnrtRet_t cnrtNotifierDuration(cnrtNotifier_t start, cnrtNotifier_t end, float* us) {
  if (!start || !end || !us) return CNRT_RET_ERR_INVALID_POINTER;
  if (!start->placed || !end->placed) return CNRT_RET_ERR_NOTIFIER;
  *us = static_cast<float>(end->time_us - start->time_us);
  return CNRT_RET_SUCCESS;
}

// ---- host conversions ----------------------------------------------------------------------

cnrtRet_t cnrtCreateQuantizedParam(cnrtQuantizedParam_t* param, int pos, float scale,
                                   int offset) {
  if (!param) return CNRT_RET_ERR_INVALID_POINTER;
  if (!numerics::validPosition(pos) || !numerics::validScale(scale)) return CNRT_RET_ERR_INVALID;
  if (offset != 0) return CNRT_RET_ERR_UNSUPPORTED;  // symmetric only
  const cnrtRet_t status = guarded(CNRT_RET_ERR_NOMEM, [&] {
    *param = new cnrtQuantizedParam{pos, scale};
    return CNRT_RET_SUCCESS;
  });
  return logged(status, "cnrtCreateQuantizedParam", [&](Call& c) {
    c.created(param).value(pos).value(scale).value(offset);
  });
}

cnrtRet_t cnrtDestroyQuantizedParam(cnrtQuantizedParam_t param) {
  const Doomed gone = doomedId(param);
  if (!param) return CNRT_RET_ERR_INVALID_POINTER;
  delete param;
  return logged(CNRT_RET_SUCCESS, "cnrtDestroyQuantizedParam",
                [&](Call& c) { c.destroyed(gone, false); });
}

cnrtRet_t cnrtCastDataType(void* src, cnrtDataType_t src_type, void* dst,
                           cnrtDataType_t dst_type, int count, cnrtQuantizedParam_t param) {
  if (!src || !dst) return CNRT_RET_ERR_INVALID_POINTER;
  if (count < 0) return CNRT_RET_ERR_INVALID;
  const std::size_t n = static_cast<std::size_t>(count);
  std::size_t src_bytes = 0, dst_bytes = 0;
  if (src_type == CNRT_FLOAT32 && dst_type == CNRT_FLOAT16) {
    numerics::encodeHalf(static_cast<const float*>(src), static_cast<std::uint16_t*>(dst), n, 1);
    src_bytes = 4 * n;
    dst_bytes = 2 * n;
  } else if (src_type == CNRT_FLOAT16 && dst_type == CNRT_FLOAT32) {
    numerics::decodeHalf(static_cast<const std::uint16_t*>(src), static_cast<float*>(dst), n, 1);
    src_bytes = 2 * n;
    dst_bytes = 4 * n;
  } else if (src_type == CNRT_FLOAT32 && dst_type == CNRT_INT8) {
    if (!param) return CNRT_RET_ERR_INVALID;
    numerics::quantizeArray(static_cast<const float*>(src), static_cast<std::int8_t*>(dst), n,
                            param->position, param->scale);
    src_bytes = 4 * n;
    dst_bytes = n;
  } else if (src_type == CNRT_INT8 && dst_type == CNRT_FLOAT32) {
    if (!param) return CNRT_RET_ERR_INVALID;
    const auto* q = static_cast<const std::int8_t*>(src);
    auto* x = static_cast<float*>(dst);
    for (std::size_t i = 0; i < n; ++i) x[i] = numerics::dequantize(q[i], param->position, param->scale);
    src_bytes = n;
    dst_bytes = 4 * n;
  } else {
    return CNRT_RET_ERR_UNSUPPORTED;
  }
  return logged(CNRT_RET_SUCCESS, "cnrtCastDataType", [&](Call& c) {
    c.hostData(src, src_bytes).value(src_type).hostOut(dst, dst_bytes).value(dst_type)
        .value(count);
    if (param) c.handle(param);
    else c.null();
  });
}

}  // extern "C"
