// Paleozoic runtime wrapper: the thin layer between emitted sessions and the CNML SDK.
//
// Lifecycle of a layer (ncnn style): construct (shapes, SDK descriptors, base op)
// -> configLayer (bind weights) -> compileOp(mp) or FusionLayer::fuseLayer + compileFusionOp
// -> run. Every SDK status other than success becomes a pz::SdkError naming the layer.
#ifndef PALEOZOIC_RUNTIME_H_
#define PALEOZOIC_RUNTIME_H_

#include <cnml.h>
#include <cnrt.h>

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <memory>
#include <stdexcept>
#include <string>
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

// An activation tensor: SDK descriptor plus a device buffer allocated on first use.
// Tensors inside a fused block never get a buffer.
class Tensor {
 public:
  Tensor(std::string name, Shape shape);
  ~Tensor();
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;

  const std::string& name() const { return name_; }
  const Shape& shape() const { return shape_; }
  std::size_t elements() const { return elementCount(shape_); }
  std::size_t bytes() const { return elements() * sizeof(float); }
  cnmlTensor_t desc() const { return desc_; }
  void* deviceData();  // allocates on first call
  bool hasDeviceData() const { return data_ != nullptr; }

  void copyFromHost(const float* src, std::size_t count);  // count must equal elements()
  void copyToHost(float* dst, std::size_t count);

  // Consumers are counted at layer construction so fusion blocks can tell their outputs.
  void addConsumer() { ++consumers_; }
  int consumers() const { return consumers_; }
  void markGraphOutput() { graph_output_ = true; }
  bool isGraphOutput() const { return graph_output_; }

 private:
  std::string name_;
  Shape shape_;
  cnmlTensor_t desc_ = nullptr;
  void* data_ = nullptr;
  int consumers_ = 0;
  bool graph_output_ = false;
};

// A weight tensor bound as CNML_FILTER / CNML_CONST data.
class ConstTensor {
 public:
  ConstTensor(const std::string& layer, cnmlTensorType_t type, Shape shape);
  ~ConstTensor();
  ConstTensor(const ConstTensor&) = delete;
  ConstTensor& operator=(const ConstTensor&) = delete;
  cnmlTensor_t desc() const { return desc_; }
  const Shape& shape() const { return shape_; }
  void bind(const float* data);  // copies; data must hold elementCount(shape) floats

 private:
  std::string layer_;
  Shape shape_;
  cnmlTensor_t desc_ = nullptr;
  std::vector<float> data_;
};

// ---- layers -----------------------------------------------------------------------

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
  cnmlBaseOp_t op() const { return op_; }
  bool compiled() const { return compiled_; }
  bool fused() const { return fused_; }

  // Compiles the layer alone for `mp` cores (1..32).
  void compileOp(int mp);
  // Runs a layer compiled alone; inputs and output use their device buffers.
  void run(cnrtQueue_t queue);

  // Called by FusionLayer::fuseLayer.
  void markFused(const std::string& block);

  // False while a layer with weights still waits for configLayer; compileOp and
  // FusionLayer::fuseLayer refuse such a layer with a pz::Error.
  virtual bool configured() const { return true; }

 protected:
  // Subclasses create op_ in their constructor and forward it here.
  virtual cnmlStatus_t forward(cnrtQueue_t queue) = 0;
  void checkConfigured(bool ok, const char* what) const;

  std::string name_;
  std::vector<Tensor*> inputs_;
  Tensor output_;
  cnmlBaseOp_t op_ = nullptr;
  bool compiled_ = false;
  bool fused_ = false;
  std::string fused_into_;
};

struct Window {
  int h = 1, w = 1;
};
struct Pads {
  int top = 0, bottom = 0, left = 0, right = 0;
};

// Chainable parameter sets keep emitted constructor calls short and self-describing.
struct Conv {
  int out_channels;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  Window dilation_{1, 1};
  int groups_ = 1;
  Conv(int out, Window k) : out_channels(out), kernel(k) {}
  Conv& stride(int h, int w) { stride_ = {h, w}; return *this; }
  Conv& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return *this; }
  Conv& dilation(int h, int w) { dilation_ = {h, w}; return *this; }
  Conv& groups(int g) { groups_ = g; return *this; }
};

// Transposed convolution (ONNX ConvTranspose): pads crop the full output, outputPadding adds
// rows below and columns to the right; H_out = (H - 1) * sh - top - bottom + dh * (kh - 1) +
// oh + 1.
struct Deconv {
  int out_channels;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  Window dilation_{1, 1};
  int groups_ = 1;
  Window output_padding_{0, 0};
  Deconv(int out, Window k) : out_channels(out), kernel(k) {}
  Deconv& stride(int h, int w) { stride_ = {h, w}; return *this; }
  Deconv& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return *this; }
  Deconv& dilation(int h, int w) { dilation_ = {h, w}; return *this; }
  Deconv& groups(int g) { groups_ = g; return *this; }
  Deconv& outputPadding(int h, int w) { output_padding_ = {h, w}; return *this; }
};

// ONNX Resize of H and W (scale = out / in): InterpCoordinates and InterpRounding are in
// enums.h. Defaults are ONNX's: half_pixel, round_prefer_floor.
struct Interp {
  bool linear_;  // false: nearest
  Window size;  // output H x W
  InterpCoordinates coordinates_ = InterpCoordinates::kHalfPixel;
  InterpRounding rounding_ = InterpRounding::kRoundPreferFloor;  // nearest only
  static Interp nearest(Window out) { return Interp{false, out}; }
  static Interp linear(Window out) { return Interp{true, out}; }
  Interp& coordinates(InterpCoordinates c) { coordinates_ = c; return *this; }
  Interp& rounding(InterpRounding r) { rounding_ = r; return *this; }
};

struct Pool {
  cnmlPoolMode_t mode;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  bool ceil_mode_ = false;
  bool count_include_pad_ = false;
  static Pool max(Window k) { return Pool{CNML_POOL_MAX, k}; }
  static Pool avg(Window k) { return Pool{CNML_POOL_AVG, k}; }
  Pool& stride(int h, int w) { stride_ = {h, w}; return *this; }
  Pool& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return *this; }
  Pool& ceilMode(bool on) { ceil_mode_ = on; return *this; }
  Pool& countIncludePad(bool on) { count_include_pad_ = on; return *this; }
};

struct Lrn {
  int size;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
  explicit Lrn(int n) : size(n) {}
  Lrn& alphaBetaBias(double a, double b, double k) { alpha = a; beta = b; bias = k; return *this; }
};

// Output shape functions, shared by the layers and by tests.
Shape convOutputShape(const Shape& in, const Conv& p);
Shape poolOutputShape(const Shape& in, const Pool& p);
Shape deconvOutputShape(const Shape& in, const Deconv& p);
Shape interpOutputShape(const Shape& in, const Interp& p);

class ConvLayer : public Layer {
 public:
  ConvLayer(std::string name, Tensor& input, const Conv& params);
  ~ConvLayer() override;
  // weight [co, ci/groups, kh, kw]; bias [co] or nullptr.
  void configLayer(const float* weight, const float* bias);
  bool configured() const override { return configured_; }

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  Conv params_;
  SdkHandle<cnmlConvOpParam_t, cnmlDestroyConvOpParam> param_;
  std::unique_ptr<ConstTensor> filter_, bias_;
  bool configured_ = false;
};

// The SDK's Deconv op (DeconvGroup when groups > 1). Its param is CNML's
// cnmlCreateDeconvOpParam when the layer needs neither dilation nor output padding beyond
// the bottom / right pad, else the mock extension cnmlCreateDeconvOpParam_V2.
class DeconvLayer : public Layer {
 public:
  DeconvLayer(std::string name, Tensor& input, const Deconv& params);
  ~DeconvLayer() override;
  // weight [ci, co/groups, kh, kw] (ONNX ConvTranspose's layout); bias [co] or nullptr.
  void configLayer(const float* weight, const float* bias);
  bool configured() const override { return configured_; }

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  Deconv params_;
  SdkHandle<cnmlDeconvOpParam_t, cnmlDestroyDeconvOpParam> param_;
  std::unique_ptr<ConstTensor> filter_, bias_;
  bool configured_ = false;
};

// Nearest: the SDK's NearestNeighbor op; linear: its Interp op (bilinear). A mapping CNML's
// align_corners flag does not give is set with the mock extensions
// cnmlSetNearestNeighborCoordinateMode / RoundMode and cnmlSetInterpCoordinateMode.
class InterpLayer : public Layer {
 public:
  InterpLayer(std::string name, Tensor& input, const Interp& params);
  ~InterpLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  Interp params_;
  SdkHandle<cnmlNearestNeighborOpParam_t, cnmlDestroyNearestNeighborOpParam> nearest_param_;
  SdkHandle<cnmlInterpOpParam_t, cnmlDestroyInterpOpParam> linear_param_;
};

class PoolLayer : public Layer {
 public:
  PoolLayer(std::string name, Tensor& input, const Pool& params);
  ~PoolLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam> param_;
};

// Average over the whole H x W plane; output [N, C, 1, 1].
class GlobalAvgPoolLayer : public Layer {
 public:
  GlobalAvgPoolLayer(std::string name, Tensor& input);
  ~GlobalAvgPoolLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam> param_;
};

// ONNX LRN semantics: y = x / (bias + alpha / size * sum_window(x^2))^beta.
class LrnLayer : public Layer {
 public:
  LrnLayer(std::string name, Tensor& input, const Lrn& params);
  ~LrnLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  SdkHandle<cnmlLrnOpParam_t, cnmlDestroyLrnOpParam> param_;
};

// y = (x - mean) * var per channel; var already holds 1 / sqrt(variance + eps).
class BatchNormLayer : public Layer {
 public:
  BatchNormLayer(std::string name, Tensor& input);
  void configLayer(const float* mean, const float* var);
  bool configured() const override { return configured_; }

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  std::unique_ptr<ConstTensor> mean_, var_;
  bool configured_ = false;
};

// y = alpha * x + beta per channel (axis 1).
class ScaleLayer : public Layer {
 public:
  ScaleLayer(std::string name, Tensor& input);
  void configLayer(const float* alpha, const float* beta);
  bool configured() const override { return configured_; }

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  std::unique_ptr<ConstTensor> alpha_, beta_;
  bool configured_ = false;
};

class ActiveLayer : public Layer {
 public:
  ActiveLayer(std::string name, Tensor& input, Active fn);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
};

// Element-wise sum of two tensors of equal shape.
class AddLayer : public Layer {
 public:
  AddLayer(std::string name, Tensor& a, Tensor& b);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
};

// y = a (+ - * /) b. b has a's shape, or broadcasts to it: b's rank at most a's, dims
// right-aligned, each equal to a's or 1 (per-channel [1, C, 1, 1] or [C, 1, 1], scalar-like
// [1, 1, 1, 1], [1, 1, H, W], ...); y has a's shape. Equal shapes use the SDK's Add, Sub,
// Mult and RealDiv ops, a broadcast b its BroadcastAdd/Sub/Mult ops. RealDiv has no
// broadcast form, so a div needs equal shapes; a b that does not broadcast, or a div with
// unequal shapes, fails at construction with the SDK's status (pz::SdkError).
class BinaryLayer : public Layer {
 public:
  BinaryLayer(std::string name, Tensor& a, Tensor& b, Binary op);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  Binary fn_;
  bool broadcast_;  // b's shape differs from a's: the SDK's Broadcast* op
};

// y = x if x >= 0 else slope[c] * x, per channel (axis 1). LeakyRelu is a PRelu whose slope
// holds alpha for every channel.
class PReluLayer : public Layer {
 public:
  PReluLayer(std::string name, Tensor& input);
  // slope [C].
  void configLayer(const float* slope);
  bool configured() const override { return configured_; }

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  std::unique_ptr<ConstTensor> slope_;
  bool configured_ = false;
};

// y[n, o] = sum_k x[n, k] * weight[o, k] + bias[o]; x is read flat per batch item.
class FullyConnectedLayer : public Layer {
 public:
  FullyConnectedLayer(std::string name, Tensor& input, int out_features);
  void configLayer(const float* weight, const float* bias);
  bool configured() const override { return configured_; }

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  std::unique_ptr<ConstTensor> filter_, bias_;
  bool configured_ = false;
};

class SoftmaxLayer : public Layer {
 public:
  SoftmaxLayer(std::string name, Tensor& input, int axis);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
};

class ConcatLayer : public Layer {
 public:
  ConcatLayer(std::string name, std::vector<Tensor*> inputs, int axis);

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;
};

class ReshapeLayer : public Layer {
 public:
  ReshapeLayer(std::string name, Tensor& input, Shape shape);
  ~ReshapeLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  SdkHandle<cnmlReshapeOpParam_t, cnmlDestroyReshapeOpParam> param_;
};

class TransposeLayer : public Layer {
 public:
  TransposeLayer(std::string name, Tensor& input, std::vector<int> perm);
  ~TransposeLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  SdkHandle<cnmlTransposeOpParam_t, cnmlDestroyTransposeOpParam> param_;
};

// y = x[begin:end:step] along every axis (one entry per input axis, as numpy's slices with
// positive steps): 0 <= begin < end <= dim, step >= 1; output dim ceil((end - begin) / step).
class SliceLayer : public Layer {
 public:
  SliceLayer(std::string name, Tensor& input, std::vector<int> begin, std::vector<int> end,
             std::vector<int> step);
  ~SliceLayer() override;

 protected:
  cnmlStatus_t forward(cnrtQueue_t queue) override;

 private:
  SdkHandle<cnmlNdStridedSliceOpParam_t, cnmlDestroyNdStridedSliceOpParam> param_;
};

// ---- fusion -------------------------------------------------------------------------

// Which tensors cross the edge of a block of layers (given in topological order): inputs
// are read inside and produced outside, in first-read order; outputs are produced inside
// and read outside it, read by nobody (the end of a branch) or graph outputs, in layer
// order. FusionLayer, the device-model bindings and Python's paleozoic.ir.boundary all
// follow this one rule (tests/ir/test_boundary.py checks the two languages agree).
struct BlockBoundary {
  std::vector<Tensor*> inputs, outputs;
};
BlockBoundary fusionBoundary(const std::vector<Layer*>& layers);
// The output rule alone, for a tensor its block's layers read `reads_inside` times.
bool leavesBlock(const Tensor& produced, int reads_inside);

// Layers fused into one SDK fusion op, with I/O derived at compile time by fusionBoundary.
class FusionLayer {
 public:
  explicit FusionLayer(std::string name);
  ~FusionLayer();
  FusionLayer(const FusionLayer&) = delete;
  FusionLayer& operator=(const FusionLayer&) = delete;

  const std::string& name() const { return name_; }
  void fuseLayer(Layer& layer);       // topological order
  void compileFusionOp(int mp);       // 1..32
  void run(cnrtQueue_t queue);
  const std::vector<Tensor*>& fusionInputs() const { return inputs_; }
  const std::vector<Tensor*>& fusionOutputs() const { return outputs_; }

 private:
  std::string name_;
  cnmlFusionOp_t op_ = nullptr;
  std::vector<Layer*> layers_;
  std::vector<Tensor*> inputs_, outputs_;
  bool compiled_ = false;
};

// One F-Block of the plan: fused into a FusionLayer when `fuse` is true, otherwise each
// layer compiled alone with the block's MP. Times itself with CNRT notifiers.
class Block {
 public:
  Block(std::string name, bool fuse, int mp, std::vector<Layer*> layers);
  ~Block();
  Block(Block&&) noexcept;
  Block(const Block&) = delete;
  Block& operator=(const Block&) = delete;
  Block& operator=(Block&&) = delete;

  const std::string& name() const { return name_; }
  bool fuse() const { return fuse_; }
  int mp() const { return mp_; }
  void compile();
  void run(cnrtQueue_t queue);  // synchronises the queue and records device time
  float lastDeviceMicros() const { return last_us_; }

 private:
  std::string name_;
  bool fuse_;
  int mp_;
  std::vector<Layer*> layers_;
  std::unique_ptr<FusionLayer> fusion_;
  cnrtNotifier_t start_ = nullptr, end_ = nullptr;
  float last_us_ = 0.0f;
};

// ---- weights file ---------------------------------------------------------------------
// Format (little-endian), written by paleozoic/codegen/weights.py:
//   char magic[8] = "PZWEIGHT"; u32 version = 1; u32 tensor_count;
//   char model_id[16] (raw bytes, first 16 of sha256 of the data section);
//   u64 data_offset (multiple of 64, start of the data section from file start);
//   per tensor: u16 name_len, name bytes, u8 dtype (1 = float32), u8 ndim, u32 dims[ndim],
//               u64 offset (from data_offset), u64 nbytes, u32 crc32 (zlib) of its bytes;
//   u32 crc32 (zlib) of every header byte before it; zero padding to data_offset; data.
class WeightFile {
 public:
  // Throws pz::Error naming the file when it is missing, truncated, of another version or
  // model (model_id_hex differs), or fails a checksum.
  WeightFile(const std::string& path, const std::string& model_id_hex);
  // Forgets the tensors handed out by get() (see ConstTensor::bind).
  ~WeightFile();
  WeightFile(const WeightFile&) = delete;
  WeightFile& operator=(const WeightFile&) = delete;
  // Throws pz::Error when the tensor is absent or its shape differs. The pointer is
  // remembered with the tensor's name and shape, so a layer configured with it checks that
  // the weight has as many values as the layer needs (a hand-edited kernel or input shape
  // is refused instead of reading past the weight).
  const float* get(const std::string& name, const Shape& shape) const;
  std::size_t tensorCount() const;

 private:
  struct Entry {
    Shape shape;
    std::uint64_t offset;
    std::uint64_t nbytes;
  };
  std::string path_;
  std::vector<std::pair<std::string, Entry>> entries_;
  std::vector<float> data_;
};

// Reads a raw little-endian float32 file holding exactly `count` values (else pz::Error).
std::vector<float> readFloatFile(const std::string& path, std::size_t count);
void writeFloatFile(const std::string& path, const std::vector<float>& values);

}  // namespace pz

#endif  // PALEOZOIC_RUNTIME_H_
