#include "swish.h"

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>

namespace pz_sdk {
namespace onednn {
namespace {

// GCC 12 warns that the intrinsics' internal _mm512_undefined_*() values are uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#if defined(__AVX512F__)
// With s = e^-|x|: x / (1 + s) for x >= 0, x s / (1 + s) below, so e^... never overflows
// and a large negative x keeps its tiny result. -|x| is clamped at -150, where s is 0 in
// float: +inf gives inf / 1, -inf gives -inf * 0 = NaN, NaN passes through x.
inline __m512 swish16(__m512 x) {
  const __m512 zero = _mm512_setzero_ps();
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 t = _mm512_max_ps(_mm512_sub_ps(zero, ax), _mm512_set1_ps(-150.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(t, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), t);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201e-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  const __m512 s = _mm512_scalef_ps(p, n);
  const __mmask16 nonneg = _mm512_cmp_ps_mask(x, zero, _CMP_GE_OQ);
  const __m512 num = _mm512_mask_mov_ps(_mm512_mul_ps(x, s), nonneg, x);
  return _mm512_div_ps(num, _mm512_add_ps(_mm512_set1_ps(1.0f), s));
}
#endif

void swishRow(float* x, long long n) {
  long long i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, swish16(_mm512_loadu_ps(x + i)));
  if (i < n) {
    const __mmask16 m = static_cast<__mmask16>((1u << (n - i)) - 1);
    _mm512_mask_storeu_ps(x + i, m, swish16(_mm512_maskz_loadu_ps(m, x + i)));
    return;
  }
#endif
  for (; i < n; ++i) {
    const float s = std::exp(std::max(-std::fabs(x[i]), -150.0f));
    x[i] = (x[i] >= 0.0f ? x[i] : x[i] * s) / (1.0f + s);
  }
}

#pragma GCC diagnostic pop

}  // namespace

void swishInPlace(float* x, std::size_t n, int threads) {
  constexpr long long kChunk = 8192;
  const long long count = static_cast<long long>(n);
  const long long chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(threads) if (chunks > 1)
  for (long long c = 0; c < chunks; ++c)
    swishRow(x + c * kChunk, std::min(count, (c + 1) * kChunk) - c * kChunk);
}

}  // namespace onednn
}  // namespace pz_sdk
