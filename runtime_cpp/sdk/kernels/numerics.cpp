// The arithmetic of numerics.h (compiled with -ffp-contract=off: see runtime_cpp/CMakeLists.txt).
#include "numerics.h"

#include <cstring>

namespace pz_sdk {
namespace numerics {

bool validPosition(int position) { return position >= kMinPosition && position <= kMaxPosition; }
bool validScale(float scale) { return std::isfinite(scale) && scale > 0.0f; }

std::size_t dtypeBytes(cnmlDataType_t dtype) {
  switch (dtype) {
    case CNML_DATA_FLOAT32: return 4;
    case CNML_DATA_FLOAT16: return 2;
    case CNML_DATA_INT8: return 1;
    default: return 0;
  }
}

// Integer round-to-nearest-even from the fp32 bit pattern (no dependence on the FPU's
// rounding mode or flush-to-zero settings).
std::uint16_t floatToHalf(float value) {
  std::uint32_t x;
  std::memcpy(&x, &value, sizeof x);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a > 0x7f800000u)  // NaN: quiet, top payload bits kept
    return static_cast<std::uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return static_cast<std::uint16_t>(sign | 0x7c00u);  // >= 65520: inf
  if (a >= 0x38800000u) {  // a binary16 normal (>= 2^-14): rebias, drop 13 bits, RNE
    const std::uint32_t m = a - 0x38000000u;
    const std::uint32_t r = m + 0xfffu + ((m >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | (r >> 13));
  }
  if (a <= 0x33000000u) return sign;  // <= 2^-25: rounds to zero (2^-25 ties to even 0)
  // A binary16 subnormal: units of 2^-24.
  const int e = static_cast<int>(a >> 23);  // 102..112
  const std::uint32_t mant = (a & 0x7fffffu) | 0x800000u;
  const int shift = 126 - e;  // 14..24
  std::uint32_t q = mant >> shift;
  const std::uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;
  return static_cast<std::uint16_t>(sign | q);
}

float halfToFloat(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal: normalise
    int e = -1;
    std::uint32_t m = mant;
    do {
      ++e;
      m <<= 1;
    } while ((m & 0x400u) == 0);
    bits = sign | ((112u - static_cast<std::uint32_t>(e)) << 23) | ((m & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void encodeHalf(const float* in, std::uint16_t* out, std::size_t n, int threads) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static) num_threads(threads) if (count > 65536)
  for (long long i = 0; i < count; ++i) out[i] = floatToHalf(in[i]);
}

void decodeHalf(const std::uint16_t* in, float* out, std::size_t n, int threads) {
  const long long count = static_cast<long long>(n);
#pragma omp parallel for schedule(static) num_threads(threads) if (count > 65536)
  for (long long i = 0; i < count; ++i) out[i] = halfToFloat(in[i]);
}

double stepInverse(int position, float scale) {
  return std::ldexp(static_cast<double>(scale), -position);
}

void quantizeArray(const float* in, std::int8_t* out, std::size_t n, int position,
                   float scale) {
  const double k = stepInverse(position, scale);
  for (std::size_t i = 0; i < n; ++i) out[i] = quantize(in[i], k);
}

float rescaleFactor(int px, float sx, int pw, float sw) {
  const double f = std::ldexp(1.0, px + pw) / (static_cast<double>(sx) * static_cast<double>(sw));
  return static_cast<float>(f);
}

float dequantize(std::int8_t q, int position, float scale) {
  return static_cast<float>(std::ldexp(static_cast<double>(q), position) /
                            static_cast<double>(scale));
}

}  // namespace numerics
}  // namespace pz_sdk
