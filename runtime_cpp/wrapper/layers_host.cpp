// Host layers (layers_host.h): the base that carries a host layer's values over the link,
// and the casts, ArgMax and TopK, computed on the CPU.
#include <cnml_mock.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include "detail.h"

namespace pz {

namespace {

// What the host copies over the link: a float or int32 tensor lives on the device; int64
// and uint8 tensors are already on the host.
std::size_t linkBytes(const Tensor& tensor) {
  const ElementType type = tensor.elementType();
  return type == ElementType::kFloat || type == ElementType::kInt32 ? tensor.bytes() : 0;
}

Shape argMaxShape(const std::string& layer, const Shape& in, int axis, bool keepdims) {
  const int a = detail::normaliseAxis(layer, axis, static_cast<int>(in.size()));
  Shape out = in;
  if (keepdims) {
    out[a] = 1;
  } else {
    out.erase(out.begin() + a);
    if (out.empty()) out.push_back(1);
  }
  return out;
}

Shape topKShape(const std::string& layer, const Shape& in, int axis, int k) {
  const int a = detail::normaliseAxis(layer, axis, static_cast<int>(in.size()));
  if (k < 1 || k > in[a]) {
    throw Error(layer + ": k " + std::to_string(k) + " must be within 1.." +
                std::to_string(in[a]) + " (axis " + std::to_string(a) + " of " +
                shapeToString(in) + ")");
  }
  Shape out = in;
  out[a] = k;
  return out;
}

}  // namespace

namespace detail {

AxisSpan axisSpan(const Shape& shape, int axis) {
  AxisSpan span{1, static_cast<std::size_t>(shape[axis]), 1};
  for (int a = 0; a < axis; ++a) span.outer *= static_cast<std::size_t>(shape[a]);
  for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < shape.size(); ++a)
    span.inner *= static_cast<std::size_t>(shape[a]);
  return span;
}

}  // namespace detail

HostLayer::HostLayer(std::string name, std::vector<Tensor*> inputs, Shape output_shape,
                     ElementType output_type)
    : Layer(std::move(name), std::move(inputs), std::move(output_shape), output_type) {
  // The op stands for the layer's copies, so that the device model prices them and the
  // queue's clock counts them; it is built once the block has settled the inputs' dtypes.
  defineOp([this] {
    std::vector<cnmlTensor_t> ins;
    std::size_t to_host = 0;
    for (Tensor* input : inputs_) {
      ins.push_back(input->desc());
      to_host += linkBytes(*input);
    }
    PZ_CHECK(name_, cnmlMockCreateHostTransferOp(&op_, ins.data(), static_cast<int>(ins.size()),
                                                 output_.desc(), to_host, linkBytes(output_)));
  });
}

cnmlStatus_t HostLayer::forward(cnrtQueue_t queue) {
  PZ_CHECK(name_, cnrtSyncQueue(queue));  // the inputs' producers have finished
  std::vector<std::vector<double>> values;
  for (Tensor* input : inputs_) {
    std::vector<double> v;
    const bool written = input->isInteger() ? input->intsWritten() : input->hasDeviceData();
    if (!written && readsBranchesNotRun()) {
      v.assign(input->elements(), 0.0);
    } else if (input->isInteger()) {
      const std::vector<std::int64_t>& ints = input->ints();
      v.assign(ints.begin(), ints.end());
    } else {
      std::vector<float> f(input->elements());
      input->copyToHost(f.data(), f.size());
      v.assign(f.begin(), f.end());
    }
    values.push_back(std::move(v));
  }
  std::vector<double> out(output_.elements());
  compute(values, out);
  if (output_.isInteger()) {
    std::vector<std::int64_t> ints(out.size());
    for (std::size_t i = 0; i < out.size(); ++i) {
      // Within int64 (and so exact as a double) is checked before converting.
      if (!(std::fabs(out[i]) < 9.2e18)) {
        throw Error(name_ + ": value " + std::to_string(out[i]) + " at index " +
                    std::to_string(i) + " is not an integer " + elementTypeName(output_.elementType()) +
                    " can hold");
      }
      ints[i] = static_cast<std::int64_t>(out[i]);
    }
    try {
      output_.setInts(ints.data(), ints.size());
    } catch (const Error& e) {
      throw Error(name_ + ": " + e.what());
    }
  } else {
    std::vector<float> f(out.begin(), out.end());
    output_.copyFromHost(f.data(), f.size());
  }
  const cnmlStatus_t status = cnmlMockComputeHostTransferOpForward(op_, queue);
  check(status, name_, "cnmlMockComputeHostTransferOpForward");
  return status;
}

HostCastLayer::HostCastLayer(std::string name, Tensor& input, ElementType to, Shape shape,
                             int wrap)
    : HostLayer(name, {&input}, shape.empty() ? input.shape() : shape, to), to_(to), wrap_(wrap) {
  if (wrap < 0) throw Error(name_ + ": wrap " + std::to_string(wrap) + " must be >= 0");
  if (elementCount(output_.shape()) != input.elements()) {
    throw Error(name_ + ": shape " + shapeToString(output_.shape()) + " holds " +
                std::to_string(elementCount(output_.shape())) + " values, the input " +
                shapeToString(input.shape()) + " " + std::to_string(input.elements()));
  }
}

void HostCastLayer::compute(const std::vector<std::vector<double>>& inputs,
                            std::vector<double>& output) const {
  const std::vector<double>& x = inputs[0];
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double v = wrap_ > 0 && x[i] < 0 ? x[i] + wrap_ : x[i];
    // ONNX leaves float -> int of out-of-range values undefined; setInts refuses them.
    output[i] = to_ == ElementType::kFloat ? static_cast<double>(static_cast<float>(v))
                                           : std::trunc(v);
  }
}

HostArgMaxLayer::HostArgMaxLayer(std::string name, Tensor& input, int axis, bool keepdims,
                                 bool select_last_index)
    : HostLayer(name, {&input}, argMaxShape(name, input.shape(), axis, keepdims),
                ElementType::kInt64),
      axis_(detail::normaliseAxis(name_, axis, static_cast<int>(input.shape().size()))),
      select_last_(select_last_index) {}

void HostArgMaxLayer::compute(const std::vector<std::vector<double>>& inputs,
                              std::vector<double>& output) const {
  const auto [outer, n, inner] = detail::axisSpan(inputs_[0]->shape(), axis_);
  const std::vector<double>& x = inputs[0];
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      const double* row = &x[o * n * inner + i];
      std::size_t best = 0;
      for (std::size_t k = 1; k < n; ++k) {
        const double v = row[k * inner], b = row[best * inner];
        // NaN counts as the largest value, as numpy's and onnxruntime's argmax do.
        const bool larger = std::isnan(v) ? !std::isnan(b) : v > b;
        const bool equal = v == b || (std::isnan(v) && std::isnan(b));
        if (larger || (select_last_ && equal)) best = k;
      }
      output[o * inner + i] = static_cast<double>(best);
    }
  }
}

HostTopKLayer::HostTopKLayer(std::string name, Tensor& input, int axis, int k,
                             TopKOutput output, bool largest)
    : HostLayer(name, {&input}, topKShape(name, input.shape(), axis, k),
                output == TopKOutput::kIndices ? ElementType::kInt64 : input.elementType()),
      axis_(detail::normaliseAxis(name_, axis, static_cast<int>(input.shape().size()))),
      k_(k),
      which_(output),
      largest_(largest) {}

void HostTopKLayer::compute(const std::vector<std::vector<double>>& inputs,
                            std::vector<double>& output) const {
  const auto [outer, n, inner] = detail::axisSpan(inputs_[0]->shape(), axis_);
  const std::size_t k = static_cast<std::size_t>(k_);
  const std::vector<double>& x = inputs[0];
  std::vector<std::size_t> order(n);
  for (std::size_t o = 0; o < outer; ++o) {
    for (std::size_t i = 0; i < inner; ++i) {
      const double* row = &x[o * n * inner + i];
      // NaN ranks above every number (as ArgMax's), so it leads the largest and trails the
      // smallest; ties keep the lower index first (a stable order), as ONNX asks.
      auto before = [&](std::size_t a, std::size_t b) {
        const double va = row[a * inner], vb = row[b * inner];
        const bool a_nan = std::isnan(va), b_nan = std::isnan(vb);
        if (a_nan || b_nan) return largest_ ? a_nan && !b_nan : b_nan && !a_nan;
        return largest_ ? va > vb : va < vb;
      };
      std::iota(order.begin(), order.end(), std::size_t{0});
      std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k),
                        order.end(), [&](std::size_t a, std::size_t b) {
                          return before(a, b) || (!before(b, a) && a < b);
                        });
      for (std::size_t j = 0; j < k; ++j) {
        output[(o * k + j) * inner + i] = which_ == TopKOutput::kIndices
                                               ? static_cast<double>(order[j])
                                               : row[order[j] * inner];
      }
    }
  }
}

}  // namespace pz
