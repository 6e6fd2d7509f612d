// Host layers over operands broadcast to the output: Select and Where (a test or a
// condition choosing values) and the element-wise integer arithmetic and comparisons.
#include <cmath>
#include <cstdint>

#include "detail.h"

namespace pz {

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

}  // namespace pz
