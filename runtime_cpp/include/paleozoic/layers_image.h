// The resize layer (nearest and bilinear), with its chainable parameter set and output
// shape function.
#ifndef PALEOZOIC_LAYERS_IMAGE_H_
#define PALEOZOIC_LAYERS_IMAGE_H_

#include <string>

#include "paleozoic/core.h"
#include "paleozoic/enums.h"

namespace pz {

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

// The output shape function, shared by the layer and by tests.
Shape interpOutputShape(const Shape& in, const Interp& p);

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

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_IMAGE_H_
