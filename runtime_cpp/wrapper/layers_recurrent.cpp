// Recurrent layers: LSTM, GRU and RNN as per-step SDK ops (layers_recurrent.h).
#include "paleozoic/layers_recurrent.h"

#include "detail.h"

namespace pz {
namespace {

int directionCount(RnnDirection direction) {
  return direction == RnnDirection::kBidirectional ? 2 : 1;
}

// A state ([D, B, H] at layout 0, [B, D, H] at layout 1) or an output of the layer.
Shape stateShape(int layout, int directions, int batch, int hidden) {
  return layout == 0 ? Shape{directions, batch, hidden} : Shape{batch, directions, hidden};
}

Shape recurrentShape(const std::string& name, const std::vector<Tensor*>& inputs, int states,
                     int hidden, RnnDirection direction, int layout, RnnOutput output) {
  return detail::layerShape(name, [&] {
    if (inputs.empty() || static_cast<int>(inputs.size()) > 1 + states) {
      throw Error("takes x and at most " + std::to_string(states) + " initial state(s), got " +
                  std::to_string(inputs.size()) + " input(s)");
    }
    for (const Tensor* t : inputs) {
      if (t == nullptr) throw Error("null input tensor");
    }
    if (layout != 0 && layout != 1) throw Error("layout must be 0 or 1, got " + std::to_string(layout));
    if (hidden < 1) throw Error("hidden_size must be positive, got " + std::to_string(hidden));
    const Shape& x = inputs[0]->shape();
    if (x.size() != 3) throw Error("x must be 3-D, got " + shapeToString(x));
    const int steps = layout == 0 ? x[0] : x[1];
    const int batch = layout == 0 ? x[1] : x[0];
    const int d = directionCount(direction);
    const Shape state = stateShape(layout, d, batch, hidden);
    for (std::size_t i = 1; i < inputs.size(); ++i) {
      if (inputs[i]->shape() != state) {
        throw Error("initial state " + inputs[i]->name() + " has shape " +
                    shapeToString(inputs[i]->shape()) + ", expected " + shapeToString(state));
      }
    }
    if (output == RnnOutput::kYC && states < 2) throw Error("only an LSTM has a cell state Y_c");
    if (output != RnnOutput::kY) return state;
    return layout == 0 ? Shape{steps, d, batch, hidden} : Shape{batch, steps, d, hidden};
  });
}

}  // namespace

// ---- RecurrentLayer -------------------------------------------------------------------

RecurrentLayer::RecurrentLayer(std::string name, std::vector<Tensor*> inputs, int gates,
                               int hidden_size, RnnDirection direction, int layout,
                               RnnOutput output)
    : Layer(name, inputs,
            recurrentShape(name, inputs, gates == 4 ? 2 : 1, hidden_size, direction, layout,
                           output)),
      gates_(gates),
      hidden_(hidden_size),
      layout_(layout),
      direction_(direction),
      output_kind_(output) {
  const Shape& x = inputs_[0]->shape();
  steps_ = layout == 0 ? x[0] : x[1];
  batch_ = layout == 0 ? x[1] : x[0];
  input_size_ = x[2];
  directions_ = directionCount(direction);
  const int gh = gates_ * hidden_;
  w_ = &declareWeight("W", CNML_FILTER, Shape{directions_, gh, input_size_});
  r_ = &declareWeight("R", CNML_FILTER, Shape{directions_, gh, hidden_});
  b_ = &declareWeight("B", CNML_CONST, Shape{directions_, 2 * gh}, /*optional=*/true);
  defineOp([this] { build(); });
}

void RecurrentLayer::settleDataTypes() {
  Layer::settleDataTypes();
  dtype_ = storageType(effectivePrecision());
}

Tensor& RecurrentLayer::temp(Shape shape, const std::string& what) {
  temps_.push_back(std::make_unique<Tensor>(prefix_ + what, std::move(shape)));
  Tensor& t = *temps_.back();
  t.setDataType(dtype_);
  return t;
}

const ConstTensor& RecurrentLayer::constant(cnmlTensorType_t type, Shape shape,
                                            std::vector<float> values) {
  consts_.push_back(std::make_unique<ConstTensor>(name_, type, std::move(shape)));
  ConstTensor& c = *consts_.back();
  // Without values (no configLayer yet: an op for the device model) only the descriptor.
  if (!values.empty()) c.bind(values.data());
  c.bindAs(dtype_, nullptr, fused_);  // read by this layer's ops alone
  return c;
}

std::vector<float> RecurrentLayer::rows(const ConstTensor& weight, int d, int row_begin,
                                        int row_end) const {
  const MallocBuffer<float>& all = weight.values();
  if (all.empty()) return {};
  const std::size_t per_direction = all.size() / static_cast<std::size_t>(directions_);
  const std::size_t row = per_direction / static_cast<std::size_t>(weight.shape().at(1));
  const auto first = all.begin() + static_cast<std::ptrdiff_t>(d * per_direction + row_begin * row);
  return std::vector<float>(first, first + static_cast<std::ptrdiff_t>((row_end - row_begin) * row));
}

std::vector<float> RecurrentLayer::inputBias(int d) const {
  const int gh = gates_ * hidden_;
  std::vector<float> wb = rows(*b_, d, 0, gh);
  const std::vector<float> rb = rows(*b_, d, gh, 2 * gh);
  for (std::size_t i = 0; i < wb.size(); ++i) wb[i] += rb[i];
  return wb;
}

namespace {

// A runner for ops of one input and one output.
Layer::OpRunner unaryRunner(
    cnmlStatus_t (*forward)(cnmlBaseOp_t, cnmlTensor_t, void*, cnmlTensor_t, void*, cnrtQueue_t,
                            void*),
    cnmlBaseOp_t op, Tensor* in, Tensor* out) {
  return [=](cnrtQueue_t queue, void* extra) {
    return forward(op, in->desc(), in->deviceData(), out->desc(), out->deviceData(), queue,
                   extra);
  };
}

Layer::OpRunner binaryRunner(
    cnmlStatus_t (*forward)(cnmlBaseOp_t, cnmlTensor_t, void*, cnmlTensor_t, void*,
                            cnmlTensor_t, void*, cnrtQueue_t, void*),
    cnmlBaseOp_t op, Tensor* a, Tensor* b, Tensor* out) {
  return [=](cnrtQueue_t queue, void* extra) {
    return forward(op, a->desc(), a->deviceData(), b->desc(), b->deviceData(), out->desc(),
                   out->deviceData(), queue, extra);
  };
}

}  // namespace

Tensor& RecurrentLayer::slice2d(Tensor& in, int row_begin, int row_end, int stride,
                                int col_begin, int col_end, const std::string& what,
                                Tensor* into) {
  const int count = (row_end - row_begin + stride - 1) / stride;
  Tensor& out = into != nullptr ? *into : temp(Shape{count, col_end - col_begin}, what);
  int begin[2] = {row_begin, col_begin}, end[2] = {row_end, col_end}, step[2] = {stride, 1};
  SdkHandle<cnmlNdStridedSliceOpParam_t, cnmlDestroyNdStridedSliceOpParam> param;
  PZ_CHECK(name_, cnmlCreateNdStridedSliceOpParam(param.out(), 2, begin, end, step));
  cnmlBaseOp_t op = nullptr;
  PZ_CHECK(name_, cnmlCreateNdStridedSliceOp(&op, param, in.desc(), out.desc()));
  addOp(op, unaryRunner(cnmlComputeNdStridedSliceOpForward_V2, op, &in, &out));
  return out;
}

Tensor& RecurrentLayer::gate(Tensor& in, int index, int count) {
  return slice2d(in, 0, batch_, 1, index * hidden_, (index + count) * hidden_,
                 "gate" + std::to_string(index) + (count > 1 ? "+" : ""));
}

Tensor& RecurrentLayer::mlp(Tensor& in, const ConstTensor& filter, const ConstTensor* bias,
                            const std::string& what) {
  Tensor& out = temp(Shape{in.shape()[0], filter.shape()[0]}, what);
  cnmlBaseOp_t op = nullptr;
  PZ_CHECK(name_, cnmlCreateMlpOp(&op, in.desc(), out.desc(), filter.desc(),
                                  bias == nullptr ? nullptr : bias->desc(), CNML_NoSparse));
  addOp(op, unaryRunner(cnmlComputeMlpOpForward_V4, op, &in, &out));
  return out;
}

Tensor& RecurrentLayer::active(Active fn, Tensor& in, const std::string& what) {
  Tensor& out = temp(in.shape(), what);
  cnmlBaseOp_t op = nullptr;
  PZ_CHECK(name_, cnmlCreateActiveOp(&op, sdkValue(fn), in.desc(), out.desc()));
  addOp(op, unaryRunner(cnmlComputeActiveOpForward_V4, op, &in, &out));
  return out;
}

Tensor& RecurrentLayer::elementwise(const ElementwiseCalls& calls, Tensor& a, Tensor& b,
                                    const std::string& what) {
  Tensor& out = temp(a.shape(), what);
  cnmlBaseOp_t op = nullptr;
  detail::checkCall(calls.create(&op, a.desc(), b.desc(), out.desc()), name_, calls.create_call);
  addOp(op, binaryRunner(calls.forward, op, &a, &b, &out));
  return out;
}

Tensor& RecurrentLayer::add(Tensor& a, Tensor& b, const std::string& what) {
  return elementwise({cnmlCreateAddOp, "cnmlCreateAddOp", cnmlComputeAddOpForward_V4}, a, b, what);
}

Tensor& RecurrentLayer::sub(Tensor& a, Tensor& b, const std::string& what) {
  return elementwise({cnmlCreateSubOp, "cnmlCreateSubOp", cnmlComputeSubOpForward_V4}, a, b, what);
}

Tensor& RecurrentLayer::mult(Tensor& a, Tensor& b, const std::string& what) {
  return elementwise({cnmlCreateMultOp, "cnmlCreateMultOp", cnmlComputeMultOpForward_V4}, a, b,
                     what);
}

Tensor& RecurrentLayer::scale(Tensor& in, const ConstTensor& alpha, const std::string& what) {
  Tensor& out = temp(in.shape(), what);
  cnmlBaseOp_t op = nullptr;
  PZ_CHECK(name_, cnmlCreateScaleOp(&op, in.desc(), out.desc(), alpha.desc(), nullptr));
  addOp(op, unaryRunner(cnmlComputeScaleOpForward_V4, op, &in, &out));
  return out;
}

void RecurrentLayer::reshapeInto(Tensor& in, Tensor& out) {
  std::vector<int> dims(out.shape());
  SdkHandle<cnmlReshapeOpParam_t, cnmlDestroyReshapeOpParam> param;
  PZ_CHECK(name_,
           cnmlCreateNdReshapeOpParam(param.out(), dims.data(), static_cast<int>(dims.size())));
  cnmlBaseOp_t op = nullptr;
  PZ_CHECK(name_, cnmlCreateReshapeOp(&op, param, in.desc(), out.desc()));
  addOp(op, unaryRunner(cnmlComputeReshapeOpForward_V4, op, &in, &out));
}

bool RecurrentLayer::buildWhole() {
  cnmlRnnCell_t cell;
  if (!sdkCell(&cell)) return false;
  const int gh = gates_ * hidden_;
  const bool batch_first = layout_ == 1;
  Shape shape{batch_, hidden_};
  cnmlRnnOutput_t kind = CNML_RNN_OUTPUT_H;
  if (output_kind_ == RnnOutput::kY) {
    kind = CNML_RNN_OUTPUT_Y;
    shape = batch_first ? Shape{batch_, steps_, hidden_} : Shape{steps_, batch_, hidden_};
  } else if (output_kind_ == RnnOutput::kYC) {
    kind = CNML_RNN_OUTPUT_C;
  }
  // Every direction's op is created before any is added: an SDK that refuses one (no
  // recurrent op at all, or not for this cell) leaves the layer to the cells untouched.
  struct Direction {
    cnmlBaseOp_t op = nullptr;
    Tensor *h0 = nullptr, *c0 = nullptr, *out = nullptr;
  };
  std::vector<Direction> made;
  Tensor* x = inputs_[0];
  for (int d = 0; d < directions_; ++d) {
    prefix_ = name_ + "/d" + std::to_string(d) + "/";
    Direction dir;
    if (inputs_.size() > 1) dir.h0 = &temp(Shape{batch_, hidden_}, "h0");
    if (inputs_.size() > 2) dir.c0 = &temp(Shape{batch_, hidden_}, "c0");
    dir.out = &temp(shape, "sequence");
    const ConstTensor& w = constant(CNML_FILTER, Shape{gh, input_size_}, rows(*w_, d, 0, gh));
    const ConstTensor& r = constant(CNML_FILTER, Shape{gh, hidden_}, rows(*r_, d, 0, gh));
    const ConstTensor& b = constant(CNML_CONST, Shape{2 * gh}, rows(*b_, d, 0, 2 * gh));
    const ConstTensor* p = nullptr;
    if (const ConstTensor* peepholes = peepholeWeight())
      p = &constant(CNML_CONST, Shape{3 * hidden_}, rows(*peepholes, d, 0, 3 * hidden_));
    const bool reverse = direction_ == RnnDirection::kReverse || d == 1;
    const cnmlStatus_t status = cnmlCreateRnnOp(
        &dir.op, cell, reverse, batch_first, kind, x->desc(),
        dir.h0 ? dir.h0->desc() : nullptr, dir.c0 ? dir.c0->desc() : nullptr, dir.out->desc(),
        w.desc(), r.desc(), b.desc(), p ? p->desc() : nullptr);
    if (status != CNML_STATUS_SUCCESS) {
      for (Direction& m : made) cnmlDestroyBaseOp(&m.op);
      if (status != CNML_STATUS_UNSUPPORT) PZ_CHECK(name_, status);
      temps_.clear();
      consts_.clear();
      return false;
    }
    made.push_back(dir);
  }
  // The states first, then the directions one after the other: a fusion runs two
  // independent recurrent ops side by side (fusion_steps.cpp).
  for (int d = 0; d < directions_; ++d) {
    prefix_ = name_ + "/d" + std::to_string(d) + "/";
    Direction& dir = made[static_cast<std::size_t>(d)];
    if (dir.h0) stateInto(*inputs_[1], d, "h0", dir.h0);
    if (dir.c0) stateInto(*inputs_[2], d, "c0", dir.c0);
  }
  std::vector<Tensor*> outs;
  for (int d = 0; d < directions_; ++d) {
    Direction& dir = made[static_cast<std::size_t>(d)];
    std::vector<Tensor*> ins{x};
    if (dir.h0) ins.push_back(dir.h0);
    if (dir.c0) ins.push_back(dir.c0);
    Tensor* out = dir.out;
    cnmlBaseOp_t op = dir.op;
    addOp(op, [op, ins, out](cnrtQueue_t queue, void* extra) {
      detail::TensorList in(ins);
      return cnmlComputeRnnOpForward_V4(op, in.descs.data(), in.data.data(), in.size(),
                                        out->desc(), out->deviceData(), queue, extra);
    });
    outs.push_back(out);
  }
  prefix_ = name_ + "/";
  if (output_kind_ != RnnOutput::kY) {
    joinInto(outs, Shape{batch_, hidden_}, layout_ == 0 ? 0 : 1);
  } else {
    // Y is [T, D, B, H] ([B, T, D, H] at layout 1): each direction's [T, B, H] as rows of
    // B*H ([B, T, H] as rows of H), side by side.
    joinInto(outs,
             layout_ == 0 ? Shape{steps_, batch_ * hidden_} : Shape{batch_ * steps_, hidden_}, 1);
  }
  return true;
}

Tensor& RecurrentLayer::stateInto(Tensor& state, int d, const std::string& what, Tensor* into) {
  if (layout_ == 0) {
    Tensor& flat = temp(Shape{directions_ * batch_, hidden_}, what + "_rows");
    reshapeInto(state, flat);
    return slice2d(flat, d * batch_, (d + 1) * batch_, 1, 0, hidden_, what, into);
  }
  Tensor& flat = temp(Shape{batch_, directions_ * hidden_}, what + "_rows");
  reshapeInto(state, flat);
  return slice2d(flat, 0, batch_, 1, d * hidden_, (d + 1) * hidden_, what, into);
}

void RecurrentLayer::joinInto(const std::vector<Tensor*>& pieces, Shape rows, int axis) {
  if (pieces.size() == 1) {
    reshapeInto(*pieces[0], output_);
    return;
  }
  std::vector<Tensor*> views;
  for (Tensor* piece : pieces) {
    if (piece->shape() == rows) {
      views.push_back(piece);
      continue;
    }
    Tensor& view = temp(rows, "rows");
    reshapeInto(*piece, view);
    views.push_back(&view);
  }
  const int n = static_cast<int>(views.size());
  Shape joined_shape = rows;
  joined_shape[static_cast<std::size_t>(axis)] *= n;
  Tensor& joined = temp(joined_shape, "joined");
  std::vector<cnmlTensor_t> descs;
  for (Tensor* v : views) descs.push_back(v->desc());
  cnmlTensor_t out_desc = joined.desc();
  cnmlBaseOp_t op = nullptr;
  PZ_CHECK(name_, cnmlCreateNdConcatOp(&op, axis, descs.data(), n, &out_desc, 1));
  addOp(op, [op, views, &joined](cnrtQueue_t queue, void* extra) {
    detail::TensorList in(views);
    cnmlTensor_t o = joined.desc();
    void* o_data = joined.deviceData();
    return cnmlComputeConcatOpForward_V4(op, in.descs.data(), in.data.data(), in.size(), &o,
                                         &o_data, 1, queue, extra);
  });
  reshapeInto(joined, output_);
}

void RecurrentLayer::build() {
  temps_.clear();  // a rebuild (after a device-model estimate): the old ops are gone
  consts_.clear();
  if (buildWhole()) return;
  const int gh = gates_ * hidden_;
  prefix_ = name_ + "/";
  auto stateOf = [this](Tensor* state, int d, const std::string& what) -> Tensor* {
    return state == nullptr ? nullptr : &stateInto(*state, d, what);
  };
  // x as rows of I: row t*B + b at layout 0, b*T + t at layout 1.
  Tensor& x = temp(Shape{steps_ * batch_, input_size_}, "x_rows");
  reshapeInto(*inputs_[0], x);
  std::vector<std::vector<Tensor*>> y(static_cast<std::size_t>(steps_),
                                      std::vector<Tensor*>(directions_, nullptr));
  std::vector<Tensor*> last_h(directions_, nullptr), last_c(directions_, nullptr);
  for (int d = 0; d < directions_; ++d) {
    prefix_ = name_ + "/d" + std::to_string(d) + "/";
    prepare(d);
    const ConstTensor& w = constant(CNML_FILTER, Shape{gh, input_size_}, rows(*w_, d, 0, gh));
    const ConstTensor& bias = constant(CNML_CONST, Shape{gh}, inputBias(d));
    // Every step's input projection in one Mlp, as Cambricon's LSTM does.
    Tensor& xw = mlp(x, w, &bias, "xw");
    Tensor* h = stateOf(inputs_.size() > 1 ? inputs_[1] : nullptr, d, "h0");
    Tensor* c = stateOf(inputs_.size() > 2 ? inputs_[2] : nullptr, d, "c0");
    const bool reverse = direction_ == RnnDirection::kReverse || d == 1;
    for (int s = 0; s < steps_; ++s) {
      const int t = reverse ? steps_ - 1 - s : s;
      prefix_ = name_ + "/d" + std::to_string(d) + "t" + std::to_string(t) + "/";
      Tensor& xw_t = layout_ == 0 ? slice2d(xw, t * batch_, (t + 1) * batch_, 1, 0, gh, "xw")
                                  : slice2d(xw, t, steps_ * batch_, steps_, 0, gh, "xw");
      h = &step(d, xw_t, h, &c);
      y[static_cast<std::size_t>(t)][static_cast<std::size_t>(d)] = h;
    }
    last_h[static_cast<std::size_t>(d)] = h;
    last_c[static_cast<std::size_t>(d)] = c;
  }
  prefix_ = name_ + "/";
  // The output as one concat of [B, H] pieces in memory order, reshaped: [T, D, B, H] is
  // (t, d)-major.
  std::vector<Tensor*> pieces;
  if (output_kind_ == RnnOutput::kY) {
    for (const auto& at_t : y) pieces.insert(pieces.end(), at_t.begin(), at_t.end());
  } else {
    pieces = output_kind_ == RnnOutput::kYH ? last_h : last_c;
  }
  joinInto(pieces, Shape{batch_, hidden_}, layout_ == 0 ? 0 : 1);
}

// ---- LstmLayer ------------------------------------------------------------------------

LstmLayer::LstmLayer(std::string name, std::vector<Tensor*> inputs, int hidden_size,
                     RnnDirection direction, int layout, RnnOutput output, bool peepholes)
    : RecurrentLayer(std::move(name), std::move(inputs), 4, hidden_size, direction, layout,
                     output) {
  // Declared either way (bound as zeros when absent) so configLayer takes W, R, B, P for
  // every LSTM; the peephole ops exist only with `peepholes`.
  const ConstTensor& p =
      declareWeight("P", CNML_CONST, Shape{directions_, 3 * hidden_}, /*optional=*/true);
  if (peepholes) p_ = &p;
}

const ConstTensor* LstmLayer::peepholeWeight() const { return p_; }

bool LstmLayer::sdkCell(cnmlRnnCell_t* cell) const {
  *cell = CNML_RNN_LSTM;
  return true;
}

void LstmLayer::prepare(int d) {
  rd_ = &constant(CNML_FILTER, Shape{4 * hidden_, hidden_}, rows(*r_, d, 0, 4 * hidden_));
  if (p_ == nullptr) return;
  const int h = hidden_;
  const std::vector<float> p = rows(*p_, d, 0, 3 * h);
  auto part = [&p, h](int k) {
    return p.empty() ? p : std::vector<float>(p.begin() + k * h, p.begin() + (k + 1) * h);
  };
  pi_ = &constant(CNML_CONST, Shape{h}, part(0));
  po_ = &constant(CNML_CONST, Shape{h}, part(1));
  pf_ = &constant(CNML_CONST, Shape{h}, part(2));
}

Tensor& LstmLayer::step(int, Tensor& xw, Tensor* h, Tensor** c) {
  Tensor& gates = h == nullptr ? xw : add(xw, mlp(*h, *rd_, nullptr, "hr"), "gates");
  Tensor* c_prev = *c;
  Tensor* gi = &gate(gates, 0);
  Tensor* go = &gate(gates, 1);
  if (p_ != nullptr && c_prev != nullptr) gi = &add(*gi, scale(*c_prev, *pi_, "pi_c"), "i_in");
  Tensor& i = active(Active::kSigmoid, *gi, "i");
  Tensor& candidate = active(Active::kTanh, gate(gates, 3), "c_candidate");
  Tensor* c_next = &mult(i, candidate, "i_c");
  if (c_prev != nullptr) {  // zero c adds nothing, so the forget gate is skipped
    Tensor* gf = &gate(gates, 2);
    if (p_ != nullptr) gf = &add(*gf, scale(*c_prev, *pf_, "pf_c"), "f_in");
    Tensor& f = active(Active::kSigmoid, *gf, "f");
    c_next = &add(mult(f, *c_prev, "f_c"), *c_next, "c");
  }
  if (p_ != nullptr) go = &add(*go, scale(*c_next, *po_, "po_c"), "o_in");
  Tensor& o = active(Active::kSigmoid, *go, "o");
  *c = c_next;
  return mult(o, active(Active::kTanh, *c_next, "tanh_c"), "h");
}

// ---- GruLayer -------------------------------------------------------------------------

GruLayer::GruLayer(std::string name, std::vector<Tensor*> inputs, int hidden_size,
                   RnnDirection direction, int layout, RnnOutput output,
                   bool linear_before_reset)
    : RecurrentLayer(std::move(name), std::move(inputs), 3, hidden_size, direction, layout,
                     output),
      linear_before_reset_(linear_before_reset) {}

std::vector<float> GruLayer::inputBias(int d) const {
  // Wb + Rb for z and r; Rbh joins Wbh only when it is added outside the reset gate.
  const int h = hidden_;
  std::vector<float> wb = rows(*b_, d, 0, 3 * h);
  const std::vector<float> rb = rows(*b_, d, 3 * h, 6 * h);
  const std::size_t summed = linear_before_reset_ ? 2 * h : 3 * h;
  for (std::size_t i = 0; i < wb.size() && i < summed; ++i) wb[i] += rb[i];
  return wb;
}

bool GruLayer::sdkCell(cnmlRnnCell_t* cell) const {
  *cell = linear_before_reset_ ? CNML_RNN_GRU_LINEAR_BEFORE_RESET : CNML_RNN_GRU;
  return true;
}

void GruLayer::prepare(int d) {
  const int h = hidden_;
  if (linear_before_reset_) {
    r_all_ = &constant(CNML_FILTER, Shape{3 * h, h}, rows(*r_, d, 0, 3 * h));
    std::vector<float> rbh = rows(*b_, d, 5 * h, 6 * h);
    std::vector<float> rb_all;
    if (!rbh.empty()) {
      rb_all.assign(static_cast<std::size_t>(2 * h), 0.0f);
      rb_all.insert(rb_all.end(), rbh.begin(), rbh.end());
    }
    rb_all_ = &constant(CNML_CONST, Shape{3 * h}, rb_all);
    r_bh_ = &constant(CNML_CONST, Shape{h}, rbh);
  } else {
    r_zr_ = &constant(CNML_FILTER, Shape{2 * h, h}, rows(*r_, d, 0, 2 * h));
    r_h_ = &constant(CNML_FILTER, Shape{h, h}, rows(*r_, d, 2 * h, 3 * h));
  }
}

Tensor& GruLayer::step(int, Tensor& xw, Tensor* h, Tensor**) {
  Tensor* hr = nullptr;
  Tensor* zr_in = &gate(xw, 0, 2);
  if (h != nullptr) {
    if (linear_before_reset_) {
      hr = &mlp(*h, *r_all_, rb_all_, "hr");
      zr_in = &add(*zr_in, gate(*hr, 0, 2), "zr_in");
    } else {
      zr_in = &add(*zr_in, mlp(*h, *r_zr_, nullptr, "hr_zr"), "zr_in");
    }
  }
  Tensor& zr = active(Active::kSigmoid, *zr_in, "zr");
  Tensor& z = gate(zr, 0);
  Tensor& r = gate(zr, 1);
  Tensor* n_in = &gate(xw, 2);
  if (linear_before_reset_) {
    // r * (h Rh^T + Rbh); with h = 0 that is r * Rbh.
    n_in = &add(*n_in, h != nullptr ? mult(r, gate(*hr, 2), "r_hr") : scale(r, *r_bh_, "r_rbh"),
                "n_in");
  } else if (h != nullptr) {
    n_in = &add(*n_in, mlp(mult(r, *h, "r_h"), *r_h_, nullptr, "rh_r"), "n_in");
  }
  Tensor& n = active(Active::kTanh, *n_in, "n");
  if (h == nullptr) return sub(n, mult(z, n, "z_n"), "h");  // (1 - z) * n
  return add(n, mult(z, sub(*h, n, "h_n"), "z_h_n"), "h");
}

// ---- RnnLayer -------------------------------------------------------------------------

RnnLayer::RnnLayer(std::string name, std::vector<Tensor*> inputs, int hidden_size,
                   RnnDirection direction, int layout, RnnOutput output, Active activation)
    : RecurrentLayer(std::move(name), std::move(inputs), 1, hidden_size, direction, layout,
                     output),
      activation_(activation) {}

bool RnnLayer::sdkCell(cnmlRnnCell_t* cell) const {
  switch (activation_) {
    case Active::kTanh: *cell = CNML_RNN_TANH; return true;
    case Active::kRelu: *cell = CNML_RNN_RELU; return true;
    case Active::kSigmoid: *cell = CNML_RNN_SIGMOID; return true;
    default: return false;  // clipped ReLUs: no recurrent op has them
  }
}

void RnnLayer::prepare(int d) {
  rd_ = &constant(CNML_FILTER, Shape{hidden_, hidden_}, rows(*r_, d, 0, hidden_));
}

Tensor& RnnLayer::step(int, Tensor& xw, Tensor* h, Tensor**) {
  Tensor& in = h == nullptr ? xw : add(xw, mlp(*h, *rd_, nullptr, "hr"), "a");
  return active(activation_, in, "h");
}

// ---- factories (layer_registry.h) -----------------------------------------------------

namespace detail {
namespace {

// The attribute each kind takes beyond the four they share: its constructor's last argument.
bool peepholes(const std::string&, const LayerArgs& a) { return a.flag("peepholes", false); }
bool linearBeforeReset(const std::string&, const LayerArgs& a) {
  return a.flag("linear_before_reset", false);
}
Active activation(const std::string& layer, const LayerArgs& a) {
  return parseEnum<Active>(a.text("activation", "tanh"), layer);
}

// Builds an `L` from the shared attributes and its own (read by `own`).
template <typename L, auto own>
std::unique_ptr<Layer> makeRecurrent(const std::string& name, const std::vector<Tensor*>& in,
                                     const LayerArgs& a) {
  const auto last = own(name, a);
  return std::make_unique<L>(name, in, a.integer("hidden_size"),
                             parseEnum<RnnDirection>(a.text("direction"), name),
                             a.integer("layout", 0),
                             parseEnum<RnnOutput>(a.text("output", "y"), name), last);
}

}  // namespace

void addRecurrentFactories(std::vector<LayerFactory>& factories) {
  const auto add = [&](const char* kind, const char* own, LayerFactory::Make make) {
    factories.push_back({kind, LayerFactory::kAnyInputs,
                         {"hidden_size", "direction", "layout", "output", own}, make});
  };
  add("lstm", "peepholes", makeRecurrent<LstmLayer, peepholes>);
  add("gru", "linear_before_reset", makeRecurrent<GruLayer, linearBeforeReset>);
  add("rnn", "activation", makeRecurrent<RnnLayer, activation>);
}

}  // namespace detail
}  // namespace pz
