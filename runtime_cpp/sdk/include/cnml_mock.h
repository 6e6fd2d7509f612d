/* Paleozoic mock SDK extensions. NOT part of CNML: these calls exist only in the CPU mock
 * SDK (runtime_cpp/sdk) and expose its device model, so the optimizer plans with exactly
 * the simulated time the mock reports. Code that must also build against the real vendor
 * library guards its use of this header. */
#ifndef PALEOZOIC_CNML_MOCK_H_
#define PALEOZOIC_CNML_MOCK_H_

#include <cnml.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Loads a device profile file (`key = value` lines, see runtime_cpp/profiles/mlu100.profile)
 * and makes it the process-wide profile used by every later compile (base and fusion ops)
 * and estimate. Missing file, unknown key, bad number -> CNML_STATUS_INVALIDPARAM and the
 * profile is unchanged; cnmlMockLastError() then tells why. */
cnmlStatus_t cnmlMockSetDeviceProfile(const char* path);

/* Restores the compiled-in profile (equal to the bundled mlu100.profile). */
cnmlStatus_t cnmlMockResetDeviceProfile(void);

/* The current profile as (key, value) pairs in file order: index 0..count-1. *key points to
 * static storage. index out of range -> CNML_STATUS_INVALIDPARAM. */
int cnmlMockDeviceProfileSize(void);
cnmlStatus_t cnmlMockGetDeviceProfileItem(int index, const char** key, double* value);

/* Message of the last failed cnmlMock* call in this thread ("" when none). */
const char* cnmlMockLastError(void);

/* The data-preprocess strategy in effect for a tensor (cnmlSetDataPreprocessStrategy):
 * CNML_CPU_MLU_BALANCE comes back resolved to CNML_CPU_PRIORITY or CNML_MLU_PRIORITY, the
 * side whose conversion the device model prices lower for the tensor (its device side on
 * the whole chip). Null -> INVALIDPARAM; no strategy set -> INVALIDARG. */
cnmlStatus_t cnmlMockGetDataPreprocessStrategy(cnmlTensor_t tensor,
                                               cnmlDataPreprocessStrategy_t* dps);

/* What moving a session I/O tensor of `elements` values costs with its conversion between
 * `host` and `device` dtypes on the device (on_device != 0, MLU priority) or the host: host
 * microseconds (conversion there and the copy over the host link) and device microseconds
 * added to a fusion op on mp cores (device_model.h, ioConversionUs). Null outputs, a dtype
 * other than FLOAT32/FLOAT16 or mp outside 1..cores -> INVALIDPARAM. */
cnmlStatus_t cnmlMockEstimatePreprocessUs(size_t elements, cnmlDataType_t host,
                                          cnmlDataType_t device, int on_device, int mp,
                                          double* host_us, double* device_us);

/* Simulated device microseconds of `ops` fused into one fusion op compiled for mp cores:
 * inputs are the tensors the ops read but do not produce, `outputs` leave the fusion, every
 * other tensor an op writes is an intermediate. Equals what cnmlCompileFusionOp +
 * cnmlComputeFusionOpForward_V4 report for the same ops, outputs and core_limit. The ops
 * must be neither compiled nor fused yet, or they may be; only their descriptions are
 * read. mp outside 1..32 or a null/empty list -> CNML_STATUS_INVALIDPARAM. */
cnmlStatus_t cnmlMockEstimateFusionUs(cnmlBaseOp_t ops[], int op_num, cnmlTensor_t outputs[],
                                      int output_num, int mp, float* us);

/* Where the time of cnmlMockEstimateFusionUs goes. values receives up to value_num of, in
 * order: total us, launch + barrier us, sum of per-layer max(compute, dram) us, compute us,
 * of which recomputed halo rows us, DRAM us, spilled intermediate bytes (each way), peak live
 * intermediate bytes, in-block exchanges (barriers). */
cnmlStatus_t cnmlMockExplainFusion(cnmlBaseOp_t ops[], int op_num, cnmlTensor_t outputs[],
                                   int output_num, int mp, double* values, int value_num);

/* A layer computed on the host (a Paleozoic host layer: integer index arithmetic, casts of
 * integer inputs, ArgMax): the op stands for its copies, the inputs to the host
 * (to_host_bytes in all) and the output back (to_device_bytes), so the device model prices
 * them at host_link_gbps and the queue's clock advances by that time when it runs. It has no
 * device arithmetic; it compiles like a base op, and cnmlFuseOp refuses it (INVALIDPARAM):
 * host work cannot join a fusion op. */
cnmlStatus_t cnmlMockCreateHostTransferOp(cnmlBaseOp_t* op, cnmlTensor_t inputs[],
                                          int input_num, cnmlTensor_t output,
                                          size_t to_host_bytes, size_t to_device_bytes);
/* Runs it: checks it is compiled and advances the queue's clock by its time. */
cnmlStatus_t cnmlMockComputeHostTransferOpForward(cnmlBaseOp_t op, cnrtQueue_t queue);

/* What computes `op` once compiled, alone or in a compiled fusion op: the backend library's
 * kernel (oneDNN SDK: "convolution brgconv_1x1:avx512_core", with "(N ops per call)" when
 * N ops share it as post-ops; "fp16 via ..." / "int8 ..." for reduced precision), or "mock kernel KIND"
 * (the SDK's own C++ kernels: every op on the mock SDK, the ops oneDNN does not compute on
 * the oneDNN SDK). Thread-local storage valid until the next call; NULL before compile. */
const char* cnmlMockOpImplementation(cnmlBaseOp_t op);

/* Bytes of a compiled fusion op's scratch arena: the intermediates its steps pass, placed
 * by lifetime so that values never alive at the same step share bytes. */
cnmlStatus_t cnmlMockFusionScratchBytes(cnmlFusionOp_t fusion_op, size_t* bytes);

/* Deferred preparation, for sessions built to be timed: while on (for the calling thread
 * only), cnmlCompileBaseOp and cnmlCompileFusionOp check the op and set its device time as
 * usual, and take what the caller lent or handed over, but leave the kernels' preparation
 * (packed weights, merged steps, the scratch arena) to the op's first forward that computes;
 * forwards that skip compute (CNML_MOCK_LOG_SKIP_COMPUTE) never prepare it. Packing is a
 * seventh of timing a block whose forwards compute nothing. Until prepared, a fused op's
 * cnmlMockOpImplementation is NULL; cnmlMockFusionScratchBytes prepares the op first. */
cnmlStatus_t cnmlMockSetDeferredPreparation(int on);

/* Simulated device microseconds of one base op compiled alone for mp cores (what
 * cnmlCompileBaseOp + its forward report). */
cnmlStatus_t cnmlMockEstimateBaseOpUs(cnmlBaseOp_t op, int mp, float* us);

/* Cost table of a list of ops in topological order. last_use[i]: index of the last op in the
 * list reading op i's output, or >= op_num when the output is needed after the list (graph
 * output, read by an op outside the list, or read by nobody). table has op_num * (op_num + 1)
 * * mp_num doubles: table[(i * (op_num + 1) + j) * mp_num + k] is the time of ops[i, j) on
 * mps[k] cores, fused when j > i + 1 (block outputs: ops whose last_use >= j), the base-op
 * time when j == i + 1, and +inf when j <= i. Computed incrementally (fast), equal to the two
 * estimates above entry by entry. */
cnmlStatus_t cnmlMockCostTable(cnmlBaseOp_t ops[], int op_num, const int last_use[],
                               const int mps[], int mp_num, double* table);

/* Precision overrides of the estimates below (planning a precision before building the
 * session in it). AS_BUILT prices each op as created (its dtypes and int8 mode); FP32, FP16
 * and INT8 price it as if built so: activations 4 / 2 / 2 bytes, weights 4 / 2 / 2 bytes
 * except an int8 filter at 1 byte, compute at the precision's peak (device_model.h). INT8
 * on an op other than Conv, ConvGroup or Mlp prices it as FP16; Cast ops are always priced
 * as built. */
typedef enum {
  CNML_MOCK_PRECISION_AS_BUILT = -1,
  CNML_MOCK_PRECISION_FP32 = 0,
  CNML_MOCK_PRECISION_FP16 = 1,
  CNML_MOCK_PRECISION_INT8 = 2
} cnmlMockPrecision_t;

/* The estimates above with one cnmlMockPrecision_t per op (precisions may be NULL: all as
 * built, which is what the versions without _V2 do). A value outside the enum ->
 * CNML_STATUS_INVALIDPARAM. */
cnmlStatus_t cnmlMockExplainFusion_V2(cnmlBaseOp_t ops[], int op_num, const int precisions[],
                                      cnmlTensor_t outputs[], int output_num, int mp,
                                      double* values, int value_num);
cnmlStatus_t cnmlMockEstimateBaseOpUs_V2(cnmlBaseOp_t op, int precision, int mp, float* us);
cnmlStatus_t cnmlMockCostTable_V2(cnmlBaseOp_t ops[], int op_num, const int last_use[],
                                  const int precisions[], const int mps[], int mp_num,
                                  double* table);

/* The estimates above for a forward with this `extra` (a cnrtInvokeFuncParam_t, as the
 * forwards take it; NULL is what the _V2 versions price): its data parallelism (one group of
 * frames on mp cores, the groups sharing DRAM) and its affinity (the DRAM share of the cores
 * it names: device_model.h). A param the forwards would refuse for mp (cnml.h) ->
 * CNML_STATUS_INVALIDPARAM. */
cnmlStatus_t cnmlMockExplainFusion_V3(cnmlBaseOp_t ops[], int op_num, const int precisions[],
                                      cnmlTensor_t outputs[], int output_num, int mp,
                                      const cnrtInvokeFuncParam_t* extra, double* values,
                                      int value_num);
cnmlStatus_t cnmlMockEstimateBaseOpUs_V3(cnmlBaseOp_t op, int precision, int mp,
                                         const cnrtInvokeFuncParam_t* extra, float* us);
cnmlStatus_t cnmlMockCostTable_V3(cnmlBaseOp_t ops[], int op_num, const int last_use[],
                                  const int precisions[], const int mps[], int mp_num,
                                  const cnrtInvokeFuncParam_t* extra, double* table);

/* Call log: while recording, every successful CNML call that creates, configures, binds,
 * fuses, compiles, runs or destroys something, and cnrtMalloc / cnrtFree, is appended to a
 * process-wide log (device, queue and notifier calls are not). Paleozoic prints a recorded
 * wrapper session as the same session in direct SDK calls (`--emit raw`).
 * Start fails with CNML_STATUS_INVALIDARG while a recording is on; Stop ends it and clears
 * the log. With CNML_MOCK_LOG_SKIP_COMPUTE, forwards are checked and recorded (the queue's
 * clock advances) but compute nothing. */
typedef enum {
  CNML_MOCK_LOG_COMPUTE = 0,
  CNML_MOCK_LOG_SKIP_COMPUTE = 1
} cnmlMockCallLogFlag_t;
cnmlStatus_t cnmlMockCallLogStart(int flags);
cnmlStatus_t cnmlMockCallLogStop(void);
/* Tags the following records (the caller's name for what it builds, e.g. a layer). */
cnmlStatus_t cnmlMockCallLogSetScope(const char* scope);
/* The records since the last take, removed from the log, as a JSON array of
 * {"fn": name, "scope": tag, "args": [...]}; handles are ids (0: not created while
 * recording). Thread-local storage valid until the next take; NULL when out of memory. */
const char* cnmlMockCallLogTake(void);
/* The digest the log records for bound const data (64-bit FNV-1a of the bytes). */
uint64_t cnmlMockDataDigest(const void* data, size_t bytes);

#ifdef __cplusplus
}
#endif

#endif /* PALEOZOIC_CNML_MOCK_H_ */
