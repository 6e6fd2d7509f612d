// Spatial layers: convolution (plain and grouped), deconvolution, resize, pooling, global
// average pooling and LRN, with their chainable parameter sets and output shape functions.
#ifndef PALEOZOIC_LAYERS_CONV_POOL_H_
#define PALEOZOIC_LAYERS_CONV_POOL_H_

#include <string>

#include "paleozoic/core.h"
#include "paleozoic/enums.h"

namespace pz {

// Chainable parameter sets keep emitted constructor calls short and self-describing.
struct Conv {
  int out_channels;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  Window dilation_{1, 1};
  int groups_ = 1;
  Conv(int out, Window k) : out_channels(out), kernel(k) {}
  Conv& stride(int h, int w) { stride_ = {h, w}; return *this; }
  Conv& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return *this; }
  Conv& dilation(int h, int w) { dilation_ = {h, w}; return *this; }
  Conv& groups(int g) { groups_ = g; return *this; }
};

// Transposed convolution (ONNX ConvTranspose): pads crop the full output, outputPadding adds
// rows below and columns to the right; H_out = (H - 1) * sh - top - bottom + dh * (kh - 1) +
// oh + 1.
struct Deconv {
  int out_channels;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  Window dilation_{1, 1};
  int groups_ = 1;
  Window output_padding_{0, 0};
  Deconv(int out, Window k) : out_channels(out), kernel(k) {}
  Deconv& stride(int h, int w) { stride_ = {h, w}; return *this; }
  Deconv& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return *this; }
  Deconv& dilation(int h, int w) { dilation_ = {h, w}; return *this; }
  Deconv& groups(int g) { groups_ = g; return *this; }
  Deconv& outputPadding(int h, int w) { output_padding_ = {h, w}; return *this; }
};

// ONNX Resize of H and W (scale = out / in): InterpCoordinates and InterpRounding are in
// enums.h. Defaults are ONNX's: half_pixel, round_prefer_floor.
struct Interp {
  bool linear_;  // false: nearest
  Window size;  // output H x W
  InterpCoordinates coordinates_ = InterpCoordinates::kHalfPixel;
  InterpRounding rounding_ = InterpRounding::kRoundPreferFloor;  // nearest only
  static Interp nearest(Window out) { return Interp{false, out}; }
  static Interp linear(Window out) { return Interp{true, out}; }
  Interp& coordinates(InterpCoordinates c) { coordinates_ = c; return *this; }
  Interp& rounding(InterpRounding r) { rounding_ = r; return *this; }
};

struct Pool {
  cnmlPoolMode_t mode;
  Window kernel;
  Window stride_{1, 1};
  Pads pads_{};
  bool ceil_mode_ = false;
  bool count_include_pad_ = false;
  static Pool max(Window k) { return Pool{CNML_POOL_MAX, k}; }
  static Pool avg(Window k) { return Pool{CNML_POOL_AVG, k}; }
  Pool& stride(int h, int w) { stride_ = {h, w}; return *this; }
  Pool& pads(int t, int b, int l, int r) { pads_ = {t, b, l, r}; return *this; }
  Pool& ceilMode(bool on) { ceil_mode_ = on; return *this; }
  Pool& countIncludePad(bool on) { count_include_pad_ = on; return *this; }
};

struct Lrn {
  int size;
  double alpha = 1e-4, beta = 0.75, bias = 1.0;
  explicit Lrn(int n) : size(n) {}
  Lrn& alphaBetaBias(double a, double b, double k) { alpha = a; beta = b; bias = k; return *this; }
};

// Output shape functions, shared by the layers and by tests.
Shape convOutputShape(const Shape& in, const Conv& p);
Shape poolOutputShape(const Shape& in, const Pool& p);
Shape deconvOutputShape(const Shape& in, const Deconv& p);
Shape interpOutputShape(const Shape& in, const Interp& p);

// Weights: weight [co, ci/groups, kh, kw], bias [co] (optional).
class ConvLayer : public Layer {
 public:
  ConvLayer(std::string name, Tensor& input, const Conv& params);

 private:
  SdkHandle<cnmlConvOpParam_t, cnmlDestroyConvOpParam> param_;
};

// The SDK's Deconv op (DeconvGroup when groups > 1). Its param is CNML's
// cnmlCreateDeconvOpParam when the layer needs neither dilation nor output padding beyond
// the bottom / right pad, else the mock extension cnmlCreateDeconvOpParam_V2.
// Weights: weight [ci, co/groups, kh, kw] (ONNX ConvTranspose's layout), bias [co] (optional).
class DeconvLayer : public Layer {
 public:
  DeconvLayer(std::string name, Tensor& input, const Deconv& params);

 private:
  SdkHandle<cnmlDeconvOpParam_t, cnmlDestroyDeconvOpParam> param_;
};

// Nearest: the SDK's NearestNeighbor op; linear: its Interp op (bilinear). A mapping CNML's
// align_corners flag does not give is set with the mock extensions
// cnmlSetNearestNeighborCoordinateMode / RoundMode and cnmlSetInterpCoordinateMode.
class InterpLayer : public Layer {
 public:
  InterpLayer(std::string name, Tensor& input, const Interp& params);

 private:
  SdkHandle<cnmlNearestNeighborOpParam_t, cnmlDestroyNearestNeighborOpParam> nearest_param_;
  SdkHandle<cnmlInterpOpParam_t, cnmlDestroyInterpOpParam> linear_param_;
};

class PoolLayer : public Layer {
 public:
  PoolLayer(std::string name, Tensor& input, const Pool& params);

 private:
  SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam> param_;
};

// Average over the whole H x W plane; output [N, C, 1, 1].
class GlobalAvgPoolLayer : public Layer {
 public:
  GlobalAvgPoolLayer(std::string name, Tensor& input);

 private:
  SdkHandle<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam> param_;
};

// ONNX LRN semantics: y = x / (bias + alpha / size * sum_window(x^2))^beta.
class LrnLayer : public Layer {
 public:
  LrnLayer(std::string name, Tensor& input, const Lrn& params);

 private:
  SdkHandle<cnmlLrnOpParam_t, cnmlDestroyLrnOpParam> param_;
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_CONV_POOL_H_
