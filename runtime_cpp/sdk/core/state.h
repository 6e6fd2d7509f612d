// Handle structs behind the opaque CNML/CNRT pointers, and the op description shared by
// base ops, fusion ops, the executor and the device model.
#ifndef PZ_SDK_STATE_H_
#define PZ_SDK_STATE_H_

#include <cnml.h>
#include <cnrt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "op_kinds.h"
#include "device_model/op_timing.h"
#include "precision.h"

namespace pz_sdk {

constexpr int kMaxDims = 6;
constexpr int kMaxCoreLimit = 32;  // MLU100

using Dims = std::vector<int>;
std::size_t elementCount(const Dims& dims);

// Tensor state lives behind a shared_ptr so ops keep FILTER/CONST data alive after the
// caller destroys the handle (Paddle-Lite and MegEngine destroy early).
// Quantisation of a tensor (filters): per tensor, or per channel (axis 0); a quantity is
// set when its per-tensor flag is on or its per-channel vector is non-empty.
struct TensorQuant {
  bool has_position = false, has_scale = false;
  int position = 0;
  float scale = 1.0f;
  std::vector<int> positions;  // per channel
  std::vector<float> scales;   // per channel
  bool positionSet() const { return has_position || !positions.empty(); }
  bool scaleSet() const { return has_scale || !scales.empty(); }
};

struct TensorImpl {
  std::uint64_t id = 0;  // identity for fusion I/O matching; handles may be reused
  cnmlTensorType_t type = CNML_TENSOR;
  Dims dims;
  bool shape_set = false;
  cnmlDataType_t dtype = CNML_DATA_FLOAT32;
  // Bound data decoded exactly to fp32 (FLOAT32 as given, FLOAT16 decoded), which the fp32
  // kernels read; INT8 data as its codes in `q` only (what the int8 kernels read).
  std::vector<float> data;
  std::vector<std::int8_t> q;
  bool bound = false;
  // FLOAT32 data bound by pointer, as the SDK's cnmlBindConstData_V2 takes it: the caller's
  // buffer, which must stay valid until the ops reading it compile; `data` is then empty.
  // Compiling copies what an op keeps (ownBorrowedConsts), so the session never holds a
  // second plain copy of every weight at once.
  const float* borrowed = nullptr;
  // Data copied from a caller's buffer (ownBorrowedConsts): that buffer, still valid while
  // the op compiles, so a rebuild during the compile can read it again (borrowingCopy).
  const float* source = nullptr;
  // The copy ownBorrowedConsts made of `borrowed`, shared by every op that reads this
  // binding (an LSTM's cells, one op per time step, read the same weights).
  std::weak_ptr<TensorImpl> owned_copy;
  // Data bound with free_aftercompile: FLOAT32 copied, FLOAT16 and INT8 decoded at bind
  // into a const of the SDK's own (the caller's buffer is freed there), which ops read as
  // they read `owned_copy`; held
  // until the compile reading it is done with it (releaseGiven). The const is then spent:
  // an op compiled later cannot read it (constsBound).
  std::shared_ptr<TensorImpl> given;
  bool spent = false;
  TensorQuant quant;
  // A FILTER's fraction of zero pairs (output channels 2i and 2i+1, both zero at one
  // position), counted when its data is bound; what a sparse op skips. -1: not bound.
  double zero_pairs = -1.0;
  // Shared with a compiled op (compiledCopy): the handle copies it before any change, so
  // that rebinding never changes a compiled op and the data is held once meanwhile.
  bool frozen = false;
  // cnmlSetDataPreprocessStrategy: -1 none, else the strategy (CNML_CPU_MLU_BALANCE already
  // resolved to CPU or MLU priority), and the twin's dtype (the host form).
  int preprocess = -1;
  cnmlDataType_t twin_dtype = CNML_DATA_FLOAT32;
  // The dtype of the device buffer a forward passes for this tensor: the twin's when the
  // fusion op converts on the device (MLU priority), the tensor's otherwise.
  cnmlDataType_t transferType() const;
};
using TensorRef = std::shared_ptr<TensorImpl>;

// Activation operand snapshot: later reshapes of the handle must not change a built op.
std::size_t dtypeSize(cnmlDataType_t dtype);  // FLOAT32 4, FLOAT16 2, INT8 1
// A fresh tensor id (TensorImpl::id), for values the SDK itself adds to a fusion op.
std::uint64_t newTensorId();
// The calling thread's DDR channel (cnrtSetCurrentChannel; CNRT_CHANNEL_TYPE_NONE: none).
int currentChannel();

struct Operand {
  std::uint64_t id = 0;
  Dims dims;
  cnmlDataType_t dtype = CNML_DATA_FLOAT32;
  std::size_t elements() const { return elementCount(dims); }
  std::size_t bytes() const { return elements() * dtypeSize(dtype); }
};

// One per row of the op-kind table (op_kinds.h).
enum class OpKind {
#define PZ_SDK_OP_KIND_ENUM(kind, name, prepare, kernel, work) kind,
  PZ_SDK_OP_KINDS(PZ_SDK_OP_KIND_ENUM)
#undef PZ_SDK_OP_KIND_ENUM
};
const char* opKindName(OpKind kind);

// Which two-input element-wise op a kBinary op computes.
// The comparisons and the logic ops write 1.0 where true and 0.0 where not (CNML's bools are
// floats); the logic ops read any nonzero value, nan included, as true.
enum class BinaryOp {
  kAdd, kSub, kMult, kRealDiv, kPow,
  kEqual, kNotEqual, kLess, kLessEqual, kGreater, kGreaterEqual, kAnd, kOr, kXor
};
// Which one-input element-wise op a kUnary op computes.
enum class UnaryFn {
  kSqrt, kRsqrt, kPower, kErf, kGelu, kGeluTanh, kExp, kLog, kAbs, kNeg, kNot, kClip, kSin,
  kCos
};
// Which reduction a kReduce op computes.
enum class ReduceFn { kSum, kMean, kMax, kMin, kProd };

struct ConvParams {
  int sh = 1, sw = 1, dh = 1, dw = 1, pt = 0, pb = 0, pl = 0, pr = 0;
  bool sparse = false;  // cnmlCreateConvOpParam's CNML_Sparse
};
struct PoolParams {
  int kh = 1, kw = 1, sh = 1, sw = 1, pt = 0, pb = 0, pl = 0, pr = 0, dh = 1, dw = 1;
  cnmlPoolMode_t mode = CNML_POOL_MAX;
  cnmlPoolStrategyMode_t strategy = CNML_POOL_KVALID;
  bool real = true;
  float blend = 0.0f;
};
struct LrnParams {
  cnmlLrnType_t type = CNML_LRN_V3;
  int size = 1;
  double alpha = 1e-4, beta = 0.75, k = 1.0;
};
// Crops of the full transposed convolution (hu, hd, wl, wr) and ONNX's output padding.
struct DeconvParams {
  int sh = 1, sw = 1, dh = 1, dw = 1, hu = 0, hd = 0, wl = 0, wr = 0, oph = 0, opw = 0;
};
// NearestNeighbor and Interp: output size and the output -> input coordinate mapping.
struct InterpParams {
  int out_h = 1, out_w = 1;
  cnmlInterpCoordinateMode_t coords = CNML_INTERP_ASYMMETRIC;
  cnmlNearestNeighborRoundMode_t round = CNML_NEAREST_FLOOR;  // NearestNeighbor only
};
// cnmlCreateRnnOp's choices; inputs are x, then h0 and c0 when has_h / has_c.
struct RnnParams {
  cnmlRnnCell_t cell = CNML_RNN_LSTM;
  cnmlRnnOutput_t output = CNML_RNN_OUTPUT_Y;
  bool reverse = false, batch_first = false, has_h = false, has_c = false;
  int hidden = 0, gates = 4;
};
// One entry per axis; validated at param creation (0 <= begin < end, stride >= 1).
struct SliceParams {
  Dims begin, end, stride;
};

// Everything needed to run an op: what the creator validated plus its parameters.
// consts: conv/deconv/mlp {filter, bias or null}; batchnorm {mean, var}; scale {alpha, beta
// or null}; prelu {slope}; concat its CNML_CONST operands, in operand order.
struct OpDesc {
  OpKind kind = OpKind::kActive;
  std::vector<Operand> inputs, outputs;
  std::vector<TensorRef> consts;
  // kConcat: the operands in concat order, i >= 0 for inputs[i], -1 - j for consts[j].
  std::vector<int> pieces;
  ConvParams conv;
  int group = 1;
  PoolParams pool;
  LrnParams lrn;
  cnmlActiveFunction_t active = CNML_ACTIVE_NONE;
  int axis = 0;
  Dims perm;
  BinaryOp binary = BinaryOp::kAdd;
  bool broadcast = false;  // kBinary: input 2 broadcasts to input 1 (a Broadcast* creator)
  SliceParams slice;
  DeconvParams deconv;  // with `group`
  InterpParams interp;
  RnnParams rnn;  // consts {W, R, B or null, P or null}
  cnmlCastType_t cast = CNML_CAST_FLOAT32_TO_FLOAT16;
  bool trans_a = false, trans_b = false;  // kBatchDot
  float eps = 1e-5f;                       // kLayerNorm (axis: the first normalised axis)
  UnaryFn unary = UnaryFn::kSqrt;          // kUnary
  float power = 1.0f;                      // kUnary kPower
  double lower = 0.0, upper = 0.0;         // kUnary kClip: its bounds
  ReduceFn reduce = ReduceFn::kSum;        // kReduce, over the (ascending) input axes `axes`
  Dims axes;
  double to_host_bytes = 0.0, to_device_bytes = 0.0;  // kHostTransfer
  // int8 compute of the activation input (Conv, ConvGroup, Mlp), from
  // cnmlSetOperationComputingDataType.
  bool int8 = false;
  int in_position = 0;
  float in_scale = 1.0f;
  // Conv / Mlp created with CNML_Sparse: the device skips the filter's zero pairs (its time,
  // op_cost.h); the numbers are the dense op's.
  bool sparse = false;
  // One of a fusion op's ops (cnmlFuseOp): a backend may pass values between them in its own
  // layouts.
  bool fused = false;
};

// fp32, fp16 (FLOAT16 activations) or int8 (int8 compute set) for Conv/ConvGroup/Mlp.
Precision precisionOf(const OpDesc& op);

struct PreparedOp;  // executor.h

// Clones bound const tensors so later rebinding or destroying by the caller has no effect;
// unbound ones stay shared so binding after cnmlFuseOp is still seen at compile.
OpDesc compiledCopy(const OpDesc& op);

// Gives the op its own copy of every const bound by pointer (TensorImpl::borrowed), read
// from the caller's buffer now; other consts stay shared.
void ownBorrowedConsts(OpDesc& op);

// A copy of the op whose consts read from the callers' buffers again where they were
// copied from one: it holds no weights, and can rebuild the op (after ownBorrowedConsts)
// until the compile returns, while those buffers are valid.
OpDesc borrowingCopy(const OpDesc& op);

// Replaces the op's bound constants by their metadata alone (dims, dtype, quantisation),
// for a compiled op that holds its weights in another form (a backend's reordered copy,
// packed GEMM panels), so that it does not keep the plain copy alive too.
void stripConstData(OpDesc& op);

// `t`'s decoded FLOAT16 or INT8 data (`data`, `q`) moved into a const of its own, for a
// binding with free_aftercompile (TensorImpl::given), so that it goes with the compile.
TensorRef givenDecoded(TensorImpl& t);
// Decodes `n` binary16 values of a buffer handed over (free_aftercompile) into `to`, giving
// the buffer's pages back as it goes (the caller frees it right after).
void decodeHalfDraining(std::vector<float>& to, const std::uint16_t* from, std::size_t n);

// The SDK's own copy of `t`'s FLOAT32 `data`, bound with free_aftercompile
// (TensorImpl::given); `data` is the caller's buffer, which is then only fit to be freed.
TensorRef givenCopy(const TensorImpl& t, float* data);

// Drops a const's data bound with free_aftercompile (TensorImpl::given), once every op of
// the compile that reads it is compiled and will not be rebuilt; nothing if it has none.
void releaseGiven(TensorImpl& t);

// True when every FILTER/CONST operand has data (bound, and not freed after an earlier
// compile).
bool constsBound(const OpDesc& op);

int threadsFor(int core_limit);

// Whether ops compiled on this thread leave their kernels' preparation to their first
// computing forward (cnmlMockSetDeferredPreparation).
bool preparationDeferred();
void setPreparationDeferred(bool on);

}  // namespace pz_sdk

struct cnmlTensor {
  pz_sdk::TensorRef impl;
};
struct cnmlConvOpParam {
  pz_sdk::ConvParams p;
};
struct cnmlPoolOpParam {
  pz_sdk::PoolParams p;
};
struct cnmlLrnOpParam {
  pz_sdk::LrnParams p;
};
struct cnmlReshapeOpParam {
  pz_sdk::Dims dims;
};
struct cnmlTransposeOpParam {
  pz_sdk::Dims order;
};
struct cnmlNdStridedSliceOpParam {
  pz_sdk::SliceParams p;
};
struct cnmlDeconvOpParam {
  pz_sdk::DeconvParams p;
};
struct cnmlNearestNeighborOpParam {
  pz_sdk::InterpParams p;
};
struct cnmlInterpOpParam {
  pz_sdk::InterpParams p;
};
struct cnmlCpuTensor {
  cnmlDataType_t dtype = CNML_DATA_FLOAT32;
  std::size_t elements = 0;
};
struct cnmlQuantizedParam {
  int position = 0;
  float scale = 1.0f;
};
struct cnrtQuantizedParam {
  int position = 0;
  float scale = 1.0f;
};

struct cnmlBaseOp {
  pz_sdk::OpDesc desc;
  bool compiled = false;
  bool fused = false;  // then it only runs through its fusion op
  std::unique_ptr<pz_sdk::PreparedOp> prepared;
  // Compiled with its preparation deferred (cnmlMockSetDeferredPreparation): `prepared` is
  // made, on `threads`, by the first forward that computes.
  bool deferred = false;
  int threads = 1;
  // Simulated device time of a forward, per launch (set at compile; op_cost.h).
  pz_sdk::OpTiming timing;
  // Fused: what computes each op of the fusion op (filled when it compiles), shared so that
  // either handle may be destroyed first, and this op's index in it.
  std::shared_ptr<std::vector<std::string>> fused_implementations;
  std::size_t fused_index = 0;
  // Held while a forward runs: the prepared op's scratch and the backend's buffers serve one
  // forward at a time, as a kernel on the device does, so sessions on several threads that
  // share the compiled op take turns on it.
  std::mutex running;
  cnmlBaseOp();  // out of line: PreparedOp is incomplete here
  ~cnmlBaseOp();
};

struct cnrtQueue {
  double clock_us = 0.0;  // simulated device clock, advanced by every forward
};
struct cnrtNotifier {
  bool placed = false;
  double time_us = 0.0;
};

namespace pz_sdk {

// Queue registry: forwards and notifiers reject queues that were never created.
bool queueAlive(cnrtQueue_t queue);
void advanceQueue(cnrtQueue_t queue, double us);

// Runs f(); a host allocation failure becomes `oom` instead of escaping the C boundary.
// A kernel's refusal of its data at forward time (a GatherV2 index outside the table):
// guarded() returns the status.
struct OpDataError {
  cnmlStatus_t status = CNML_STATUS_INVALIDPARAM;
};

template <typename Status, typename F>
Status guarded(Status oom, F&& f) {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return oom;
  } catch (const OpDataError& e) {
    return static_cast<Status>(e.status);
  }
}

}  // namespace pz_sdk

#endif  // PZ_SDK_STATE_H_
