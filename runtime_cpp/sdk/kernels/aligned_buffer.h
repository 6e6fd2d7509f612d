// 64-byte aligned float storage: kernels load whole cache lines / vector registers from it.
#ifndef PZ_SDK_ALIGNED_BUFFER_H_
#define PZ_SDK_ALIGNED_BUFFER_H_

#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace pz_sdk {

class AlignedBuffer {
 public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(std::size_t count) { resize(count); }
  ~AlignedBuffer() { std::free(data_); }
  AlignedBuffer(const AlignedBuffer& o) { *this = o; }
  AlignedBuffer& operator=(const AlignedBuffer& o) {
    if (this != &o) {
      resize(o.size_);
      if (size_) std::memcpy(data_, o.data_, size_ * sizeof(float));
    }
    return *this;
  }
  AlignedBuffer(AlignedBuffer&& o) noexcept
      : data_(o.data_), size_(o.size_), capacity_(o.capacity_) {
    o.data_ = nullptr;
    o.size_ = o.capacity_ = 0;
  }
  AlignedBuffer& operator=(AlignedBuffer&& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
    return *this;
  }

  // Contents are not preserved; growing only, so scratch reuse never reallocates.
  void resize(std::size_t count) {
    if (count <= capacity_ && data_) {
      size_ = count;
      return;
    }
    std::free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
    if (count == 0) return;
    std::size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
    data_ = static_cast<float*>(std::aligned_alloc(64, bytes));
    if (!data_) throw std::bad_alloc();
    size_ = capacity_ = count;
  }
  float* data() { return data_; }
  const float* data() const { return data_; }
  std::size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

 private:
  float* data_ = nullptr;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace pz_sdk

#endif  // PZ_SDK_ALIGNED_BUFFER_H_
