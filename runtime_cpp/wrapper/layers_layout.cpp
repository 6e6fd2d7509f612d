// Layout layers: concat, reshape, transpose, slice and gather.
#include <algorithm>

#include "detail.h"

namespace pz {

namespace {

// The output shape of a concat of `inputs` and, when `constant` is given, a constant operand
// of that shape.
Shape concatShape(const std::string& layer, const std::vector<Tensor*>& inputs, int axis,
                  const Shape* constant = nullptr) {
  if (inputs.empty() || inputs[0] == nullptr) throw Error(layer + ": concat needs inputs");
  Shape out = inputs[0]->shape();
  const int a = detail::normaliseAxis(layer, axis, static_cast<int>(out.size()));
  auto add = [&](const Shape& s, const std::string& what) {
    bool ok = s.size() == out.size();
    for (std::size_t d = 0; ok && d < s.size(); ++d) {
      ok = static_cast<int>(d) == a || s[d] == out[d];
    }
    if (!ok) {
      throw Error(layer + ": concat along axis " + std::to_string(a) + " needs equal other " +
                  "dimensions, got " + shapeToString(inputs[0]->shape()) + " and " +
                  shapeToString(s) + " (" + what + ")");
    }
    out[a] += s[a];
  };
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr) throw Error(layer + ": null concat input");
    add(inputs[i]->shape(), inputs[i]->name());
  }
  if (constant != nullptr) add(*constant, "the constant");
  return out;
}

Shape reshapeShape(const std::string& layer, const Shape& in, const Shape& to) {
  if (elementCount(in) != elementCount(to) ||
      std::any_of(to.begin(), to.end(), [](int d) { return d <= 0; })) {
    throw Error(layer + ": cannot reshape " + shapeToString(in) + " to " + shapeToString(to) +
                "; give concrete positive dimensions with the same element count");
  }
  return to;
}

Shape transposeShape(const std::string& layer, const Shape& in, const std::vector<int>& perm) {
  std::vector<int> sorted(perm);
  std::sort(sorted.begin(), sorted.end());
  bool ok = perm.size() == in.size();
  for (std::size_t i = 0; ok && i < sorted.size(); ++i) ok = sorted[i] == static_cast<int>(i);
  if (!ok) {
    throw Error(layer + ": perm " + shapeToString(perm) + " is not a permutation of the " +
                std::to_string(in.size()) + " axes of " + shapeToString(in));
  }
  Shape out(in.size());
  for (std::size_t i = 0; i < perm.size(); ++i) out[i] = in[static_cast<std::size_t>(perm[i])];
  return out;
}

// One begin, end and step per axis, each in range; the output dims they select.
Shape sliceShape(const std::string& layer, const Shape& in, const std::vector<int>& begin,
                 const std::vector<int>& end, const std::vector<int>& step) {
  if (begin.size() != in.size() || end.size() != in.size() || step.size() != in.size()) {
    throw Error(layer + ": slice needs one begin, end and step per axis of " + shapeToString(in) +
                ", got begin " + shapeToString(begin) + ", end " + shapeToString(end) + ", step " +
                shapeToString(step));
  }
  Shape out(in.size());
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (step[i] < 1 || begin[i] < 0 || begin[i] >= end[i] || end[i] > in[i]) {
      throw Error(layer + ": slice of axis " + std::to_string(i) + " (size " +
                  std::to_string(in[i]) + ") from " + std::to_string(begin[i]) + " to " +
                  std::to_string(end[i]) + " step " + std::to_string(step[i]) +
                  " is out of range; give 0 <= begin < end <= size and step >= 1");
    }
    out[i] = (end[i] - begin[i] + step[i] - 1) / step[i];
  }
  return out;
}

}  // namespace

// ---- ConcatLayer ----------------------------------------------------------------------

ConcatLayer::ConcatLayer(std::string name, std::vector<Tensor*> inputs, int axis)
    : Layer(name, inputs, concatShape(name, inputs, axis)) {
  const int a = detail::normaliseAxis(name_, axis, static_cast<int>(output_.shape().size()));
  defineOp([this, a] {
    std::vector<cnmlTensor_t> in_descs;
    for (Tensor* t : inputs_) in_descs.push_back(t->desc());
    cnmlTensor_t out_desc = output_.desc();
    PZ_CHECK(name_, cnmlCreateNdConcatOp(&op_, a, in_descs.data(),
                                         static_cast<int>(in_descs.size()), &out_desc, 1));
  });
}

ConcatLayer::ConcatLayer(std::string name, std::vector<Tensor*> inputs, int axis, Shape constant,
                         int constant_at)
    : Layer(name, inputs, concatShape(name, inputs, axis, &constant)) {
  const int a = detail::normaliseAxis(name_, axis, static_cast<int>(output_.shape().size()));
  if (constant_at < 0 || constant_at > static_cast<int>(inputs_.size())) {
    throw Error(name_ + ": the constant's place " + std::to_string(constant_at) +
                " is outside 0.." + std::to_string(inputs_.size()) + " (before input i, or " +
                "after the last)");
  }
  const ConstTensor& value = declareWeight("constant", CNML_CONST, constant);
  defineOp([this, a, constant_at, &value] {
    std::vector<cnmlTensor_t> in_descs;
    for (Tensor* t : inputs_) in_descs.push_back(t->desc());
    in_descs.insert(in_descs.begin() + constant_at, value.desc());
    cnmlTensor_t out_desc = output_.desc();
    PZ_CHECK(name_, cnmlCreateNdConcatOp(&op_, a, in_descs.data(),
                                         static_cast<int>(in_descs.size()), &out_desc, 1));
  });
}

// The SDK forward takes the activations only: a constant operand is baked into the op.
cnmlStatus_t ConcatLayer::forward(cnrtQueue_t queue) {
  detail::TensorList in(inputs_);
  cnmlTensor_t out_desc = output_.desc();
  void* out_data = output_.deviceData();
  return PZ_CHECK(name_, cnmlComputeConcatOpForward_V4(op_, in.descs.data(), in.data.data(),
                                                       in.size(), &out_desc, &out_data, 1, queue,
                                                       invokeParam()));
}

// ---- ReshapeLayer ---------------------------------------------------------------------

ReshapeLayer::ReshapeLayer(std::string name, Tensor& input, Shape shape)
    : ParamLayer(name, {&input}, reshapeShape(name, input.shape(), shape)) {
  std::vector<int> dims(output_.shape());
  PZ_CHECK(name_,
           cnmlCreateNdReshapeOpParam(param_.out(), dims.data(), static_cast<int>(dims.size())));
  defineOp([this] { PZ_CHECK(name_, cnmlCreateReshapeOp(&op_, param_, in(0), output_.desc())); });
  PZ_FORWARD(cnmlComputeReshapeOpForward_V4);
}

// ---- TransposeLayer -------------------------------------------------------------------

TransposeLayer::TransposeLayer(std::string name, Tensor& input, std::vector<int> perm)
    : ParamLayer(name, {&input}, transposeShape(name, input.shape(), perm)) {
  PZ_CHECK(name_,
           cnmlCreateNdTransposeOpParam(param_.out(), perm.data(), static_cast<int>(perm.size())));
  defineOp([this] {
    PZ_CHECK(name_, cnmlCreateNdTransposeProOp(&op_, in(0), output_.desc(), param_));
  });
  PZ_FORWARD(cnmlComputeTransposeProOpForward_V4);
}

// ---- SliceLayer -----------------------------------------------------------------------

SliceLayer::SliceLayer(std::string name, Tensor& input, std::vector<int> begin,
                       std::vector<int> end, std::vector<int> step)
    : ParamLayer(name, {&input}, sliceShape(name, input.shape(), begin, end, step)) {
  PZ_CHECK(name_, cnmlCreateNdStridedSliceOpParam(param_.out(), static_cast<int>(begin.size()),
                                                  begin.data(), end.data(), step.data()));
  defineOp([this] {
    PZ_CHECK(name_, cnmlCreateNdStridedSliceOp(&op_, param_, in(0), output_.desc()));
  });
  PZ_FORWARD(cnmlComputeNdStridedSliceOpForward_V2);
}

namespace {

Shape gatherShape(const std::string& layer, const Shape& indices, const Shape& table, int axis) {
  if (axis < 0 || axis > 3 || axis >= static_cast<int>(table.size())) {
    throw Error(layer + ": gather axis " + std::to_string(axis) + " of a " +
                std::to_string(table.size()) + "-D table; the SDK gathers along axes 0..3");
  }
  Shape out(table.begin(), table.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), table.begin() + axis + 1, table.end());
  return out;
}

}  // namespace

GatherV2Layer::GatherV2Layer(std::string name, Tensor& indices, Shape table_shape, int axis)
    : Layer(name, {&indices}, gatherShape(name, indices.shape(), table_shape, axis)),
      axis_(axis) {
  table_ = &declareWeight("table", CNML_CONST, table_shape);
  defineOp([this] {
    PZ_CHECK(name_, cnmlCreateGatherV2Op(&op_, table_->desc(), in(0), output_.desc(),
                                         static_cast<cnmlDimension_t>(axis_)));
  });
}

void GatherV2Layer::settleDataTypes() {
  if (inputs_.at(0)->elementType() != ElementType::kInt32) {
    throw Error(name_ + ": indices " + inputs_.at(0)->name() + " are " +
                elementTypeName(inputs_.at(0)->elementType()) +
                "; the SDK gathers by int32 indices (cast them on the host first)");
  }
  output_.setDataType(storageType(effectivePrecision()));
}

cnmlStatus_t GatherV2Layer::forward(cnrtQueue_t queue) {
  Tensor& indices = *inputs_.at(0);
  const cnmlStatus_t status = cnmlComputeGatherV2OpForward_V4(
      op_, table_->desc(), nullptr, indices.desc(), indices.deviceData(), output_.desc(),
      output_.deviceData(), queue, invokeParam());
  check(status, name_, "cnmlComputeGatherV2OpForward_V4",
        "every index must lie in [0, " + std::to_string(table_->shape().at(axis_)) +
            ") of the table");
  return status;
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace detail {

void addLayoutFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"concat", LayerFactory::kAnyInputs, {"axis"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<ConcatLayer>(name, in, a.integer("axis"));
                       }});
  factories.push_back({"concat_constant", LayerFactory::kAnyInputs,
                       {"axis", "constant_shape", "constant_at"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<ConcatLayer>(name, in, a.integer("axis"),
                                                              a.ints("constant_shape"),
                                                              a.integer("constant_at", 0));
                       }});
  factories.push_back({"gather_v2", 1, {"table_shape", "axis"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<GatherV2Layer>(
                             name, *in[0], a.ints("table_shape"), a.integer("axis", 0));
                       }});
  factories.push_back({"reshape", 1, {"shape"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<ReshapeLayer>(name, *in[0], a.ints("shape"));
                       }});
  factories.push_back({"transpose", 1, {"perm"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<TransposeLayer>(name, *in[0], a.ints("perm"));
                       }});
  factories.push_back({"slice", 1, {"begin", "end", "step"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<SliceLayer>(name, *in[0], a.ints("begin"),
                                                             a.ints("end"), a.ints("step"));
                       }});
}

}  // namespace detail

}  // namespace pz
