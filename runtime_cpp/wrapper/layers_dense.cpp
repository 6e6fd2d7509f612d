// Dense layers: fully connected, batch dot and softmax.
#include <algorithm>

#include "detail.h"

namespace pz {

// ---- FullyConnectedLayer ----------------------------------------------------------------

FullyConnectedLayer::FullyConnectedLayer(std::string name, Tensor& input, int out_features)
    : Layer(name, {&input}, Shape{input.shape()[0], out_features}) {
  const int batch = input.shape()[0];
  const int k = static_cast<int>(input.elements() / static_cast<std::size_t>(batch));
  const ConstTensor& weight = declareWeight("weight", CNML_FILTER, Shape{out_features, k});
  const ConstTensor& bias =
      declareWeight("bias", CNML_CONST, Shape{out_features}, /*optional=*/true);
  allowInt8(weight);
  allowSparse();
  defineOp([this, &weight, &bias] {
    PZ_CHECK(name_, cnmlCreateMlpOp(&op_, in(0), output_.desc(), weight.desc(), bias.desc(),
                                    sparse() ? CNML_Sparse : CNML_NoSparse));
  });
  PZ_FORWARD(cnmlComputeMlpOpForward_V4);
}

// ---- BatchDotLayer --------------------------------------------------------------------

namespace {

// numpy's matmul shape of op(a) x op(b); an error naming the layer when there is none.
Shape batchDotShape(const std::string& layer, const Tensor& a, const Tensor& b, bool trans_a,
                    bool trans_b) {
  const Shape &sa = a.shape(), &sb = b.shape();
  const std::string operands = "a " + a.name() + " " + shapeToString(sa) + " (trans_a " +
                               (trans_a ? "1" : "0") + "), b " + b.name() + " " +
                               shapeToString(sb) + " (trans_b " + (trans_b ? "1" : "0") + ")";
  if (sa.size() < 2 || sb.size() < 2) {
    throw Error(layer + ": batch dot needs inputs of rank >= 2; got " + operands);
  }
  const std::size_t ra = sa.size(), rb = sb.size();
  const int m = trans_a ? sa[ra - 1] : sa[ra - 2], ka = trans_a ? sa[ra - 2] : sa[ra - 1];
  const int kb = trans_b ? sb[rb - 1] : sb[rb - 2], n = trans_b ? sb[rb - 2] : sb[rb - 1];
  if (ka != kb) {
    throw Error(layer + ": batch dot's reduced axes differ (" + std::to_string(ka) + " vs " +
                std::to_string(kb) + "); got " + operands);
  }
  const std::size_t batch = std::max(ra, rb) - 2;
  Shape out(batch);
  for (std::size_t i = 0; i < batch; ++i) {
    const std::size_t from_end = batch - i;  // 1 = the last batch axis
    const int da = from_end <= ra - 2 ? sa[ra - 2 - from_end] : 1;
    const int db = from_end <= rb - 2 ? sb[rb - 2 - from_end] : 1;
    if (da != db && da != 1 && db != 1) {
      throw Error(layer + ": batch dot's batch axes do not broadcast; got " + operands);
    }
    out[i] = std::max(da, db);
  }
  out.push_back(m);
  out.push_back(n);
  return out;
}

}  // namespace

BatchDotLayer::BatchDotLayer(std::string name, Tensor& a, Tensor& b, bool trans_a, bool trans_b)
    : Layer(name, {&a, &b}, batchDotShape(name, a, b, trans_a, trans_b)) {
  defineOp([this, trans_a, trans_b] {
    PZ_CHECK(name_,
             cnmlCreateBatchDotOp(&op_, in(0), in(1), output_.desc(), trans_a, trans_b));
  });
  PZ_FORWARD(cnmlComputeBatchDotOpForward_V4);
}

// ---- SoftmaxLayer ---------------------------------------------------------------------

SoftmaxLayer::SoftmaxLayer(std::string name, Tensor& input, int axis, bool log)
    : Layer(name, {&input}, input.shape()) {
  const int rank = static_cast<int>(input.shape().size());
  const int a = detail::normaliseAxis(name_, axis, rank);
  // cnmlDimension_t names the NCHW axes N 0, C 1, H 2, W 3: the SDK's Softmax op for 4-D
  // and 2-D ([N, C]) inputs, its Nd op (a plain axis) for the other ranks.
  if (log) {
    defineOp([this, a] {
      PZ_CHECK(name_, cnmlCreateNdLogSoftmaxOp(&op_, a, in(0), output_.desc()));
    });
    PZ_FORWARD(cnmlComputeNdLogSoftmaxOpForward_V4);
  } else if (rank == 4 || rank == 2) {
    defineOp([this, a] {
      PZ_CHECK(name_, cnmlCreateSoftmaxOp(&op_, static_cast<cnmlDimension_t>(a), in(0),
                                          output_.desc()));
    });
    PZ_FORWARD(cnmlComputeSoftmaxOpForward_V4);
  } else {
    defineOp([this, a] { PZ_CHECK(name_, cnmlCreateNdSoftmaxOp(&op_, a, in(0), output_.desc())); });
    PZ_FORWARD(cnmlComputeNdSoftmaxOpForward_V4);
  }
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace detail {

void addDenseFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"fully_connected", 1, {"out_features"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<FullyConnectedLayer>(
                             name, *in[0], a.integer("out_features"));
                       }});
  factories.push_back({"batch_dot", 2, {"trans_a", "trans_b"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<BatchDotLayer>(name, *in[0], *in[1],
                                                                a.flag("trans_a", false),
                                                                a.flag("trans_b", false));
                       }});
  factories.push_back({"softmax", 1, {"axis", "log"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<SoftmaxLayer>(name, *in[0], a.integer("axis"),
                                                               a.flag("log", false));
                       }});
}

}  // namespace detail

}  // namespace pz
