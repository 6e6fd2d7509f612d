// Convolution layers: convolution (plain and grouped) and deconvolution, with their
// chainable parameter sets and output shape functions.
#ifndef PALEOZOIC_LAYERS_CONV_H_
#define PALEOZOIC_LAYERS_CONV_H_

#include <string>

#include "paleozoic/core.h"

namespace pz {

// Chainable parameter sets keep emitted constructor calls short and self-describing.
// ConvWindow is what a convolution and a transposed one share: the output channels, the
// kernel, stride, pads, dilation and groups, each setter returning the derived set (`Self`)
// so that a chain can go on with its own setters.
template <typename Self>
struct ConvWindow {
  int out_channels;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  Window dilation_{1, 1};
  int groups_ = 1;
  ConvWindow(int out, Window k) : out_channels(out), kernel(k) {}
  Self& stride(int h, int w) { stride_ = {h, w}; return self(); }
  Self& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return self(); }
  Self& dilation(int h, int w) { dilation_ = {h, w}; return self(); }
  Self& groups(int g) { groups_ = g; return self(); }

 private:
  Self& self() { return static_cast<Self&>(*this); }
};

struct Conv : ConvWindow<Conv> {
  using ConvWindow::ConvWindow;  // Conv(int out, Window k)
};

// Transposed convolution (ONNX ConvTranspose): pads crop the full output, outputPadding adds
// rows below and columns to the right; H_out = (H - 1) * sh - top - bottom + dh * (kh - 1) +
// oh + 1.
struct Deconv : ConvWindow<Deconv> {
  using ConvWindow::ConvWindow;  // Deconv(int out, Window k)
  Window output_padding_{0, 0};
  Deconv& outputPadding(int h, int w) { output_padding_ = {h, w}; return *this; }
};

// Output shape functions, shared by the layers and by tests.
Shape convOutputShape(const Shape& in, const Conv& p);
Shape deconvOutputShape(const Shape& in, const Deconv& p);

// Weights: weight [co, ci/groups, kh, kw], bias [co] (optional).
class ConvLayer : public ParamLayer<cnmlConvOpParam_t, cnmlDestroyConvOpParam> {
 public:
  ConvLayer(std::string name, Tensor& input, const Conv& params);
};

// The SDK's Deconv op (DeconvGroup when groups > 1). Its param is CNML's
// cnmlCreateDeconvOpParam when the layer needs neither dilation nor output padding beyond
// the bottom / right pad, else the mock extension cnmlCreateDeconvOpParam_V2.
// Weights: weight [ci, co/groups, kh, kw] (ONNX ConvTranspose's layout), bias [co] (optional).
class DeconvLayer : public ParamLayer<cnmlDeconvOpParam_t, cnmlDestroyDeconvOpParam> {
 public:
  DeconvLayer(std::string name, Tensor& input, const Deconv& params);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_CONV_H_
