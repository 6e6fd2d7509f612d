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

Tensor::Tensor(std::string name, Shape shape) : name_(std::move(name)), shape_(std::move(shape)) {
  desc_ = detail::createTensorDesc(CNML_TENSOR, shape_, name_);
}

Tensor::~Tensor() {
  if (data_ != nullptr) cnrtFree(data_);
  detail::destroyTensorDesc(&desc_);
}

void* Tensor::deviceData() {
  if (data_ == nullptr) PZ_CHECK(name_, cnrtMalloc(&data_, bytes()));
  return data_;
}

void Tensor::copyFromHost(const float* src, std::size_t count) {
  if (count != elements()) {
    throw Error("tensor " + name_ + ": copyFromHost got " + std::to_string(count) +
                " floats, expected " + std::to_string(elements()) + " for shape " +
                shapeToString(shape_) + "; pass a buffer of exactly that size");
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
  if (data_ == nullptr) {
    throw Error("tensor " + name_ +
                " has no device data: it was never written, or it is internal to a fused "
                "block; mark it as a graph output (markGraphOutput) before compiling to read it");
  }
  PZ_CHECK(name_, cnrtMemcpy(dst, data_, bytes(), CNRT_MEM_TRANS_DIR_DEV2HOST));
}

ConstTensor::ConstTensor(const std::string& layer, cnmlTensorType_t type, Shape shape)
    : layer_(layer), type_(type), shape_(std::move(shape)) {
  desc_ = detail::createTensorDesc(type, shape_, layer_);
}

ConstTensor::~ConstTensor() { detail::destroyTensorDesc(&desc_); }

void ConstTensor::bind(const float* data) {
  data_.assign(data, data + elementCount(shape_));
  PZ_CHECK(layer_, cnmlBindConstData_V2(desc_, data_.data(), false));
}

}  // namespace pz
