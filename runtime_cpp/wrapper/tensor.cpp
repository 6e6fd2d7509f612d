// Tensor (activations with a lazily allocated device buffer) and ConstTensor (weights).
#include <cstdint>
#include <cstring>
#include <vector>

#include <cnml_mock.h>

#include "detail.h"
#include "paleozoic/run_context.h"

namespace pz {
namespace detail {

cnmlTensor_t createTensorDesc(cnmlTensorType_t type, const Shape& shape, const std::string& owner) {
  if (shape.empty()) throw Error(owner + ": a tensor needs at least one dimension");
  for (int d : shape) {
    if (d <= 0) {
      throw Error(owner + ": invalid tensor shape " + shapeToString(shape) +
                  "; every dimension must be positive");
    }
  }
  cnmlTensor_t desc = nullptr;
  PZ_CHECK(owner, cnmlCreateTensor_V2(&desc, type));
  try {
    std::vector<int> dims(shape);
    PZ_CHECK(owner,
             cnmlSetTensorShape_V2(desc, static_cast<int>(dims.size()), dims.data(), nullptr));
    PZ_CHECK(owner, cnmlSetTensorDataType(desc, CNML_DATA_FLOAT32));
  } catch (...) {
    cnmlDestroyTensor(&desc);
    throw;
  }
  return desc;
}

void destroyTensorDesc(cnmlTensor_t* desc) noexcept {
  if (*desc != nullptr) cnmlDestroyTensor(desc);
  *desc = nullptr;
}

}  // namespace detail

Tensor::Tensor(std::string name, Shape shape, ElementType type)
    : name_(std::move(name)), shape_(std::move(shape)), type_(type) {
  desc_ = detail::createTensorDesc(CNML_TENSOR, shape_, name_);
  // CNML has no int64: an int64 tensor never reaches an SDK compute op, and its descriptor
  // (which the host layer's transfer op names) says int32, the SDK's nearest.
  if (type_ == ElementType::kUint8) {
    setDataType(CNML_DATA_UINT8);
  } else if (type_ != ElementType::kFloat) {
    setDataType(CNML_DATA_INT32);
  }
}

Tensor::~Tensor() {
  if (ownsDeviceData()) cnrtFree(own_.data);
  if (twin_ != nullptr) cnmlDestroyCpuTensor(&twin_);
  detail::destroyTensorDesc(&desc_);
}

std::size_t Tensor::bytes() const {
  const cnmlDataType_t dtype = transferType();
  if (dtype == CNML_DATA_UINT8) return elements();
  return elements() * (dtype == CNML_DATA_FLOAT16 ? 2 : sizeof(float));
}

cnmlDataType_t Tensor::transferType() const {
  return resolved_preprocess_ == CNML_MLU_PRIORITY ? CNML_DATA_FLOAT32 : dtype_;
}

void Tensor::setDataPreprocessStrategy(cnmlDataPreprocessStrategy_t strategy) {
  if (isInteger()) {
    throw Error("tensor " + name_ + " holds " + elementTypeName(type_) +
                " values, which are never converted; a data-preprocess strategy is for float "
                "inputs and outputs");
  }
  if (resolved_preprocess_ >= 0 && strategy != preprocess_) {
    throw Error("tensor " + name_ + ": its data-preprocess strategy is set on the SDK already "
                "(a block reading or writing it compiled); set it before compiling");
  }
  preprocess_ = strategy;
}

void Tensor::applyDataPreprocessStrategy() {
  if (preprocess_ < 0 || resolved_preprocess_ >= 0) return;
  if (hasDeviceData()) {
    throw Error("tensor " + name_ + ": its data-preprocess strategy must be set before it has "
                "a device buffer");
  }
  PZ_CHECK(name_, cnmlCreateCpuTensor(&twin_, CNML_TENSOR, CNML_DATA_FLOAT32, CNML_NCHW,
                                      static_cast<int>(elements()), 1, 1, 1));
  PZ_CHECK(name_, cnmlSetDataPreprocessStrategy(
                      desc_, twin_, static_cast<cnmlDataPreprocessStrategy_t>(preprocess_)));
  cnmlDataPreprocessStrategy_t resolved = CNML_CPU_PRIORITY;
  PZ_CHECK(name_, cnmlMockGetDataPreprocessStrategy(desc_, &resolved));
  resolved_preprocess_ = resolved;
}

void Tensor::setDataType(cnmlDataType_t dtype) {
  if (dtype == dtype_) return;
  if (ownsDeviceData()) {
    throw Error("tensor " + name_ + ": its dtype cannot change once it has a device buffer");
  }
  const cnmlDataType_t before = dtype_;
  PZ_CHECK(name_, cnmlSetTensorDataType(desc_, dtype));
  dtype_ = dtype;
  if (own_.data != nullptr && bytes() > own_.capacity) {  // an arena slot too small for it
    dtype_ = before;
    cnmlSetTensorDataType(desc_, before);
    throw Error("tensor " + name_ + ": its arena slot of " + std::to_string(own_.capacity) +
                " bytes cannot hold it as another dtype; re-run paleozoic compile");
  }
}

void* Tensor::deviceData() {
  if (hostOnly()) {
    throw Error("tensor " + name_ + " holds " + elementTypeName(type_) +
                " values, which stay on the host: only host layers read it (convert it with a "
                "host cast first)");
  }
  Buffers& b = buffers();
  if (b.data == nullptr) PZ_CHECK(name_, cnrtMalloc(&b.data, bytes()));
  return b.data;
}

Tensor::Buffers& Tensor::buffers() {
  RunContext* context = RunContext::current();
  return context != nullptr ? context->buffersOf(*this) : own_;
}

const Tensor::Buffers& Tensor::buffers() const { return const_cast<Tensor*>(this)->buffers(); }

void Tensor::useDeviceBuffer(void* data, std::size_t capacity) {
  Buffers& b = buffers();
  if (b.data != nullptr) {
    throw Error("tensor " + name_ + " already has a device buffer; place it in the arena "
                "before anything runs");
  }
  if (capacity < bytes()) {
    throw Error("tensor " + name_ + " needs " + std::to_string(bytes()) + " bytes, its arena "
                "slot has " + std::to_string(capacity) + "; re-run paleozoic compile");
  }
  b.data = data;
  b.capacity = capacity;
}

Arena::Arena(std::size_t bytes, const std::vector<Place>& places)
    : bytes_(bytes), places_(places) {
  for (const Place& p : places) {
    if (p.offset > bytes_ || p.bytes > bytes_ - p.offset) {
      throw Error("memory plan: tensor " + p.tensor->name() + " at offset " +
                  std::to_string(p.offset) + " (" + std::to_string(p.bytes) +
                  " bytes) lies outside the arena of " + std::to_string(bytes_) +
                  " bytes; re-run paleozoic compile");
    }
  }
  if (bytes_ == 0) return;
  PZ_CHECK("arena", cnrtMalloc(&base_, bytes_));
  try {
    for (const Place& p : places) {
      if (p.tensor->hostOnly()) continue;  // no device buffer to place
      p.tensor->useDeviceBuffer(static_cast<char*>(base_) + p.offset, p.bytes);
    }
  } catch (...) {
    cnrtFree(base_);
    throw;
  }
}

Arena::~Arena() {
  if (base_ != nullptr) cnrtFree(base_);
}

void Tensor::copyFromHost(const float* src, std::size_t count) {
  if (isInteger()) {
    throw Error("tensor " + name_ + " holds " + elementTypeName(type_) +
                " values; set it with setInts, not float data");
  }
  if (count != elements()) {
    throw Error("tensor " + name_ + ": copyFromHost got " + std::to_string(count) +
                " floats, expected " + std::to_string(elements()) + " for shape " +
                shapeToString(shape_) + "; pass a buffer of exactly that size");
  }
  if (transferType() == CNML_DATA_FLOAT16) {
    std::vector<std::uint16_t> half(count);
    PZ_CHECK(name_, cnrtCastDataType(const_cast<float*>(src), CNRT_FLOAT32, half.data(),
                                     CNRT_FLOAT16, static_cast<int>(count), nullptr));
    PZ_CHECK(name_, cnrtMemcpy(deviceData(), half.data(), bytes(), CNRT_MEM_TRANS_DIR_HOST2DEV));
    return;
  }
  PZ_CHECK(name_,
           cnrtMemcpy(deviceData(), const_cast<float*>(src), bytes(), CNRT_MEM_TRANS_DIR_HOST2DEV));
}

void Tensor::copyToHost(float* dst, std::size_t count) {
  if (count != elements()) {
    throw Error("tensor " + name_ + ": copyToHost got room for " + std::to_string(count) +
                " floats, expected " + std::to_string(elements()) + " for shape " +
                shapeToString(shape_) + "; pass a buffer of exactly that size");
  }
  if (isInteger()) {  // as floats, for callers that read every output alike
    const std::vector<std::int64_t>& values = ints();
    for (std::size_t i = 0; i < count; ++i) dst[i] = static_cast<float>(values[i]);
    return;
  }
  const void* data = buffers().data;
  if (data == nullptr) {
    throw Error("tensor " + name_ +
                " has no device data: it was never written, or it is internal to a fused "
                "block; mark it as a graph output (markGraphOutput) before compiling to read it");
  }
  if (transferType() == CNML_DATA_FLOAT16) {
    std::vector<std::uint16_t> half(count);
    PZ_CHECK(name_, cnrtMemcpy(half.data(), const_cast<void*>(data), bytes(),
                               CNRT_MEM_TRANS_DIR_DEV2HOST));
    PZ_CHECK(name_, cnrtCastDataType(half.data(), CNRT_FLOAT16, dst, CNRT_FLOAT32,
                                     static_cast<int>(count), nullptr));
    return;
  }
  PZ_CHECK(name_, cnrtMemcpy(dst, const_cast<void*>(data), bytes(), CNRT_MEM_TRANS_DIR_DEV2HOST));
}

void Tensor::setInts(const std::int64_t* src, std::size_t count) {
  if (!isInteger()) {
    throw Error("tensor " + name_ + " holds float32 values; set it with copyFromHost");
  }
  if (count != elements()) {
    throw Error("tensor " + name_ + ": setInts got " + std::to_string(count) + " values, expected " +
                std::to_string(elements()) + " for shape " + shapeToString(shape_));
  }
  const std::int64_t lo = type_ == ElementType::kUint8   ? 0
                          : type_ == ElementType::kInt32 ? INT32_MIN
                                                         : INT64_MIN;
  const std::int64_t hi = type_ == ElementType::kUint8   ? 255
                          : type_ == ElementType::kInt32 ? INT32_MAX
                                                         : INT64_MAX;
  for (std::size_t i = 0; i < count; ++i) {
    if (src[i] < lo || src[i] > hi) {
      throw Error("tensor " + name_ + ": value " + std::to_string(src[i]) + " at index " +
                  std::to_string(i) + " does not fit " + elementTypeName(type_));
    }
  }
  Buffers& b = buffers();
  b.ints.assign(src, src + count);
  b.ints_set = true;
  if (type_ == ElementType::kInt32) {  // the SDK's ops read int32 indices on the device
    std::vector<std::int32_t> narrow(b.ints.begin(), b.ints.end());
    PZ_CHECK(name_, cnrtMemcpy(deviceData(), narrow.data(), bytes(), CNRT_MEM_TRANS_DIR_HOST2DEV));
  }
}

const std::vector<std::int64_t>& Tensor::ints() const {
  if (!isInteger()) throw Error("tensor " + name_ + " holds float32 values, not integers");
  const Buffers& b = buffers();
  if (!b.ints_set) {
    throw Error("tensor " + name_ + " (" + elementTypeName(type_) +
                ") was never written: set the input or run the layer producing it first");
  }
  return b.ints;
}

ConstTensor::ConstTensor(const std::string& layer, cnmlTensorType_t type, Shape shape)
    : layer_(layer), type_(type), shape_(std::move(shape)) {
  desc_ = detail::createTensorDesc(type, shape_, layer_);
}

ConstTensor::~ConstTensor() { detail::destroyTensorDesc(&desc_); }

void ConstTensor::bind(const float* data) {
  MallocBuffer<float> values(elementCount(shape_));
  if (!values.empty()) std::memcpy(values.data(), data, values.size() * sizeof(float));
  data_ = std::move(values);
  pending_ = nullptr;
}

void ConstTensor::bindLater(std::function<void(float*)> read) {
  data_ = MallocBuffer<float>();
  pending_ = std::move(read);
}

void ConstTensor::load() {
  if (!pending_) return;
  MallocBuffer<float> values(elementCount(shape_));
  pending_(values.data());
  data_ = std::move(values);
  pending_ = nullptr;
}

template <typename T>
void ConstTensor::handOver(MallocBuffer<T>& buffer) {
  buffer.release();
  data_ = MallocBuffer<float>();
  handed_over_ = true;
}

void ConstTensor::releaseHost() {
  if (!bound_once_) return;  // the SDK has no copy yet
  data_ = MallocBuffer<float>();
  pending_ = nullptr;
  bound_ = MallocBuffer<unsigned char>();
  // The compiled ops hold their own copy (the mock's compiled op, or the backend's
  // reordered one): the bound tensor's goes with its descriptor.
  detail::destroyTensorDesc(&desc_);
}

namespace {

// RAII for the host quantisation parameter of cnrtCastDataType.
struct HostQuant {
  cnrtQuantizedParam_t param = nullptr;
  ~HostQuant() {
    if (param != nullptr) cnrtDestroyQuantizedParam(param);
  }
};

}  // namespace

void ConstTensor::bindAs(cnmlDataType_t dtype, const std::vector<QuantParam>* channels,
                         bool hand_over) {
  if (handed_over_) {
    throw Error(layer_ + ": its weights were handed to the SDK when its block compiled and "
                "cannot be bound again; build a new session to compile it another way");
  }
  load();
  if (bound_once_ || dtype_ != CNML_DATA_FLOAT32) {
    // Bound before at another precision (an estimate built the op): SDK const data cannot
    // change dtype, so start from a fresh descriptor.
    detail::destroyTensorDesc(&desc_);
    desc_ = detail::createTensorDesc(type_, shape_, layer_);
    bound_ = MallocBuffer<unsigned char>();
    bound_once_ = false;
    dtype_ = CNML_DATA_FLOAT32;
  }
  const std::size_t count = data_.size();
  if (count == 0) {  // not configured: a descriptor for the device model only
    if (dtype != CNML_DATA_FLOAT32) PZ_CHECK(layer_, cnmlSetTensorDataType(desc_, dtype));
    dtype_ = dtype;
    return;
  }
  if (dtype == CNML_DATA_FLOAT32) {
    // The host copy itself: no second copy of the weights (VGG's fc6 alone is 411 MB).
    PZ_CHECK(layer_, cnmlBindConstData_V2(desc_, data_.data(), hand_over));
    if (hand_over) handOver(data_);
    bound_once_ = true;
    return;
  } else if (dtype == CNML_DATA_FLOAT16) {
    bound_ = MallocBuffer<unsigned char>(count * 2);
    PZ_CHECK(layer_, cnrtCastDataType(data_.data(), CNRT_FLOAT32, bound_.data(), CNRT_FLOAT16,
                                      static_cast<int>(count), nullptr));
    if (hand_over) data_ = MallocBuffer<float>();  // not beside the SDK's decoded copy
  } else if (dtype == CNML_DATA_INT8) {
    // Quantised on the host one output channel at a time, as Cambricon's tools do.
    const int n = shape_.at(0);
    if (channels == nullptr || static_cast<int>(channels->size()) != n) {
      throw Error(layer_ + ": an int8 filter needs one quantisation parameter per output channel (" +
                  std::to_string(n) + ")");
    }
    const std::size_t per = count / static_cast<std::size_t>(n);
    bound_ = MallocBuffer<unsigned char>(count);
    std::vector<int> positions;
    std::vector<float> scales;
    for (int c = 0; c < n; ++c) {
      const QuantParam& q = (*channels)[static_cast<std::size_t>(c)];
      HostQuant host;
      PZ_CHECK(layer_, cnrtCreateQuantizedParam(&host.param, q.position, q.scale, 0));
      PZ_CHECK(layer_, cnrtCastDataType(data_.data() + c * per, CNRT_FLOAT32,
                                        bound_.data() + c * per, CNRT_INT8,
                                        static_cast<int>(per), host.param));
      positions.push_back(q.position);
      scales.push_back(q.scale);
    }
    if (hand_over) data_ = MallocBuffer<float>();  // not beside the SDK's decoded copy
    PZ_CHECK(layer_, cnmlSetTensorDataType(desc_, dtype));
    PZ_CHECK(layer_, cnmlSetQuantizedPositionByChannel(desc_, positions.data(), n));
    PZ_CHECK(layer_, cnmlSetQuantizedScaleByChannel(desc_, scales.data(), n));
    PZ_CHECK(layer_, cnmlBindConstData_V2(desc_, bound_.data(), hand_over));
    if (hand_over) handOver(bound_);
    bound_once_ = true;
    dtype_ = dtype;
    return;
  } else {
    throw Error(layer_ + ": weights cannot be bound as SDK dtype " + std::to_string(dtype));
  }
  PZ_CHECK(layer_, cnmlSetTensorDataType(desc_, dtype));
  PZ_CHECK(layer_, cnmlBindConstData_V2(desc_, bound_.data(), hand_over));
  if (hand_over) handOver(bound_);
  bound_once_ = true;
  dtype_ = dtype;
}

}  // namespace pz
