// Pooling layers: max / average pooling and global average pooling, with their chainable
// parameter set and output shape function.
#ifndef PALEOZOIC_LAYERS_POOL_H_
#define PALEOZOIC_LAYERS_POOL_H_

#include <string>

#include "paleozoic/core.h"

namespace pz {

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

// The output shape function, shared by the layers and by tests.
Shape poolOutputShape(const Shape& in, const Pool& p);

class PoolLayer : public ParamLayer<cnmlPoolOpParam_t, cnmlDestroyPoolOpParam> {
 public:
  PoolLayer(std::string name, Tensor& input, const Pool& params);
};

// Average over the whole H x W plane; output [N, C, 1, 1]: a PoolLayer whose window is the
// input's H x W (stride 1, no pads).
class GlobalAvgPoolLayer : public PoolLayer {
 public:
  GlobalAvgPoolLayer(std::string name, Tensor& input);
};

}  // namespace pz

#endif  // PALEOZOIC_LAYERS_POOL_H_
