// The mock's reduced-precision arithmetic, stated in one place. Everything the mock assumes
// about how an MLU-100 computes in fp16 and int8 is listed here; kernels and the host cast
// (cnrtCastDataType) call these functions and nothing else for rounding or quantising.
//
// ASSUMPTIONS ABOUT THE CHIP (no public source fixes them; tests pin the mock to them):
//  1. Storage. A FLOAT16 tensor holds IEEE 754 binary16 values, 2 bytes each, little
//     endian, dense. Rounding to binary16 (from fp32) is round-to-nearest-even; magnitudes
//     that round past 65504 become +-inf; binary16 subnormals are produced and read (no
//     flush to zero); a NaN stays a quiet NaN with its top payload bits.
//  2. fp16 compute mode (an op whose activations are FLOAT16, other than Cast). The op
//     decodes its binary16 inputs and FLOAT16 consts exactly to fp32, computes with the
//     mock's fp32 kernels (the same arithmetic as the op in FLOAT32 mode), and rounds each
//     output element once to binary16. Intermediate results inside one op are never
//     rounded to binary16 (the real chip may accumulate differently; the mock does not
//     model it).
//  3. Quantisation (int8 compute of Conv, ConvGroup incl. depthwise, Mlp; and the host cast
//     to INT8). With position p and scale s (real = q * 2^p / s; symmetric, offset 0):
//        q = clamp(rint(double(x) * double(s) * 2^-p), -127, 127)
//     The product is taken in double: x (a binary16 or fp32 value, <= 24 significant
//     bits) times s (fp32, 24 bits) is exact in double, and the power of two is exact
//     within |p| <= 32, so the only rounding is rint, half to even (the default rounding
//     mode). -128 is never produced. NaN inputs quantise to 0, +-inf to +-127.
//  4. int8 products. Input q_x (per tensor p_x, s_x from cnmlSetOperationComputingDataType)
//     times filter q_w (int8, position and scale per tensor or per output channel c) are
//     summed exactly in int32 over the whole reduction (K = ci / group * kh * kw for a
//     conv, the flattened input for an Mlp; zero padding contributes q = 0). The mock
//     refuses at compile an int8 op whose K could overflow int32 (K > kMaxInt8Reduction).
//  5. Rescale, once per output element, in fp32 without fused multiply-add:
//        y = float(acc) * f_c + bias_c,   f_c = float(2^(p_x + p_w,c) / (s_x * s_w,c))
//     f_c is computed in double at compile and rounded once to fp32; float(acc) rounds the
//     int32 to the nearest fp32 (exact below 2^24); bias_c is the FLOAT16 bias decoded
//     exactly (0 without a bias). y is then rounded once to binary16 as in 1.
//  6. Dequantising host cast (cnrtCastDataType INT8 -> FLOAT32): x = float(q * 2^p / s)
//     with the division in double, rounded once to fp32.
#ifndef PZ_SDK_NUMERICS_H_
#define PZ_SDK_NUMERICS_H_

#include <cnml.h>

#include <cstddef>
#include <cstdint>

namespace pz_sdk {
namespace numerics {

// 2^31 / 127^2: the longest reduction whose int32 sum of int8 x int8 products cannot overflow.
constexpr long long kMaxInt8Reduction = 133143;

// Quantisation parameters accepted by the mock (cnmlCreateQuantizedParam and friends).
constexpr int kMinPosition = -32;
constexpr int kMaxPosition = 32;
bool validPosition(int position);
bool validScale(float scale);  // finite and > 0

// Bytes of one element of a dtype the mock stores (FLOAT32 4, FLOAT16 2, INT8 1); 0 for
// the others.
std::size_t dtypeBytes(cnmlDataType_t dtype);

// Assumption 1.
std::uint16_t floatToHalf(float value);
float halfToFloat(std::uint16_t bits);
void encodeHalf(const float* in, std::uint16_t* out, std::size_t n, int threads);
void decodeHalf(const std::uint16_t* in, float* out, std::size_t n, int threads);

// Assumption 3. scale_over_pow2 = double(scale) * 2^-position (exact), from stepInverse().
double stepInverse(int position, float scale);
inline std::int8_t quantize(float x, double scale_over_pow2);
void quantizeArray(const float* in, std::int8_t* out, std::size_t n, int position, float scale);

// Assumption 5: f = float(2^(px + pw) / (sx * sw)) with the right side in double.
float rescaleFactor(int px, float sx, int pw, float sw);

// Assumption 6.
float dequantize(std::int8_t q, int position, float scale);

}  // namespace numerics
}  // namespace pz_sdk

#include <cmath>

namespace pz_sdk {
namespace numerics {

inline std::int8_t quantize(float x, double scale_over_pow2) {
  if (std::isnan(x)) return 0;
  double t = std::nearbyint(static_cast<double>(x) * scale_over_pow2);
  if (t > 127.0) t = 127.0;
  if (t < -127.0) t = -127.0;
  return static_cast<std::int8_t>(t);
}

}  // namespace numerics
}  // namespace pz_sdk

#endif  // PZ_SDK_NUMERICS_H_
