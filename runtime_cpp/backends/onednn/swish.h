// SiLU computed by the SDK itself: oneDNN 3.2's eltwise_swish, as a post-op or a primitive,
// costs about 0.3 ns a value on this machine (a 1x1 convolution 16->96 at 112x112: 222 us,
// 706 us with the swish post-op), so convolutions ending in a SiLU run it after the
// primitive, over the destination in place (post_ops.h, PostOps::swish_tail).
#ifndef PZ_ONEDNN_SWISH_H_
#define PZ_ONEDNN_SWISH_H_

#include <cstddef>

namespace pz_sdk {
namespace onednn {

// x[i] = x[i] * sigmoid(x[i]) for i < n, on `threads` threads: e^-|x| by Cody-Waite
// reduction and Cephes' polynomial (within 2 ulp), then one correctly rounded division;
// measured within 4 ulp of float64 on normal results; -inf gives NaN and +inf gives inf,
// as x * sigmoid(x) does.
void swishInPlace(float* x, std::size_t n, int threads);

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_SWISH_H_
