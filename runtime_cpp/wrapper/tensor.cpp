// Tensor (activations with a lazily allocated device buffer) and ConstTensor (weights).
#include <vector>

#include "detail.h"

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
  check(cnmlCreateTensor_V2(&desc, type), owner, "cnmlCreateTensor_V2");
  try {
    std::vector<int> dims(shape);
    check(cnmlSetTensorShape_V2(desc, static_cast<int>(dims.size()), dims.data(), nullptr), owner,
          "cnmlSetTensorShape_V2");
    check(cnmlSetTensorDataType(desc, CNML_DATA_FLOAT32), owner, "cnmlSetTensorDataType");
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

Tensor::Tensor(std::string name, Shape shape) : name_(std::move(name)), shape_(std::move(shape)) {
  desc_ = detail::createTensorDesc(CNML_TENSOR, shape_, name_);
}

Tensor::~Tensor() {
  if (data_ != nullptr) cnrtFree(data_);
  detail::destroyTensorDesc(&desc_);
}

void* Tensor::deviceData() {
  if (data_ == nullptr) check(cnrtMalloc(&data_, bytes()), name_, "cnrtMalloc");
  return data_;
}

void Tensor::copyFromHost(const float* src, std::size_t count) {
  if (count != elements()) {
    throw Error("tensor " + name_ + ": copyFromHost got " + std::to_string(count) +
                " floats, expected " + std::to_string(elements()) + " for shape " +
                shapeToString(shape_) + "; pass a buffer of exactly that size");
  }
  check(cnrtMemcpy(deviceData(), const_cast<float*>(src), bytes(), CNRT_MEM_TRANS_DIR_HOST2DEV),
        name_, "cnrtMemcpy");
}

void Tensor::copyToHost(float* dst, std::size_t count) {
  if (count != elements()) {
    throw Error("tensor " + name_ + ": copyToHost got room for " + std::to_string(count) +
                " floats, expected " + std::to_string(elements()) + " for shape " +
                shapeToString(shape_) + "; pass a buffer of exactly that size");
  }
  if (data_ == nullptr) {
    throw Error("tensor " + name_ +
                " has no device data: it was never written, or it is internal to a fused "
                "block; mark it as a graph output (markGraphOutput) before compiling to read it");
  }
  check(cnrtMemcpy(dst, data_, bytes(), CNRT_MEM_TRANS_DIR_DEV2HOST), name_, "cnrtMemcpy");
}

ConstTensor::ConstTensor(const std::string& layer, cnmlTensorType_t type, Shape shape)
    : layer_(layer), shape_(std::move(shape)) {
  desc_ = detail::createTensorDesc(type, shape_, layer_);
}

ConstTensor::~ConstTensor() { detail::destroyTensorDesc(&desc_); }

void ConstTensor::bind(const float* data) {
  detail::checkWeightExtent(layer_, data, shape_);
  data_.assign(data, data + elementCount(shape_));
  check(cnmlBindConstData_V2(desc_, data_.data(), false), layer_, "cnmlBindConstData_V2");
}

namespace detail {

void bindFilterAndBias(const std::string& layer, ConstTensor& filter, ConstTensor& bias,
                       const float* weight, const float* bias_data) {
  if (weight == nullptr) throw Error(layer + ": configLayer needs the weight data (got null)");
  filter.bind(weight);
  if (bias_data != nullptr) {
    bias.bind(bias_data);
  } else {
    const std::vector<float> zeros(elementCount(bias.shape()), 0.0f);
    bias.bind(zeros.data());
  }
}

}  // namespace detail

}  // namespace pz
