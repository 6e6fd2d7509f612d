// Recurrent layers (kRnn: LSTM, GRU, vanilla RNN) as one oneDNN RNN primitive each.
#include "heads.h"

#include <algorithm>

namespace pz_sdk {
namespace onednn {

namespace {

// oneDNN's gate g of a cell reads ONNX's gate from[g] (gatesInOrder): LSTM i, f, c~, o from
// ONNX's i, o, f, c; GRU u, r, o are ONNX's z, r, h; peepholes i, f, o from ONNX's i, o, f.
constexpr int kLstmGates[4] = {0, 2, 3, 1};
constexpr int kPeepholes[3] = {0, 2, 1};

// Rows of an ONNX [gates * H, cols] weight with its gate blocks in oneDNN's order.
std::vector<float> gatesInOrder(const std::vector<float>& onnx, int gates, const int* from,
                                std::size_t block) {
  std::vector<float> out(onnx.size());
  for (int g = 0; g < gates; ++g)
    std::copy_n(onnx.begin() + static_cast<std::ptrdiff_t>(from[g] * block), block,
                out.begin() + static_cast<std::ptrdiff_t>(g * block));
  return out;
}

struct RnnShape {
  memory::dim steps, batch, input, hidden, gates;
};
RnnShape rnnShape(const OpDesc& d) {
  const Dims& x = d.inputs[0].dims;
  const bool bf = d.rnn.batch_first;
  return {bf ? x[1] : x[0], bf ? x[0] : x[1], x[2], d.rnn.hidden, d.rnn.gates};
}

}  // namespace

// The primitive descriptor of one kRnn op (weights in the layout oneDNN prefers).
dnnl::primitive_desc rnnPrimitive(const OpDesc& d) {
  const RnnShape s = rnnShape(d);
  const Tag seq = d.rnn.batch_first ? Tag::ntc : Tag::tnc;
  const memory::desc x({s.steps, s.batch, s.input}, DT::f32, seq);
  const memory::desc y({s.steps, s.batch, s.hidden}, DT::f32, seq);
  const memory::desc state({1, 1, s.batch, s.hidden}, DT::f32, Tag::ldnc);
  const bool lbr = d.rnn.cell == CNML_RNN_GRU_LINEAR_BEFORE_RESET;
  const memory::desc w({1, 1, s.input, s.gates, s.hidden}, DT::f32, Tag::any);
  const memory::desc r({1, 1, s.hidden, s.gates, s.hidden}, DT::f32, Tag::any);
  const memory::desc bias({1, 1, s.gates + (lbr ? 1 : 0), s.hidden}, DT::f32, Tag::ldgo);
  const auto dir = d.rnn.reverse ? dnnl::rnn_direction::unidirectional_right2left
                                 : dnnl::rnn_direction::unidirectional_left2right;
  const auto inference = dnnl::prop_kind::forward_inference;
  // Initial states only when given (a zero desc: zeros); final states only when they are
  // the output (Y: none).
  const memory::desc none;
  // Its own scratchpad (makeRnn): the library's global one is not safe for the two
  // directions a fusion runs side by side (fusion_steps.cpp).
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  const memory::desc h0 = d.rnn.has_h ? state : none;
  const memory::desc h_n = d.rnn.output != CNML_RNN_OUTPUT_Y ? state : none;
  switch (d.rnn.cell) {
    case CNML_RNN_LSTM: {
      const memory::desc c0 = d.rnn.has_c ? state : none;
      const memory::desc c_n = d.rnn.output != CNML_RNN_OUTPUT_Y ? state : none;
      if (d.consts[3]) {
        const memory::desc peep({1, 1, 3, s.hidden}, DT::f32, Tag::ldgo);
        return dnnl::lstm_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, c0, w, r,
                                                  peep, bias, y, h_n, c_n, attr);
      }
      return dnnl::lstm_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, c0, w, r,
                                                bias, y, h_n, c_n, attr);
    }
    case CNML_RNN_GRU:
      return dnnl::gru_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, w, r, bias, y,
                                               h_n, attr);
    case CNML_RNN_GRU_LINEAR_BEFORE_RESET:
      return dnnl::lbr_gru_forward::primitive_desc(cpuEngine(), inference, dir, x, h0, w, r,
                                                   bias, y, h_n, attr);
    case CNML_RNN_TANH:
    case CNML_RNN_RELU:
    case CNML_RNN_SIGMOID: {
      const dnnl::algorithm f = d.rnn.cell == CNML_RNN_TANH   ? dnnl::algorithm::eltwise_tanh
                                : d.rnn.cell == CNML_RNN_RELU ? dnnl::algorithm::eltwise_relu
                                                              : dnnl::algorithm::eltwise_logistic;
      return dnnl::vanilla_rnn_forward::primitive_desc(cpuEngine(), inference, f, dir, x, h0, w,
                                                       r, bias, y, h_n, attr);
    }
  }
  throw dnnl::error(dnnl_invalid_arguments, "unknown recurrent cell");
}

// One kRnn op as one oneDNN RNN primitive: the weights reordered once from ONNX's layout
// (ldgoi after the gate permutation), W's and R's biases summed (but GRU's linear-before-
// reset Rbh, oneDNN's fourth bias), the values the output does not need in scratch memory.
std::unique_ptr<DnnlOp> makeRnn(const OpDesc& d, int threads) {
  const dnnl::primitive_desc pd = rnnPrimitive(d);
  const RnnShape s = rnnShape(d);
  const int g = static_cast<int>(s.gates);
  const std::size_t h = static_cast<std::size_t>(s.hidden);
  static constexpr int kSame[3] = {0, 1, 2};
  const int* from = d.rnn.cell == CNML_RNN_LSTM ? kLstmGates : kSame;
  const bool lbr = d.rnn.cell == CNML_RNN_GRU_LINEAR_BEFORE_RESET;
  auto op = std::make_unique<DnnlOp>(threads);
  op->prim_ = dnnl::primitive(pd);
  op->addInput(DNNL_ARG_SRC_LAYER, pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_SRC_LAYER));
  const memory::desc state({1, 1, s.batch, s.hidden}, DT::f32, Tag::ldnc);
  if (d.rnn.has_h) op->addInput(DNNL_ARG_SRC_ITER, state);
  if (d.rnn.has_c) op->addInput(DNNL_ARG_SRC_ITER_C, state);
  // Logical dims {L, D, I, G, O}, stored as ONNX's rows (ldgoi).
  const memory::desc w_user({1, 1, s.input, g, s.hidden}, DT::f32, Tag::ldgoi);
  const memory::desc r_user({1, 1, s.hidden, g, s.hidden}, DT::f32, Tag::ldgoi);
  op->addConst(DNNL_ARG_WEIGHTS_LAYER, w_user,
               gatesInOrder(d.consts[0]->data, g, from, h * static_cast<std::size_t>(s.input)),
               pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_WEIGHTS_LAYER));
  op->addConst(DNNL_ARG_WEIGHTS_ITER, r_user, gatesInOrder(d.consts[1]->data, g, from, h * h),
               pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_WEIGHTS_ITER));
  const std::size_t gh = static_cast<std::size_t>(g) * h;
  std::vector<float> wb(gh, 0.0f), rb(gh, 0.0f);
  if (d.consts[2]) {
    const std::vector<float>& b = d.consts[2]->data;
    wb.assign(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(gh));
    rb.assign(b.begin() + static_cast<std::ptrdiff_t>(gh), b.end());
  }
  std::vector<float> bias(gh);
  for (std::size_t i = 0; i < gh; ++i) bias[i] = wb[i] + (lbr && i >= 2 * h ? 0.0f : rb[i]);
  bias = gatesInOrder(bias, g, from, h);
  if (lbr) bias.insert(bias.end(), rb.begin() + static_cast<std::ptrdiff_t>(2 * h), rb.end());
  const memory::desc bias_md = pd.query_md(dnnl::query::exec_arg_md, DNNL_ARG_BIAS);
  op->addConst(DNNL_ARG_BIAS, bias_md, bias, bias_md);
  if (d.consts[3]) {
    const memory::desc peep({1, 1, 3, s.hidden}, DT::f32, Tag::ldgo);
    op->addConst(DNNL_ARG_WEIGHTS_PEEPHOLE, peep,
                 gatesInOrder(d.consts[3]->data, 3, kPeepholes, h), peep);
  }
  const int out_arg = d.rnn.output == CNML_RNN_OUTPUT_Y   ? DNNL_ARG_DST_LAYER
                      : d.rnn.output == CNML_RNN_OUTPUT_H ? DNNL_ARG_DST_ITER
                                                          : DNNL_ARG_DST_ITER_C;
  op->args_[DNNL_ARG_SCRATCHPAD] = memory(pd.scratchpad_desc(), cpuEngine());
  for (int arg : {DNNL_ARG_DST_LAYER, DNNL_ARG_DST_ITER, DNNL_ARG_DST_ITER_C}) {
    const memory::desc md = pd.query_md(dnnl::query::exec_arg_md, arg);
    if (arg == out_arg)
      op->addOutput(arg, md);
    else if (md.get_ndims() > 0)
      op->args_[arg] = memory(md, cpuEngine());  // computed, not wanted: scratch
  }
  return op;
}

}  // namespace onednn
}  // namespace pz_sdk
