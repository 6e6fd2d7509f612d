// CNRT subset used by Paleozoic (Cambricon Neuware runtime, generation G3 names).
//
// Names, argument order and enum values follow the public cnrt.h of CNRT 4.2/4.3
// (see docs: cnml-subset.md). The CPU mock in runtime_cpp/sdk implements exactly
// this interface, so code written against it links unchanged with the vendor library.
#ifndef PALEOZOIC_SDK_CNRT_H_
#define PALEOZOIC_SDK_CNRT_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  CNRT_RET_SUCCESS = 0,
  CNRT_RET_WARNING_FAKE_DEVICE = 1,
  CNRT_RET_ERR_NOT_READY = 632006,
  CNRT_RET_ERR_INVALID = 632007,
  CNRT_RET_ERR_NOMEM = 632008,
  CNRT_RET_ERR_NODEV = 632009,
  CNRT_RET_ERR_BUSY = 632014,
  CNRT_RET_ERR_TIMEOUT = 632015,
  CNRT_RET_ERR_UNSUPPORTED = 632020,
  CNRT_RET_ERR_INVALID_POINTER = 632021,
  CNRT_RET_ERR_INIT = 632024,
  CNRT_RET_ERR_QUEUE = 632025,
  CNRT_RET_ERR_OUT_RANGE = 632026,
  CNRT_RET_ERR_INVALID_OP = 632031,
  CNRT_RET_ERR_MLU = 632032,
  CNRT_RET_ERR_NOTIFIER = 632034,
  CNRT_RET_ERR_MEMCPY = 632036,
  CNRT_RET_ERR_UNKNOWN = 999991
} cnrtRet_t;

typedef enum {
  CNRT_MEM_TRANS_DIR_HOST2DEV = 0,
  CNRT_MEM_TRANS_DIR_DEV2DEV = 1,
  CNRT_MEM_TRANS_DIR_DEV2HOST = 2,
  CNRT_MEM_TRANS_DIR_HOST2HOST = 3,
  CNRT_MEM_TRANS_DIR_PEER2PEER = 4,
  CNRT_MEM_TRANS_DIR_NODIR = 5
} cnrtMemTransDir_t;

typedef enum {
  CNRT_CHANNEL_TYPE_DUPLICATE = -2,
  CNRT_CHANNEL_TYPE_NONE = -1,
  CNRT_CHANNEL_TYPE_0 = 0,
  CNRT_CHANNEL_TYPE_1 = 1,
  CNRT_CHANNEL_TYPE_2 = 2,
  CNRT_CHANNEL_TYPE_3 = 3
} cnrtChannelType_t;

typedef enum {
  CNRT_INVALID = 0x0,
  CNRT_FLOAT16 = 0x12,
  CNRT_FLOAT32 = 0x13,
  CNRT_FLOAT64 = 0x14,
  CNRT_INT8 = 0x21,
  CNRT_INT16 = 0x22,
  CNRT_INT32 = 0x23,
  CNRT_UINT8 = 0x31,
  CNRT_UINT32 = 0x33,
  CNRT_FIX8 = 0x41,
  CNRT_QUANT8 = 0x51,
  CNRT_BOOL = 0x61
} cnrtDataType_t;

typedef uint64_t cnrtDev_t;
typedef struct cnrtQuantizedParam* cnrtQuantizedParam_t;
typedef struct cnrtQueue* cnrtQueue_t;
typedef struct cnrtNotifier* cnrtNotifier_t;

// Parameter block of the `_V3` forwards. end must be CNRT_PARAM_END.
typedef struct {
  int* data_parallelism;
  unsigned int* affinity;
  void* end;
} cnrtInvokeFuncParam_t;
#define CNRT_PARAM_END ((void*)0xFFFFFFFF)

cnrtRet_t cnrtInit(unsigned int flags);
void cnrtDestroy(void);
const char* cnrtGetErrorStr(cnrtRet_t err_code);
cnrtRet_t cnrtGetDeviceCount(unsigned int* dev_num);
cnrtRet_t cnrtGetDeviceHandle(cnrtDev_t* pdev, int ordinal);
cnrtRet_t cnrtSetCurrentDevice(cnrtDev_t dev);
cnrtRet_t cnrtSetCurrentChannel(cnrtChannelType_t channel);

cnrtRet_t cnrtCreateQueue(cnrtQueue_t* pqueue);
cnrtRet_t cnrtDestroyQueue(cnrtQueue_t queue);
cnrtRet_t cnrtSyncQueue(cnrtQueue_t queue);

cnrtRet_t cnrtMalloc(void** pPtr, size_t bytes);
cnrtRet_t cnrtFree(void* ptr);
cnrtRet_t cnrtMemset(void* ptr, int c, size_t bytes);
cnrtRet_t cnrtMemcpy(void* dst, void* src, size_t bytes, cnrtMemTransDir_t dir);

cnrtRet_t cnrtCreateNotifier(cnrtNotifier_t* notifier);
cnrtRet_t cnrtDestroyNotifier(cnrtNotifier_t* notifier);
cnrtRet_t cnrtPlaceNotifier(cnrtNotifier_t notifier, cnrtQueue_t queue);
// Microseconds between two placed notifiers (device time; the mock reports simulated time).
cnrtRet_t cnrtNotifierDuration(cnrtNotifier_t start, cnrtNotifier_t end, float* us);

// ---- host conversions (G3) ------------------------------------------------------
// A quantised value q stands for q * 2^pos / scale. Mock rules: null -> ERR_INVALID_POINTER;
// pos outside [-32, 32] or scale not finite and > 0 -> ERR_INVALID; offset != 0 ->
// ERR_UNSUPPORTED (symmetric only).
cnrtRet_t cnrtCreateQuantizedParam(cnrtQuantizedParam_t* param, int pos, float scale,
                                   int offset);
cnrtRet_t cnrtDestroyQuantizedParam(cnrtQuantizedParam_t param);
// Converts count elements. Mock rules: FLOAT32 <-> FLOAT16 (round to nearest even / exact)
// and FLOAT32 <-> INT8 (q = clamp(rint(x * scale / 2^pos), -127, 127); x = q * 2^pos / scale),
// as runtime_cpp/sdk/kernels/numerics.h states; the INT8 casts need a param (NULL ->
// ERR_INVALID), the fp16 ones ignore it. Other pairs -> ERR_UNSUPPORTED; null src/dst ->
// ERR_INVALID_POINTER; count < 0 -> ERR_INVALID.
cnrtRet_t cnrtCastDataType(void* src, cnrtDataType_t src_type, void* dst,
                           cnrtDataType_t dst_type, int count, cnrtQuantizedParam_t param);

#ifdef __cplusplus
}
#endif

#endif  // PALEOZOIC_SDK_CNRT_H_
