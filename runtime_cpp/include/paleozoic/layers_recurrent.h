// Recurrent layers (ONNX LSTM, GRU, RNN). Where the SDK has a recurrent op
// (cnmlCreateRnnOp: the oneDNN SDK) each direction is one op. Elsewhere (CNML, the mock)
// by cell substitution, as Cambricon's Caffe lowers LSTM (mlu_lstm_layer.cpp): one Mlp
// projects the input of every time step at once (x W^T + Wb + Rb), then each step is a
// handful of SDK ops: an Mlp on the previous h (no bias), Add, slices of the gates, Active
// sigmoid/tanh, Mult/Add/Sub for c and h. The ops are the layer's own (Layer::addOp), so a
// block fuses every step like any layers' ops.
#ifndef PALEOZOIC_LAYERS_RECURRENT_H_
#define PALEOZOIC_LAYERS_RECURRENT_H_

#include <memory>
#include <string>
#include <vector>

#include "paleozoic/core.h"
#include "paleozoic/enums.h"

namespace pz {

// What a recurrent layer shares with the three kinds. Inputs: x ([T, B, I] at layout 0,
// [B, T, I] at layout 1), then optionally initial_h and, for LSTM, initial_c ([D, B, H] at
// layout 0, [B, D, H] at layout 1; zeros when absent). The output is ONNX's Y ([T, D, B, H]
// / [B, T, D, H]), Y_h or Y_c ([D, B, H] / [B, D, H]) as `output` says. Weights as ONNX
// gives them: W [D, G*H, I], R [D, G*H, H], B [D, 2*G*H] (optional, zeros), G gates each in
// ONNX's order.
class RecurrentLayer : public Layer {
 public:
  int hiddenSize() const { return hidden_; }
  bool readsHostWeights() const override { return true; }  // W, R, B per direction

 protected:
  RecurrentLayer(std::string name, std::vector<Tensor*> inputs, int gates, int hidden_size,
                 RnnDirection direction, int layout, RnnOutput output);

  // One time step of direction `d`: xw holds x_t W^T + the input-side bias, [B, G*H]; h
  // and c the previous states (nullptr: zeros, the first step without initial states).
  // Returns h_t; an LSTM also sets *c to c_t.
  virtual Tensor& step(int d, Tensor& xw, Tensor* h, Tensor** c) = 0;
  // The bias added to the input projection of direction d ([G*H]) from B; by default
  // Wb + Rb, as every step adds both.
  virtual std::vector<float> inputBias(int d) const;
  // Called once per direction before its steps, after W and B are bound: derive the
  // per-direction constants the steps read.
  virtual void prepare(int d) = 0;
  // The SDK's recurrent cell of this layer, or false when it has none (then cells).
  virtual bool sdkCell(cnmlRnnCell_t* cell) const = 0;
  // P [D, 3H] when the layer reads peepholes.
  virtual const ConstTensor* peepholeWeight() const { return nullptr; }

  // Builders of the per-step ops (each adds its op with addOp and returns its output).
  Tensor& temp(Shape shape, const std::string& what);
  const ConstTensor& constant(cnmlTensorType_t type, Shape shape, std::vector<float> values);
  // Rows [rows_begin, rows_end) step `stride` and columns [col_begin, col_end) of a 2-D tensor.
  Tensor& slice2d(Tensor& in, int row_begin, int row_end, int stride, int col_begin,
                  int col_end, const std::string& what, Tensor* into = nullptr);
  Tensor& gate(Tensor& in, int index, int count = 1);  // columns of gate(s) index.. of [B, G*H]
  Tensor& mlp(Tensor& in, const ConstTensor& filter, const ConstTensor* bias,
              const std::string& what);
  Tensor& active(Active fn, Tensor& in, const std::string& what);
  Tensor& add(Tensor& a, Tensor& b, const std::string& what);
  Tensor& sub(Tensor& a, Tensor& b, const std::string& what);
  Tensor& mult(Tensor& a, Tensor& b, const std::string& what);
  Tensor& scale(Tensor& in, const ConstTensor& alpha, const std::string& what);
  void reshapeInto(Tensor& in, Tensor& out);

  // Values of a declared weight for direction d: rows [row_begin, row_end) of W / R / P
  // ([D, rows, cols]); empty before configLayer (an op built for the device model).
  std::vector<float> rows(const ConstTensor& weight, int d, int row_begin, int row_end) const;

  int gates_, hidden_, layout_;
  RnnDirection direction_;
  RnnOutput output_kind_;
  int steps_ = 0, batch_ = 0, input_size_ = 0, directions_ = 1;
  const ConstTensor* w_ = nullptr;
  const ConstTensor* r_ = nullptr;
  const ConstTensor* b_ = nullptr;
  std::string prefix_;  // of the step tensors' names: "<layer>/d<d>t<t>/"

 private:
  void build();
  void settleDataTypes() override;
  // The SDK calls of an element-wise op of two tensors of one shape (Add, Sub, Mult), with
  // the create call's name for errors.
  struct ElementwiseCalls {
    cnmlStatus_t (*create)(cnmlBaseOp_t*, cnmlTensor_t, cnmlTensor_t, cnmlTensor_t);
    const char* create_call;
    BinaryForward forward;
  };
  Tensor& elementwise(const ElementwiseCalls& calls, Tensor& a, Tensor& b, const std::string& what);
  // Every direction as the SDK's one recurrent op; false (nothing built) when the SDK has
  // none for this layer.
  bool buildWhole();
  // Direction d's [B, H] of an initial state input (into `into` when given).
  Tensor& stateInto(Tensor& state, int d, const std::string& what, Tensor* into = nullptr);
  // The output from one piece per direction, joined on `axis` of their 2-D views `rows`.
  void joinInto(const std::vector<Tensor*>& pieces, Shape rows, int axis);

  cnmlDataType_t dtype_ = CNML_DATA_FLOAT32;
  std::vector<std::unique_ptr<Tensor>> temps_;
  std::vector<std::unique_ptr<ConstTensor>> consts_;
};

// ONNX LSTM, gates i, o, f, c: i = f(Xi + Hi + Pi*c), f = f(Xf + Hf + Pf*c),
// c~ = g(Xc + Hc), c' = f*c + i*c~, o = f(Xo + Ho + Po*c'), h' = o*h(c'), with f = sigmoid,
// g = h = tanh. Weight P [D, 3H] (peepholes i, o, f; optional), read when `peepholes`.
class LstmLayer : public RecurrentLayer {
 public:
  const ConstTensor* peepholeWeight() const override;
  LstmLayer(std::string name, std::vector<Tensor*> inputs, int hidden_size,
            RnnDirection direction, int layout, RnnOutput output, bool peepholes = false);

 private:
  Tensor& step(int d, Tensor& xw, Tensor* h, Tensor** c) override;
  bool sdkCell(cnmlRnnCell_t* cell) const override;
  void prepare(int d) override;

  const ConstTensor* p_ = nullptr;
  const ConstTensor* rd_ = nullptr;
  const ConstTensor* pi_ = nullptr;
  const ConstTensor* po_ = nullptr;
  const ConstTensor* pf_ = nullptr;
};

// ONNX GRU, gates z, r, h: z = sigmoid(Xz + Hz), r = sigmoid(Xr + Hr), h~ = tanh(Xh +
// (r*h) Rh^T + Rbh) or, with linear_before_reset, tanh(Xh + r*(h Rh^T + Rbh)),
// h' = h~ + z*(h - h~) (= (1 - z)*h~ + z*h).
class GruLayer : public RecurrentLayer {
 public:
  GruLayer(std::string name, std::vector<Tensor*> inputs, int hidden_size,
           RnnDirection direction, int layout, RnnOutput output,
           bool linear_before_reset = false);

 private:
  Tensor& step(int d, Tensor& xw, Tensor* h, Tensor** c) override;
  std::vector<float> inputBias(int d) const override;
  bool sdkCell(cnmlRnnCell_t* cell) const override;
  void prepare(int d) override;

  bool linear_before_reset_;
  const ConstTensor* r_all_ = nullptr;  // [3H, H] with bias [0, 0, Rbh] (linear_before_reset)
  const ConstTensor* r_bh_ = nullptr;   // Rbh [H]
  const ConstTensor* rb_all_ = nullptr;
  const ConstTensor* r_zr_ = nullptr;   // [2H, H]
  const ConstTensor* r_h_ = nullptr;    // [H, H]
};

// ONNX RNN: h' = f(X + H), f = tanh unless `activation` says otherwise.
class RnnLayer : public RecurrentLayer {
 public:
  RnnLayer(std::string name, std::vector<Tensor*> inputs, int hidden_size,
           RnnDirection direction, int layout, RnnOutput output,
           Active activation = Active::kTanh);

 private:
  Tensor& step(int d, Tensor& xw, Tensor* h, Tensor** c) override;
  bool sdkCell(cnmlRnnCell_t* cell) const override;
  void prepare(int d) override;

  Active activation_;
  const ConstTensor* rd_ = nullptr;
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_RECURRENT_H_
