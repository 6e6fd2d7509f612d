// Host layers: casts of integer tensors, ArgMax, Where and TopK, computed on the CPU.
#include <cnml_mock.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
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

// A tensor seen as [outer, n, inner] around `axis` (normalised): the rows a reduction
// along the axis walks, `inner` apart.
struct AxisSpan {
  std::size_t outer, n, inner;
};

AxisSpan axisSpan(const Shape& shape, int axis) {
  AxisSpan span{1, static_cast<std::size_t>(shape[axis]), 1};
  for (int a = 0; a < axis; ++a) span.outer *= static_cast<std::size_t>(shape[a]);
  for (std::size_t a = static_cast<std::size_t>(axis) + 1; a < shape.size(); ++a)
    span.inner *= static_cast<std::size_t>(shape[a]);
  return span;
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
  const auto [outer, n, inner] = axisSpan(inputs_[0]->shape(), axis_);
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

namespace {

// Throws unless `in` broadcasts (numpy, right-aligned) to the layer's output shape.
void checkBroadcast(const std::string& layer, const Shape& in, const Shape& out) {
  bool ok = in.size() <= out.size();
  for (std::size_t i = 0; ok && i < in.size(); ++i) {
    const int o = out[out.size() - in.size() + i];
    ok = in[i] == 1 || in[i] == o;
  }
  if (!ok) {
    throw Error(layer + ": input " + shapeToString(in) + " does not broadcast to " +
                shapeToString(out));
  }
}

// The offsets of every output element (row-major) in inputs of the given shapes, each
// broadcast to `out`: one element's position in each input, the output's order.
class BroadcastWalk {
 public:
  BroadcastWalk(const std::vector<const Shape*>& inputs, const Shape& out)
      : out_(out), index_(out.size(), 0), at_(inputs.size(), 0) {
    for (const Shape* in : inputs) {
      // Strides right-aligned to the output's axes, 0 where the input broadcasts.
      std::vector<std::size_t> stride(out.size(), 0);
      std::size_t s = 1;
      for (std::size_t i = in->size(); i-- > 0;) {
        stride[out.size() - in->size() + i] = (*in)[i] == 1 ? 0 : s;
        s *= static_cast<std::size_t>((*in)[i]);
      }
      strides_.push_back(std::move(stride));
    }
  }
  std::size_t at(std::size_t input) const { return at_[input]; }
  void next() {
    for (std::size_t a = out_.size(); a-- > 0;) {
      for (std::size_t i = 0; i < at_.size(); ++i) at_[i] += strides_[i][a];
      if (++index_[a] < static_cast<std::size_t>(out_[a])) return;
      for (std::size_t i = 0; i < at_.size(); ++i) at_[i] -= strides_[i][a] * index_[a];
      index_[a] = 0;
    }
  }

 private:
  const Shape& out_;
  std::vector<std::size_t> index_, at_;
  std::vector<std::vector<std::size_t>> strides_;
};

// The type of a HostWhereLayer's values: their tensors', float32 when both are numbers.
ElementType valueType(const HostOperand& then, const HostOperand& otherwise) {
  const HostOperand& typed = then.tensor ? then : otherwise;
  return typed.tensor ? typed.tensor->elementType() : ElementType::kFloat;
}

std::vector<Tensor*> whereInputs(Tensor& condition, const HostOperand& then,
                                 const HostOperand& otherwise) {
  std::vector<Tensor*> inputs{&condition};
  for (const HostOperand* v : {&then, &otherwise})
    if (v->tensor) inputs.push_back(v->tensor);
  return inputs;
}

}  // namespace

HostSelectLayer::HostSelectLayer(std::string name, Tensor& input, HostTest test, Shape shape,
                                 std::optional<float> then_value, std::optional<float> otherwise)
    : HostLayer(name, {&input}, shape, ElementType::kFloat),
      test_(test),
      then_(then_value),
      otherwise_(otherwise) {
  checkBroadcast(name_, input.shape(), output_.shape());
}

void HostSelectLayer::compute(const std::vector<std::vector<double>>& inputs,
                              std::vector<double>& output) const {
  BroadcastWalk walk({&inputs_[0]->shape()}, output_.shape());
  for (std::size_t k = 0; k < output.size(); ++k, walk.next()) {
    const double x = inputs[0][walk.at(0)];
    const bool hit = test_ == HostTest::kIsNan ? std::isnan(x) : x != 0.0;
    const std::optional<float>& value = hit ? then_ : otherwise_;
    output[k] = value ? static_cast<double>(*value) : x;
  }
}

HostWhereLayer::HostWhereLayer(std::string name, Tensor& condition, HostOperand then,
                               HostOperand otherwise, Shape shape)
    : HostLayer(name, whereInputs(condition, then, otherwise), shape,
                valueType(then, otherwise)) {
  if (!then.tensor) then_ = static_cast<float>(then.value);
  if (!otherwise.tensor) otherwise_ = static_cast<float>(otherwise.value);
  for (const Tensor* t : inputs_) {
    checkBroadcast(name_, t->shape(), output_.shape());
    if (t != inputs_[0] && t->elementType() != output_.elementType()) {
      throw Error(name_ + ": the values must be tensors of one type; " + t->name() + " is " +
                  elementTypeName(t->elementType()) + ", the other " +
                  elementTypeName(output_.elementType()));
    }
  }
}

void HostWhereLayer::compute(const std::vector<std::vector<double>>& inputs,
                             std::vector<double>& output) const {
  std::vector<const Shape*> shapes;
  for (const Tensor* t : inputs_) shapes.push_back(&t->shape());
  BroadcastWalk walk(shapes, output_.shape());
  const std::size_t then_input = 1, otherwise_input = then_ ? 1 : 2;
  for (std::size_t k = 0; k < output.size(); ++k, walk.next()) {
    if (inputs[0][walk.at(0)] != 0.0) {
      output[k] = then_ ? static_cast<double>(*then_) : inputs[then_input][walk.at(then_input)];
    } else {
      output[k] = otherwise_ ? static_cast<double>(*otherwise_)
                             : inputs[otherwise_input][walk.at(otherwise_input)];
    }
  }
}

namespace {

std::vector<Tensor*> tensorsOf(const HostOperand& a, const HostOperand& b) {
  std::vector<Tensor*> inputs;
  for (const HostOperand* v : {&a, &b})
    if (v->tensor) inputs.push_back(v->tensor);
  return inputs;
}

// A constant's values are the weights file's floats: integral or not, they compute as the
// tensor operand's type says.
bool isIntegral(const HostOperand& v) {
  if (v.is_constant) return true;
  return v.tensor ? v.tensor->isInteger() : std::trunc(v.value) == v.value;
}


bool truth(double v) { return v != 0.0; }  // nan is true, as ONNX's Cast to bool has it

}  // namespace

HostArithLayer::Source HostArithLayer::sourceOf(const HostOperand& v) {
  if (v.tensor) return Source::kInput;
  return v.is_constant ? Source::kConstant : Source::kNumber;
}

HostArithLayer::HostArithLayer(std::string name, HostOperand a, HostOperand b, HostArith op,
                               Shape shape, ElementType to)
    : HostLayer(name, tensorsOf(a, b), shape, to),
      a_from_(sourceOf(a)),
      b_from_(sourceOf(b)),
      a_(a.value),
      b_(b.value),
      op_(op),
      integers_(isIntegral(a) && isIntegral(b)) {
  if (inputs_.empty()) throw Error(name_ + ": no tensor operand; fold it instead");
  if (a.is_constant && b.is_constant) throw Error(name_ + ": one constant operand at most");
  for (const Tensor* t : inputs_) checkBroadcast(name_, t->shape(), output_.shape());
  for (const HostOperand* v : {&a, &b}) {
    if (!v->is_constant) continue;
    checkBroadcast(name_, v->constant, output_.shape());
    constant_ = &declareWeight("constant", CNML_CONST, v->constant);
  }
}

void HostArithLayer::compute(const std::vector<std::vector<double>>& inputs,
                             std::vector<double>& output) const {
  std::vector<const Shape*> shapes;
  for (const Tensor* t : inputs_) shapes.push_back(&t->shape());
  if (constant_) shapes.push_back(&constant_->shape());  // walked as the last input
  BroadcastWalk walk(shapes, output_.shape());
  const std::size_t b_input = a_from_ == Source::kInput ? 1 : 0;
  const std::size_t constant_at = inputs_.size();
  auto value = [&](Source from, double number, std::size_t input) {
    switch (from) {
      case Source::kNumber: return number;
      case Source::kInput: return inputs[input][walk.at(input)];
      case Source::kConstant: break;
    }
    return static_cast<double>(constant_->values()[walk.at(constant_at)]);
  };
  for (std::size_t k = 0; k < output.size(); ++k, walk.next()) {
    const double a = value(a_from_, a_, 0), b = value(b_from_, b_, b_input);
    double r = 0.0;
    switch (op_) {
      case HostArith::kAdd: r = a + b; break;
      case HostArith::kSub: r = a - b; break;
      case HostArith::kMul: r = a * b; break;
      case HostArith::kDiv:
      case HostArith::kMod:
      case HostArith::kFmod:
        if (integers_) {
          if (b == 0.0) throw Error(name_ + ": integer division by zero at index " +
                                    std::to_string(k));
          const auto x = static_cast<std::int64_t>(a), y = static_cast<std::int64_t>(b);
          std::int64_t q = x / y, m = x % y;  // C++: truncated, the dividend's sign
          if (op_ == HostArith::kMod && m != 0 && ((m < 0) != (y < 0))) m += y;
          r = static_cast<double>(op_ == HostArith::kDiv ? q : m);
        } else if (op_ == HostArith::kDiv) {
          r = static_cast<double>(static_cast<float>(a) / static_cast<float>(b));
        } else {
          r = std::fmod(a, b);
          if (op_ == HostArith::kMod && r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
        }
        break;
      case HostArith::kEqual: r = a == b; break;
      case HostArith::kNotEqual: r = a != b; break;
      case HostArith::kLess: r = a < b; break;
      case HostArith::kLessEqual: r = a <= b; break;
      case HostArith::kGreater: r = a > b; break;
      case HostArith::kGreaterEqual: r = a >= b; break;
      case HostArith::kAnd: r = truth(a) && truth(b); break;
      case HostArith::kOr: r = truth(a) || truth(b); break;
      case HostArith::kXor: r = truth(a) != truth(b); break;
    }
    output[k] = r;
  }
}

HostGatherElementsLayer::HostGatherElementsLayer(std::string name, Tensor& data,
                                                 Tensor& indices, int axis)
    : HostLayer(name, {&data, &indices}, indices.shape(), data.elementType()),
      axis_(detail::normaliseAxis(name_, axis, static_cast<int>(data.shape().size()))) {
  const Shape &d = data.shape(), &i = indices.shape();
  bool ok = d.size() == i.size();
  for (std::size_t a = 0; ok && a < d.size(); ++a)
    ok = static_cast<int>(a) == axis_ || i[a] <= d[a];
  if (!ok) {
    throw Error(name_ + ": indices " + shapeToString(i) + " do not fit data " +
                shapeToString(d) + " (the same rank, at most the data's size off axis " +
                std::to_string(axis_) + ")");
  }
  if (indices.elementType() == ElementType::kFloat) {
    throw Error(name_ + ": the indices must be an integer tensor, " + indices.name() +
                " is float32");
  }
}

void HostGatherElementsLayer::compute(const std::vector<std::vector<double>>& inputs,
                                      std::vector<double>& output) const {
  const Shape &d = inputs_[0]->shape(), &out = output_.shape();
  // Row-major strides of the data.
  std::vector<std::size_t> stride(d.size(), 1);
  for (std::size_t a = d.size(); a-- > 1;)
    stride[a - 1] = stride[a] * static_cast<std::size_t>(d[a]);
  const long long size = d[static_cast<std::size_t>(axis_)];
  std::vector<std::size_t> index(out.size(), 0);
  for (std::size_t k = 0; k < output.size(); ++k) {
    long long j = static_cast<long long>(inputs[1][k]);
    if (j < 0) j += size;
    if (j < 0 || j >= size) {
      throw Error(name_ + ": index " + std::to_string(static_cast<long long>(inputs[1][k])) +
                  " is outside axis " + std::to_string(axis_) + " of size " +
                  std::to_string(size));
    }
    std::size_t at = 0;
    for (std::size_t a = 0; a < out.size(); ++a)
      at += (static_cast<int>(a) == axis_ ? static_cast<std::size_t>(j) : index[a]) * stride[a];
    output[k] = inputs[0][at];
    for (std::size_t a = out.size(); a-- > 0;) {
      if (++index[a] < static_cast<std::size_t>(out[a])) break;
      index[a] = 0;
    }
  }
}

namespace {

Shape gatherShape(const std::string& layer, const Shape& data, const Shape& indices, int axis) {
  const int a = detail::normaliseAxis(layer, axis, static_cast<int>(data.size()));
  Shape out(data.begin(), data.begin() + a);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), data.begin() + a + 1, data.end());
  return out;
}

}  // namespace

HostGatherLayer::HostGatherLayer(std::string name, Tensor& data, Tensor& indices, int axis)
    : HostLayer(name, {&data, &indices}, gatherShape(name, data.shape(), indices.shape(), axis),
                data.elementType()),
      axis_(detail::normaliseAxis(name_, axis, static_cast<int>(data.shape().size()))) {
  if (indices.elementType() == ElementType::kFloat) {
    throw Error(name_ + ": the indices must be an integer tensor, " + indices.name() +
                " is float32");
  }
}

void HostGatherLayer::compute(const std::vector<std::vector<double>>& inputs,
                              std::vector<double>& output) const {
  const auto [outer, n, inner] = axisSpan(inputs_[0]->shape(), axis_);
  const std::vector<double>& index = inputs[1];
  std::size_t k = 0;
  for (std::size_t o = 0; o < outer; ++o) {
    for (double raw : index) {
      long long j = static_cast<long long>(raw);
      if (j < 0) j += static_cast<long long>(n);
      if (j < 0 || j >= static_cast<long long>(n)) {
        throw Error(name_ + ": index " + std::to_string(static_cast<long long>(raw)) +
                    " is outside axis " + std::to_string(axis_) + " of size " +
                    std::to_string(n));
      }
      const double* row = &inputs[0][(o * n + static_cast<std::size_t>(j)) * inner];
      std::copy(row, row + inner, output.begin() + static_cast<std::ptrdiff_t>(k));
      k += inner;
    }
  }
}

namespace {

Shape gridSampleShape(const std::string& name, const Shape& data, const Shape& grid) {
  if (data.size() != 4 || grid.size() != 4 || grid[1] != 2 || grid[0] != data[0]) {
    throw Error(name + ": GridSample takes data [N, C, H, W] and a grid [N, 2, H_out, W_out], "
                "not " + shapeToString(data) + " and " + shapeToString(grid));
  }
  return {data[0], data[1], grid[2], grid[3]};
}

// ONNX's reflection of a coordinate into [low, high] (its reference implementation).
double reflect(double x, double low, double high) {
  const double range = high - low;
  if (range <= 0.0) return low;
  if (x < low) {
    const double d = low - x;
    const long long flips = static_cast<long long>(d / range);
    const double r = d - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? low + r : high - r;
  }
  if (x > high) {
    const double d = x - high;
    const long long flips = static_cast<long long>(d / range);
    const double r = d - static_cast<double>(flips) * range;
    return flips % 2 == 0 ? high - r : low + r;
  }
  return x;
}

}  // namespace

HostGridSampleLayer::HostGridSampleLayer(std::string name, Tensor& data, Tensor& grid,
                                         GridSampleMode mode, GridSamplePadding padding,
                                         bool align_corners)
    : HostLayer(name, {&data, &grid}, gridSampleShape(name, data.shape(), grid.shape()),
                ElementType::kFloat),
      mode_(mode),
      padding_(padding),
      align_corners_(align_corners) {
  if (data.isInteger() || grid.isInteger()) {
    throw Error(name_ + ": GridSample samples float32 data at float32 positions");
  }
}

HostGridSampleLayer::HostGridSampleLayer(std::string name, Tensor& data, HostConstant grid,
                                         GridSampleMode mode, GridSamplePadding padding,
                                         bool align_corners)
    : HostLayer(name, {&data}, gridSampleShape(name, data.shape(), grid.shape),
                ElementType::kFloat),
      mode_(mode),
      padding_(padding),
      align_corners_(align_corners),
      grid_(&declareWeight("grid", CNML_CONST, grid.shape)) {
  if (data.isInteger()) throw Error(name_ + ": GridSample samples float32 data");
}

void HostGridSampleLayer::compute(const std::vector<std::vector<double>>& inputs,
                                  std::vector<double>& output) const {
  const Shape& d = inputs_[0]->shape();
  const long long channels = d[1], height = d[2], width = d[3];
  const long long out_h = output_.shape()[2], out_w = output_.shape()[3];
  const std::vector<double>& data = inputs[0];
  std::vector<double> constant;
  if (grid_) constant.assign(grid_->values().begin(), grid_->values().end());
  const std::vector<double>& grid = grid_ ? constant : inputs[1];
  // Pixel coordinates of -1 and 1 on an axis of `size` pixels, and where reflection folds.
  auto unnormalise = [&](double v, long long size) {
    return align_corners_ ? (v + 1.0) / 2.0 * static_cast<double>(size - 1)
                          : ((v + 1.0) * static_cast<double>(size) - 1.0) / 2.0;
  };
  auto bound = [&](double v, long long size) {
    if (padding_ == GridSamplePadding::kBorder)
      return std::clamp(v, 0.0, static_cast<double>(size - 1));
    if (padding_ == GridSamplePadding::kReflection) {
      return align_corners_ ? reflect(v, 0.0, static_cast<double>(size - 1))
                            : reflect(v, -0.5, static_cast<double>(size) - 0.5);
    }
    return v;
  };
  for (long long n = 0; n < d[0]; ++n) {
    for (long long c = 0; c < channels; ++c) {
      const double* image = data.data() + ((n * channels + c) * height) * width;
      auto pixel = [&](long long y, long long x) -> double {
        if (padding_ != GridSamplePadding::kZeros) {  // bounded already; rounding may step out
          y = std::clamp(y, 0LL, height - 1);
          x = std::clamp(x, 0LL, width - 1);
        } else if (y < 0 || y >= height || x < 0 || x >= width) {
          return 0.0;
        }
        return image[y * width + x];
      };
      for (long long i = 0; i < out_h; ++i) {
        for (long long j = 0; j < out_w; ++j) {
          const std::size_t at = static_cast<std::size_t>(((n * 2) * out_h + i) * out_w + j);
          const double x = bound(unnormalise(grid[at], width), width);
          const double y = bound(unnormalise(grid[at + static_cast<std::size_t>(out_h * out_w)],
                                             height), height);
          double value;
          if (mode_ == GridSampleMode::kNearest) {
            value = pixel(static_cast<long long>(std::nearbyint(y)),
                          static_cast<long long>(std::nearbyint(x)));
          } else {
            const double x0 = std::floor(x), y0 = std::floor(y);
            const double fx = x - x0, fy = y - y0;
            const long long xi = static_cast<long long>(x0), yi = static_cast<long long>(y0);
            value = (1.0 - fy) * ((1.0 - fx) * pixel(yi, xi) + fx * pixel(yi, xi + 1)) +
                    fy * ((1.0 - fx) * pixel(yi + 1, xi) + fx * pixel(yi + 1, xi + 1));
          }
          output[static_cast<std::size_t>(((n * channels + c) * out_h + i) * out_w + j)] = value;
        }
      }
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
  const auto [outer, n, inner] = axisSpan(inputs_[0]->shape(), axis_);
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

namespace detail {

namespace {

ElementType elementTypeOf(const std::string& layer, const std::string& name) {
  for (ElementType t : {ElementType::kFloat, ElementType::kInt64, ElementType::kInt32,
                        ElementType::kUint8}) {
    if (name == elementTypeName(t)) return t;
  }
  throw Error(layer + ": element type '" + name + "' is not float32, int64, int32 or uint8");
}

// A value written as the text `text`, not a number.
bool isTextValue(const LayerArgs& a, const char* key, const char* text) {
  try {
    return a.text(key) == text;
  } catch (const Error&) {
    return false;
  }
}

// A value written as the text "input" (the next tensor input), not a number.
bool isInputValue(const LayerArgs& a, const char* key) { return isTextValue(a, key, "input"); }

}  // namespace

void addHostFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"host_cast", 1, {"to", "shape", "wrap"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const std::vector<int> shape =
                             a.has("shape") ? a.ints("shape") : std::vector<int>{};
                         return std::make_unique<HostCastLayer>(
                             name, *in[0], elementTypeOf(name, a.text("to")), shape,
                             a.integer("wrap", 0));
                       }});
  factories.push_back({"host_select", 1, {"test", "shape", "then", "otherwise"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const std::string test = a.text("test");
                         if (test != "nonzero" && test != "isnan") {
                           throw Error(name + ": test '" + test + "' is not nonzero or isnan");
                         }
                         // A number, or "x": the input value itself.
                         auto value = [&](const char* key) -> std::optional<float> {
                           try {
                             if (a.text(key) == "x") return std::nullopt;
                           } catch (const Error&) {
                           }
                           return static_cast<float>(a.real(key, 0.0));
                         };
                         return std::make_unique<HostSelectLayer>(
                             name, *in[0], test == "isnan" ? HostTest::kIsNan : HostTest::kNonZero,
                             a.ints("shape"), value("then"), value("otherwise"));
                       }});
  factories.push_back({"host_where", LayerFactory::kAnyInputs, {"shape", "then", "otherwise"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         // A number, or "input": the next tensor input.
                         std::size_t next = 1;
                         auto value = [&](const char* key) -> HostOperand {
                           if (!isInputValue(a, key)) return a.real(key, 0.0);
                           if (next >= in.size()) {
                             throw Error(name + ": " + key + " reads a tensor input, and " +
                                         "there is none left");
                           }
                           return *in[next++];
                         };
                         if (in.empty()) throw Error(name + ": no condition input");
                         const HostOperand then = value("then"), otherwise = value("otherwise");
                         if (next != in.size()) {
                           throw Error(name + ": " + std::to_string(in.size()) + " inputs, " +
                                       "but the values read " + std::to_string(next - 1));
                         }
                         return std::make_unique<HostWhereLayer>(name, *in[0], then, otherwise,
                                                                 a.ints("shape"));
                       }});
  factories.push_back({"host_arith", LayerFactory::kAnyInputs,
                       {"op", "to", "shape", "a", "b", "constant_shape"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         HostArith op;
                         if (!parseHostArith(a.text("op"), &op)) {
                           throw Error(name + ": unknown op '" + a.text("op") + "'; use " +
                                       hostArithChoices());
                         }
                         std::size_t next = 0;
                         auto operand = [&](const char* key) -> HostOperand {
                           if (isTextValue(a, key, "constant")) {
                             return HostConstant{a.ints("constant_shape")};
                           }
                           if (!isInputValue(a, key)) return a.real(key, 0.0);
                           if (next >= in.size()) {
                             throw Error(name + ": " + key + " reads a tensor input, and " +
                                         "there is none left");
                           }
                           return *in[next++];
                         };
                         const HostOperand x = operand("a"), y = operand("b");
                         if (next != in.size()) {
                           throw Error(name + ": " + std::to_string(in.size()) + " inputs, " +
                                       "but the operands read " + std::to_string(next));
                         }
                         return std::make_unique<HostArithLayer>(
                             name, x, y, op, a.ints("shape"), elementTypeOf(name, a.text("to")));
                       }});
  factories.push_back({"host_topk", 1, {"axis", "k", "output", "largest"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const std::string output = a.text("output");
                         if (output != "values" && output != "indices") {
                           throw Error(name + ": output '" + output +
                                       "' is not values or indices");
                         }
                         return std::make_unique<HostTopKLayer>(
                             name, *in[0], a.integer("axis"), a.integer("k"),
                             output == "indices" ? TopKOutput::kIndices : TopKOutput::kValues,
                             a.flag("largest", true));
                       }});
  factories.push_back({"host_gather_elements", 2, {"axis"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostGatherElementsLayer>(
                             name, *in[0], *in[1], a.integer("axis"));
                       }});
  factories.push_back({"host_grid_sample", LayerFactory::kAnyInputs,
                       {"mode", "padding_mode", "align_corners", "grid", "grid_shape"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         GridSampleMode mode;
                         GridSamplePadding padding;
                         if (!parseGridSampleMode(a.text("mode"), &mode)) {
                           throw Error(name + ": unknown mode '" + a.text("mode") + "'; use " +
                                       gridSampleModeChoices());
                         }
                         if (!parseGridSamplePadding(a.text("padding_mode"), &padding)) {
                           throw Error(name + ": unknown padding_mode '" +
                                       a.text("padding_mode") + "'; use " +
                                       gridSamplePaddingChoices());
                         }
                         const bool align = a.flag("align_corners", false);
                         if (isTextValue(a, "grid", "constant")) {
                           return std::make_unique<HostGridSampleLayer>(
                               name, *in.at(0), HostConstant{a.ints("grid_shape")}, mode,
                               padding, align);
                         }
                         if (in.size() != 2) throw Error(name + ": takes data and a grid");
                         return std::make_unique<HostGridSampleLayer>(name, *in[0], *in[1],
                                                                      mode, padding, align);
                       }});
  factories.push_back({"host_gather", 2, {"axis"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostGatherLayer>(name, *in[0], *in[1],
                                                                  a.integer("axis"));
                       }});
  factories.push_back({"host_argmax", 1, {"axis", "keepdims", "select_last_index"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostArgMaxLayer>(
                             name, *in[0], a.integer("axis"), a.flag("keepdims", true),
                             a.flag("select_last_index", false));
                       }});
}

}  // namespace detail
}  // namespace pz
