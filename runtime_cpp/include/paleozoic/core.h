// The wrapper's core: shapes, errors, the device, activation and weight tensors, SDK
// handles and the Layer base class every layer family derives from.
#ifndef PALEOZOIC_CORE_H_
#define PALEOZOIC_CORE_H_

#include <cnml.h>
#include <cnrt.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "paleozoic/enums.h"

namespace pz {

using Shape = std::vector<int>;
std::string shapeToString(const Shape& shape);
std::size_t elementCount(const Shape& shape);

// Raised for every SDK failure; what() reads "<layer>: <call> failed with <STATUS> (<code>)".
class SdkError : public std::runtime_error {
 public:
  // `hint` (optional) says what to change, appended to the message.
  SdkError(const std::string& layer, const std::string& call, int status,
           const std::string& status_name, const std::string& hint = "");
  int status() const { return status_; }
  const std::string& layer() const { return layer_; }

 private:
  std::string layer_;
  int status_;
};

// Raised for misuse the wrapper itself detects (bad weights file, wrong input size, ...).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws SdkError when status is not CNML_STATUS_SUCCESS.
void check(cnmlStatus_t status, const std::string& layer, const char* call);
// The same, with `hint` (what the SDK wants instead) appended to the message.
void check(cnmlStatus_t status, const std::string& layer, const char* call,
           const std::string& hint);
void check(cnrtRet_t status, const std::string& layer, const char* call);

// The MLU100's core count: the range of a block's MP (model parallelism).
constexpr int kMaxMp = 32;

// check() for the compile calls: a failure with `mp` outside 1..kMaxMp names the range.
void checkCompile(cnmlStatus_t status, const std::string& layer, const char* call, int mp);

// What a layer computes in, the third knob of an F-Block: Precision { kFp32, kFp16, kInt8 }
// (enums.h, with precisionName and parsePrecision). kFp16 and kInt8 keep activations in
// IEEE binary16 between ops; kInt8 runs the layers that have an SDK int8 mode (conv and
// fully connected) on int8 operands with the calibration's quantisation parameters, and
// the other layers of the block in fp16, as the MLU-100 does.
// The dtype activations are stored in between ops at `precision`.
cnmlDataType_t storageType(Precision precision);

// One quantisation of Cambricon's form: real = q * 2^position / scale, q in [-127, 127].
struct QuantParam {
  int position = 0;
  float scale = 1.0f;
};
// What an int8 layer needs from calibration: its input activation's parameters (per
// tensor) and its filter's (one per output channel). Travels in the weights file.
struct LayerQuantization {
  QuantParam input;
  std::vector<QuantParam> filter;
};

// The base of a session's parts that others point into once built (a Block, a Stage): moved
// into place (a session's vector of them), never copied nor assigned over. A derived class
// that declares its destructor declares its move constructor too.
class MovedIntoPlace {
 protected:
  MovedIntoPlace() = default;
  ~MovedIntoPlace() = default;
  MovedIntoPlace(MovedIntoPlace&&) noexcept = default;
  MovedIntoPlace(const MovedIntoPlace&) = delete;
  MovedIntoPlace& operator=(const MovedIntoPlace&) = delete;
  MovedIntoPlace& operator=(MovedIntoPlace&&) = delete;
};

// Owns the SDK: cnmlInit/cnmlExit, the device and one queue.
class Device {
 public:
  Device();
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;
  cnrtQueue_t queue() const { return queue_; }

 private:
  cnrtQueue_t queue_ = nullptr;
};

// What a tensor's elements are. Float tensors are the SDK's activations (fp32, or fp16 inside
// a block computing in it). Integer tensors are the graph's token ids, attention masks and
// uint8 images, and ArgMax's indices: the SDK computes on none of them, so their values are
// kept on the host, where host layers (layers_host.h) read and write them; an int32 tensor
// is also copied to the device, for the SDK ops that take int32 indices (GatherV2).
// ElementType { kFloat, kInt64, kInt32, kUint8 } is in enums.h, with elementTypeName
// ("float32", "int64", "int32", "uint8").

class RunContext;

// An activation tensor: SDK descriptor plus a device buffer: a view into the session's
// Arena (its memory plan), or, for a tensor the plan does not place, one allocated on first
// use. Tensors inside a fused block never get a buffer. What a run writes (the buffer, an
// integer tensor's values) is the tensor's own, or, on a thread inside RunContext::run, that
// context's: several runs of one session go on at once, each with its own memory.
class Tensor {
 public:
  Tensor(std::string name, Shape shape, ElementType type = ElementType::kFloat);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const std::string& name() const { return name_; }
  const Shape& shape() const { return shape_; }
  std::size_t elements() const { return elementCount(shape_); }
  std::size_t bytes() const;  // of the device buffer, in the tensor's dtype
  cnmlTensor_t desc() const { return desc_; }
  // FLOAT32 unless a layer computing in fp16 or int8 produces it (Layer::setPrecision).
  cnmlDataType_t dataType() const { return dtype_; }
  void setDataType(cnmlDataType_t dtype);
  void* deviceData();  // allocates on first call
  bool hasDeviceData() const { return buffers().data != nullptr; }
  // Makes `data` (`capacity` bytes, owned by the caller: an Arena) the tensor's device
  // buffer; pz::Error when the tensor already has one or needs more than `capacity`.
  void useDeviceBuffer(void* data, std::size_t capacity);
  bool ownsDeviceData() const { return own_.data != nullptr && own_.capacity == 0; }

  // Host data is float32; an fp16 tensor is converted on the host (cnrtCastDataType), as
  // CNML users do before cnrtMemcpy, unless the SDK converts it (MLU priority below): then
  // its buffer holds float32 and the copy is plain. count must equal elements().
  void copyFromHost(const float* src, std::size_t count);
  void copyToHost(float* dst, std::size_t count);

  // Load balance of a graph input or output (CNML's data-preprocess strategy, MLU100):
  // where its float32 <-> device dtype conversion runs. CNML_CPU_PRIORITY: the host casts
  // (copyFromHost / copyToHost); CNML_MLU_PRIORITY: the fused block reading or writing it
  // casts on the device; CNML_CPU_MLU_BALANCE: the SDK picks the side its model prices
  // lower. Only a fused block's I/O takes one: a block reading the input computes in the
  // input's dtype (no cast layer of its own), and the block sets the strategy on the SDK
  // as it compiles (applyDataPreprocessStrategy). Set it before the blocks compile.
  void setDataPreprocessStrategy(cnmlDataPreprocessStrategy_t strategy);
  bool hasDataPreprocessStrategy() const { return preprocess_ >= 0; }
  bool dataPreprocessApplied() const { return resolved_preprocess_ >= 0; }
  // Sets the strategy on the descriptor with a float32 twin, once, and reads what the SDK
  // resolved it to; called by FusionLayer before cnmlSetFusionIO.
  void applyDataPreprocessStrategy();
  // The dtype of the device buffer: the tensor's, or float32 when the SDK converts it.
  cnmlDataType_t transferType() const;

  ElementType elementType() const { return type_; }
  bool isInteger() const { return type_ != ElementType::kFloat; }
  // int64 and uint8 values stay on the host (no device buffer); int32 ones go to the device
  // too, for the SDK ops that read indices.
  bool hostOnly() const { return type_ == ElementType::kInt64 || type_ == ElementType::kUint8; }
  // An integer tensor's values: count must equal elements(), and each value must fit the
  // element type (pz::Error naming the tensor, the index and the value otherwise).
  void setInts(const std::int64_t* src, std::size_t count);
  const std::vector<std::int64_t>& ints() const;
  bool intsWritten() const { return buffers().ints_set; }

  // Consumers are counted at layer construction so fusion blocks can tell their outputs.
  void addConsumer() { ++consumers_; }
  void removeConsumer() { --consumers_; }
  int consumers() const { return consumers_; }
  void markGraphOutput() { graph_output_ = true; }
  bool isGraphOutput() const { return graph_output_; }

  // What one run writes into the tensor.
  struct Buffers {
    void* data = nullptr;
    std::size_t capacity = 0;  // of a buffer the tensor does not own; 0: its own (or none)
    std::vector<std::int64_t> ints;  // an integer tensor's values (written by setInts)
    bool ints_set = false;
  };

 private:
  // The running thread's RunContext's buffers for this tensor, or the tensor's own.
  Buffers& buffers();
  const Buffers& buffers() const;

  std::string name_;
  Shape shape_;
  cnmlTensor_t desc_ = nullptr;
  cnmlDataType_t dtype_ = CNML_DATA_FLOAT32;
  Buffers own_;
  int consumers_ = 0;
  bool graph_output_ = false;
  ElementType type_ = ElementType::kFloat;
  int preprocess_ = -1;           // the strategy asked for (-1: none)
  int resolved_preprocess_ = -1;  // what the SDK applies, once set on the descriptor
  cnmlCpuTensor_t twin_ = nullptr;
};

// A weight as a layer's configLayer takes it: the data, and where WeightFile::get handed it
// out, the tensor's name, shape and file, so binding checks that the weight holds as many
// values as the layer needs (a hand-edited kernel or input shape is refused instead of read
// past). A bare host pointer converts to a view without a shape, whose extent the caller
// vouches for; nullptr leaves an optional weight (a bias) absent.
struct WeightView {
  const float* data = nullptr;
  Shape shape;
  bool has_shape = false;
  std::string name;  // tensor name in the weights file, "" for a bare pointer
  std::string file;  // the weights file, for errors
  // The buffer `data` points into when the view owns it (WeightFile::Residency::kOnDemand).
  std::shared_ptr<const std::vector<float>> storage;
  // Without data: reads the values into a buffer of elementCount(shape) floats, checked,
  // when the layer's block compiles (WeightFile::Residency::kAtCompile).
  std::function<void(float*)> read;

  WeightView() = default;
  WeightView(const float* host_data) : data(host_data) {}  // NOLINT: implicit by design
  WeightView(const float* file_data, Shape file_shape, std::string tensor, std::string path)
      : data(file_data),
        shape(std::move(file_shape)),
        has_shape(true),
        name(std::move(tensor)),
        file(std::move(path)) {}
};

// Host data in a buffer from malloc: what cnmlBindConstData_V2 takes with free_aftercompile,
// the SDK then free()ing it (release() hands it over).
template <typename T>
class MallocBuffer {
 public:
  MallocBuffer() = default;
  explicit MallocBuffer(std::size_t count) : size_(count) {
    if (count == 0) return;
    data_.reset(static_cast<T*>(std::malloc(count * sizeof(T))));
    if (!data_) throw std::bad_alloc();
  }
  T* data() { return data_.get(); }
  const T* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T* begin() const { return data_.get(); }
  const T* end() const { return data_.get() + size_; }
  const T& operator[](std::size_t i) const { return data_.get()[i]; }
  T* release() {
    size_ = 0;
    return data_.release();
  }

 private:
  struct Free {
    void operator()(T* p) const { std::free(p); }
  };
  std::unique_ptr<T, Free> data_;
  std::size_t size_ = 0;
};

// A weight tensor bound as CNML_FILTER / CNML_CONST data. The float32 values are kept on
// the host and handed to the SDK when the layer's op is built, in the dtype its precision
// needs: the precision is a block knob, known only when the block compiles.
class ConstTensor {
 public:
  ConstTensor(const std::string& layer, cnmlTensorType_t type, Shape shape);
  ~ConstTensor();
  ConstTensor(const ConstTensor&) = delete;
  ConstTensor& operator=(const ConstTensor&) = delete;
  cnmlTensor_t desc() const { return desc_; }
  const Shape& shape() const { return shape_; }
  cnmlTensorType_t type() const { return type_; }
  void bind(const float* data);  // copies; data must hold elementCount(shape) floats
  // Binds values read by `read` (WeightView::read) when first needed: load(), at the latest
  // when the op is built, so that a session holds a block's plain weights only while the
  // block compiles.
  void bindLater(std::function<void(float*)> read);
  void load();
  // The float32 values bound with bind() (or loaded), empty before and once handed over; a
  // layer deriving SDK weights from the file's (a recurrent layer's per-direction filters)
  // reads them when it builds its ops, a host layer when it runs.
  const MallocBuffer<float>& values() const { return data_; }
  // Binds the values to the SDK as FLOAT32 or FLOAT16, or as INT8 quantised per output
  // channel (axis 0) with `channels` (one entry per channel). `hand_over`: for an op built
  // to compile, once (fused into its block, or alone), of a layer that no longer reads the
  // values: the SDK takes the buffer (free_aftercompile) and frees it as soon as the
  // compiled op holds its own form, so a block never holds its plain weights beside its
  // compiled ones; the tensor cannot be bound again.
  void bindAs(cnmlDataType_t dtype, const std::vector<QuantParam>* channels = nullptr,
              bool hand_over = false);
  // After the ops using it are compiled: frees values(), the converted copy and the SDK's
  // bound copy (the descriptor), since compiled ops hold their own.
  void releaseHost();

 private:
  std::string layer_;
  cnmlTensorType_t type_;
  Shape shape_;
  cnmlTensor_t desc_ = nullptr;
  MallocBuffer<float> data_;
  std::function<void(float*)> pending_;  // bindLater's, until load()
  cnmlDataType_t dtype_ = CNML_DATA_FLOAT32;
  MallocBuffer<unsigned char> bound_;  // fp16/int8 data the SDK was given, kept with the layer
  bool bound_once_ = false;
  bool handed_over_ = false;
  // After the SDK took `buffer` (free_aftercompile, it frees it): the values go too.
  template <typename T>
  void handOver(MallocBuffer<T>& buffer);
};

// The session's activation memory: one device buffer (cnrtMalloc) holding every tensor the
// memory plan places, each a view at its offset (Tensor::useDeviceBuffer). Tensors alive
// at the same time never overlap (paleozoic.ir.memory plans it; session.json has it).
class Arena {
 public:
  struct Place {
    Tensor* tensor;
    std::size_t offset;
    std::size_t bytes;  // the slot: at least the tensor's bytes()
  };
  // pz::Error naming the tensor when a slot lies outside `bytes` or is smaller than its
  // tensor (a plan that no longer fits the session: re-run paleozoic compile).
  Arena(std::size_t bytes, const std::vector<Place>& places);
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;
  std::size_t bytes() const { return bytes_; }
  const std::vector<Place>& places() const { return places_; }

 private:
  void* base_ = nullptr;
  std::size_t bytes_;
  std::vector<Place> places_;
};

// One weight a layer declares: its role ("weight", "bias", "mean", ...), shape and whether
// it may be omitted (bound as zeros).
struct WeightSpec {
  std::string role;
  Shape shape;
  bool optional = false;
};

// An SDK parameter object owned by the layer that created it. It is destroyed with the
// layer, including when the layer's constructor throws half way, so no constructor pairs
// each create with a destroy on its failure paths.
template <typename T, cnmlStatus_t (*Destroy)(T*)>
class SdkHandle {
 public:
  SdkHandle() = default;
  ~SdkHandle() { reset(); }
  SdkHandle(const SdkHandle&) = delete;
  SdkHandle& operator=(const SdkHandle&) = delete;

  T* out() {  // for cnmlCreate...(handle.out(), ...)
    reset();
    return &handle_;
  }
  T* address() { return &handle_; }  // for the SDK's setters, which take the param by pointer
  operator T() const { return handle_; }  // NOLINT: passed where the SDK takes the handle
  void reset() {
    if (handle_ != nullptr) Destroy(&handle_);
    handle_ = nullptr;
  }

 private:
  T handle_ = nullptr;
};

class Layer {
 public:
  Layer(std::string name, std::vector<Tensor*> inputs, Shape output_shape);
  virtual ~Layer();
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  const std::string& name() const { return name_; }
  Tensor& output() { return output_; }
  const std::vector<Tensor*>& inputs() const { return inputs_; }
  // The SDK op, created on first use at the layer's precision: ops are built when their
  // block compiles, once precision and casts are settled, not in the constructor.
  cnmlBaseOp_t op();
  // Every SDK op of the layer in the order they run: op() alone for most layers, the ops a
  // layer made with addOp (a recurrent layer's per-step ops) otherwise. Fusion fuses them
  // all, compileOp compiles each, the device model prices each.
  std::vector<cnmlBaseOp_t> ops();
  // How one op of a several-op layer runs when the layer is compiled alone (addOp): on the
  // queue, with the forward's `extra` argument (invokeParam()).
  using OpRunner = std::function<cnmlStatus_t(cnrtQueue_t, void*)>;
  bool compiled() const { return compiled_; }
  bool fused() const { return fused_; }

  // Compiles the layer alone for `mp` cores (1..32).
  void compileOp(int mp);
  // Runs a layer compiled alone; inputs and output use their device buffers.
  void run(cnrtQueue_t queue);

  // Called by FusionLayer::fuseLayer.
  void markFused(const std::string& block);
  // A host layer (layers_host.h) computes on the CPU; it cannot join a fusion op.
  virtual bool onHost() const { return false; }
  // A layer that derives its SDK weights from its own on the host while it builds its ops
  // (a recurrent layer's per-direction filters) keeps them until its block is compiled;
  // others hand theirs to the SDK as their op is built to compile (ConstTensor::bindAs).
  virtual bool readsHostWeights() const { return false; }

  // The precision the layer computes in; set before its op is built (Block::compile does).
  // A layer without an SDK int8 mode runs kInt8 as kFp16 (effectivePrecision).
  void setPrecision(Precision precision);
  Precision precision() const { return precision_; }
  Precision effectivePrecision() const;
  bool hasInt8Mode() const { return int8_filter_ >= 0; }
  // Quantisation parameters for kInt8 (from WeightFile::quantization).
  void setQuantization(LayerQuantization quantization);
  // Reads `tensor` instead of input `index` (a cast of it); before the op is built.
  void redirectInput(std::size_t index, Tensor& tensor);
  // The SDK's sparse mode (MLU100's CNML_Sparse: the device skips pairs of zero filter
  // weights, output channels 2i and 2i+1 at one position) for a layer that has it (a
  // convolution without groups whose pads are even per axis, a fully connected layer); set
  // before the op is built. Throws pz::Error naming the layer for another, or once built.
  void setSparse(bool sparse);
  bool sparse() const { return sparse_; }
  // Data parallelism (MLU100, cnrtInvokeFuncParam_t): the layer's forwards run the batch as
  // `dp` groups of frames at once, each group on the layer's MP cores. The SDK checks at the
  // forward that dp x MP fits the device (32 cores) and that dp divides the batch.
  void setDataParallelism(int dp);
  int dataParallelism() const { return data_parallelism_; }
  // The cores the forwards are pinned to (cnrtInvokeFuncParam_t::affinity, a mask; 0: none).
  void setAffinity(unsigned int cores);
  // The `extra` argument of the layer's SDK forwards: null at data parallelism 1 without an
  // affinity, else the layer's cnrtInvokeFuncParam_t. A forward written by hand passes it on.
  void* invokeParam() { return data_parallelism_ > 1 || affinity_ != 0 ? &invoke_ : nullptr; }

  // Binds the layer's weights in the order weightSpecs() gives; an absent optional one
  // (nullptr, or left out at the end) is bound as zeros. Throws pz::Error naming the layer and the
  // role for a missing required weight, too many or too few arguments, or a weight of the wrong
  // extent.
  template <typename... Weights>
  void configLayer(const Weights&... weights) {
    bindWeights({WeightView(weights)...});
  }
  void bindWeights(const std::vector<WeightView>& weights);
  std::vector<WeightSpec> weightSpecs() const;

  // False while a layer with weights still waits for configLayer; compileOp and
  // FusionLayer::fuseLayer refuse such a layer with a pz::Error.
  bool configured() const { return configured_ || weights_.empty(); }
  // Frees the host copies of the weights the SDK holds its own copy of (bound with
  // cnmlBindConstData); a host layer keeps its constants, which it reads at run time.
  // After it the layer cannot be compiled again at another precision.
  void releaseHostWeights();
  // Reads the weights configured with views that read at compile (ConstTensor::bindLater).
  // Building an op reads its layer's (ConstTensor::bindAs); Block::compile calls it for a
  // host layer, which reads them as it runs.
  void loadWeights();

 protected:
  // A layer whose output holds integers (a host layer's).
  Layer(std::string name, std::vector<Tensor*> inputs, Shape output_shape,
        ElementType output_type);
  // The SDK forwards of one-input ops, f(op, in, in_data, out, out_data, queue, extra), and
  // of two-input ops, f(op, a, a_data, b, b_data, out, out_data, queue, extra).
  using UnaryForward = cnmlStatus_t (*)(cnmlBaseOp_t, cnmlTensor_t, void*, cnmlTensor_t, void*,
                                        cnrtQueue_t, void*);
  using BinaryForward = cnmlStatus_t (*)(cnmlBaseOp_t, cnmlTensor_t, void*, cnmlTensor_t, void*,
                                         cnmlTensor_t, void*, cnrtQueue_t, void*);
  // A layer that runs one SDK op names its forward in its constructor (PZ_FORWARD in the
  // wrapper's sources) instead of overriding forward(); `call` names it in errors.
  void setForward(UnaryForward forward, const char* call);
  void setForward(BinaryForward forward, const char* call);
  // Runs op_ on the device buffers: the forward set with setForward, unless overridden.
  virtual cnmlStatus_t forward(cnrtQueue_t queue);
  // Declares a weight in the constructor, before the op that reads its descriptor.
  const ConstTensor& declareWeight(std::string role, cnmlTensorType_t type, Shape shape,
                                   bool optional = false);
  void checkConfigured(const char* what) const;
  // In the constructor: how the op is created (called by op() with the inputs as they are
  // then, casts included). The function creates op_ and throws on failure.
  void defineOp(std::function<void()> create) { create_ = std::move(create); }
  // Inside the defineOp function of a layer made of several SDK ops: hands `op` to the layer
  // (which destroys it) in running order, with how to run it when the layer is compiled
  // alone. The first op added is also op().
  void addOp(cnmlBaseOp_t op, OpRunner run);
  // In the constructor of a layer with an SDK int8 mode: the weight that is its filter.
  void allowInt8(const ConstTensor& filter);
  // In the constructor of a layer with an SDK sparse mode; `refusal` says why this one
  // cannot use it after all (empty: it can).
  void allowSparse(std::string refusal = "") { sparse_refusal_ = std::move(refusal); }
  // The descriptor of input `index` as the op must read it.
  cnmlTensor_t in(std::size_t index) const { return inputs_.at(index)->desc(); }
  // Sets the output's dtype for the precision and checks the inputs'; a Cast overrides it.
  virtual void settleDataTypes();

  std::string name_;
  std::vector<Tensor*> inputs_;
  Tensor output_;
  cnmlBaseOp_t op_ = nullptr;
  bool compiled_ = false;
  bool fused_ = false;
  std::string fused_into_;

 private:
  struct Weight {
    WeightSpec spec;
    std::unique_ptr<ConstTensor> tensor;
  };
  void buildOp();
  void destroyOps();

  struct OwnedOp {
    cnmlBaseOp_t op;
    OpRunner run;
  };
  std::vector<OwnedOp> owned_ops_;  // a several-op layer's ops (addOp); empty for one-op layers
  std::vector<Weight> weights_;
  bool configured_ = false;
  bool compiling_ = false;  // in compileOp
  std::function<void()> create_;
  Precision precision_ = Precision::kFp32;
  int int8_filter_ = -1;  // index in weights_ of the filter of a layer with an int8 mode
  bool sparse_ = false;
  int data_parallelism_ = 1;
  unsigned int affinity_ = 0;
  cnrtInvokeFuncParam_t invoke_{&data_parallelism_, nullptr, CNRT_PARAM_END};
  std::string sparse_refusal_ = "it has no sparse mode (convolutions and fully connected layers do)";
  std::unique_ptr<LayerQuantization> quantization_;
  UnaryForward unary_ = nullptr;
  BinaryForward binary_ = nullptr;
  const char* forward_call_ = "";
};

// The base of a layer whose SDK op reads one param object its constructor creates (a
// convolution's strides and pads, a pooling window, a reshape's dims): param_ holds it and
// destroys it with `Destroy` along with the layer.
template <typename Param, cnmlStatus_t (*Destroy)(Param*)>
class ParamLayer : public Layer {
 protected:
  ParamLayer(std::string name, std::vector<Tensor*> inputs, Shape output_shape)
      : Layer(std::move(name), std::move(inputs), std::move(output_shape)) {}

  SdkHandle<Param, Destroy> param_;
};

struct Window {
  int h = 1, w = 1;
};
struct Pads {
  int top = 0, bottom = 0, left = 0, right = 0;
};

}  // namespace pz

#endif  // PALEOZOIC_CORE_H_
