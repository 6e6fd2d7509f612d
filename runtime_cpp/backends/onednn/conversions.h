// binary16 and int8 conversions (numerics.h 1 and 3), vectorised: dense, and straight into
// or out of channels last. Inline here, so each caller's loops take their row converter in.
#ifndef PZ_ONEDNN_CONVERSIONS_H_
#define PZ_ONEDNN_CONVERSIONS_H_

#include <omp.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/numerics.h"

namespace pz_sdk {
namespace onednn {

// GCC 12 warns that the intrinsics' internal _mm512_undefined_*() values are uninitialised.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

// One contiguous row each (vectorised where the ISA allows), and with AVX-512 sixteen
// values at a time in a register (`put`), for the transposing conversions below.
// vcvtps2ph with round to nearest even gives numerics::floatToHalf's bits (subnormals kept,
// overflow to inf, NaN quieted with its top payload bits), vcvtph2ps halfToFloat's.
#if defined(__AVX512F__)
inline __m512 load16(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}
inline __m512 load16(const float* p) { return _mm512_loadu_ps(p); }
#endif

// A row of `n` values: sixteen at a time through row.put where AVX-512 allows, the rest one
// by one through `one`.
template <typename Row, typename One, typename In, typename Out>
inline void convertRow(const In* in, Out* out, long long n, [[maybe_unused]] const Row& row,
                       One one) {
  long long i = 0;
#if defined(__AVX512F__)
  for (; i + 16 <= n; i += 16) row.put(load16(in + i), out + i);
#endif
  for (; i < n; ++i) out[i] = one(in[i]);
}

struct EncodeRow {
  void operator()(const float* in, std::uint16_t* out, long long n) const {
    convertRow(in, out, n, *this, [](float x) { return numerics::floatToHalf(x); });
  }
#if defined(__AVX512F__)
  void put(__m512 x, std::uint16_t* out) const {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                        _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
#endif
};

struct DecodeRow {
  void operator()(const std::uint16_t* in, float* out, long long n) const {
    convertRow(in, out, n, *this, [](std::uint16_t h) { return numerics::halfToFloat(h); });
  }
#if defined(__AVX512F__)
  void put(__m512 x, float* out) const { _mm512_storeu_ps(out, x); }
#endif
};

// numerics::quantize of the decoded binary16 input: x * k in double (exact), rint half to
// even, NaN -> 0, clamp to +-127.
struct QuantizeRow {
  double k;
  void operator()(const std::uint16_t* in, std::int8_t* out, long long n) const {
    convertRow(in, out, n, *this, [k = k](std::uint16_t h) {
      return numerics::quantize(numerics::halfToFloat(h), k);
    });
  }
#if defined(__AVX512F__)
  __m256i eight(__m256 x) const {
    __m512d t = _mm512_mul_pd(_mm512_cvtps_pd(x), _mm512_set1_pd(k));
    t = _mm512_roundscale_pd(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    t = _mm512_maskz_mov_pd(_mm512_cmp_pd_mask(t, t, _CMP_ORD_Q), t);  // NaN -> 0
    t = _mm512_min_pd(_mm512_max_pd(t, _mm512_set1_pd(-127.0)), _mm512_set1_pd(127.0));
    return _mm512_cvtpd_epi32(t);
  }
  void put(__m512 x, std::int8_t* out) const {
    const __m256i a = eight(_mm512_castps512_ps256(x));
    const __m256i c = eight(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    const __m512i q = _mm512_inserti64x4(_mm512_castsi256_si512(a), c, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out), _mm512_cvtepi32_epi8(q));
  }
#endif
};

// numerics::quantize of a linked producer's fp32 result (backendLink), as QuantizeRow of
// the binary16 value but without that rounding in between.
struct QuantizeFloatRow {
  QuantizeRow q;
  void operator()(const float* in, std::int8_t* out, long long n) const {
    convertRow(in, out, n, q, [k = q.k](float x) { return numerics::quantize(x, k); });
  }
};

constexpr long long kChunk = 4096;  // elements per parallel task

// A dense buffer converted element by element, in chunks on `threads` threads.
template <typename In, typename Out, typename Row>
void convertDense(const In* in, Out* out, std::size_t n, int threads, Row row) {
  const long long count = static_cast<long long>(n);
  const long long chunks = (count + kChunk - 1) / kChunk;
#pragma omp parallel for schedule(static) num_threads(threads) if (chunks > 4)
  for (long long c = 0; c < chunks; ++c)
    row(in + c * kChunk, out + c * kChunk, std::min(count, (c + 1) * kChunk) - c * kChunk);
}

inline void encode(const float* in, std::uint16_t* out, std::size_t n, int threads) {
  convertDense(in, out, n, threads, EncodeRow());
}
inline void decode(const std::uint16_t* in, float* out, std::size_t n, int threads) {
  convertDense(in, out, n, threads, DecodeRow());
}

// int8 convolutions want channels-last (nhwc) operands: the conversions write or read that
// layout directly, in tiles of kTileC channels x kTileS positions (16 x 16 blocks
// transposed in registers), instead of a oneDNN reorder pass on top (which cost more than
// the convolutions themselves on ResNet-50).
constexpr int kTileC = 16, kTileS = 64;

struct Planes {
  long long n, c, s;  // batch, channels, positions per channel
  long long tiles() const {
    return n * ((c + kTileC - 1) / kTileC) * ((s + kTileS - 1) / kTileS);
  }
  // Tile t of tiles(): batch index n, channels [c0, c0 + cw), positions [s0, s0 + sw).
  struct Tile {
    long long n, c0, s0, cw, sw;
  };
  Tile tile(long long t) const {
    const long long cb = (c + kTileC - 1) / kTileC, sb = (s + kTileS - 1) / kTileS;
    const long long c0 = (t / sb) % cb * kTileC, s0 = t % sb * kTileS;
    return {t / (cb * sb), c0, s0, std::min<long long>(kTileC, c - c0),
            std::min<long long>(kTileS, s - s0)};
  }
};

#if defined(__AVX512F__)
// r[i] = row i of a 16 x 16 block; afterwards r[j] = column j.
inline void transpose16(__m512 r[16]) {
  __m512 t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {  // u[i + m]: columns m, m+4, m+8, m+12 of rows i..i+3
    const __m512d a = _mm512_castps_pd(t[i]), b = _mm512_castps_pd(t[i + 1]);
    const __m512d c = _mm512_castps_pd(t[i + 2]), d = _mm512_castps_pd(t[i + 3]);
    u[i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    u[i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    u[i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    u[i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int m = 0; m < 4; ++m) {
    const __m512 v0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0x88);
    const __m512 v1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0x88);
    const __m512 w0 = _mm512_shuffle_f32x4(u[m], u[4 + m], 0xdd);
    const __m512 w1 = _mm512_shuffle_f32x4(u[8 + m], u[12 + m], 0xdd);
    r[m] = _mm512_shuffle_f32x4(v0, v1, 0x88);
    r[m + 8] = _mm512_shuffle_f32x4(v0, v1, 0xdd);
    r[m + 4] = _mm512_shuffle_f32x4(w0, w1, 0x88);
    r[m + 12] = _mm512_shuffle_f32x4(w0, w1, 0xdd);
  }
}
#endif

// Dense [n][c][s] binary16 -> [n][s][c] Out.
template <typename Out, typename Row>
void toChannelsLast(const std::uint16_t* in, Out* out, const Planes& p, int threads, Row row) {
#pragma omp parallel for schedule(static) num_threads(threads) if (p.tiles() > 4)
  for (long long t = 0; t < p.tiles(); ++t) {
    const auto [n, c0, s0, cw, sw] = p.tile(t);
    const std::uint16_t* src = in + (n * p.c + c0) * p.s + s0;
    Out* dst = out + (n * p.s + s0) * p.c + c0;
    long long j0 = 0;
#if defined(__AVX512F__)
    for (; cw == 16 && j0 + 16 <= sw; j0 += 16) {
      __m512 r[16];
      for (int k = 0; k < 16; ++k) r[k] = load16(src + k * p.s + j0);
      transpose16(r);
      for (int j = 0; j < 16; ++j) row.put(r[j], dst + (j0 + j) * p.c);
    }
#endif
    if (j0 == sw) continue;
    Out tile[kTileS][kTileC], line[kTileS];
    for (long long k = 0; k < cw; ++k) {
      row(src + k * p.s + j0, line, sw - j0);
      for (long long j = j0; j < sw; ++j) tile[j][k] = line[j - j0];
    }
    for (long long j = j0; j < sw; ++j) std::memcpy(dst + j * p.c, tile[j], sizeof(Out) * cw);
  }
}

// Dense [n][s][c] fp32 -> [n][c][s] binary16.
inline void fromChannelsLast(const float* in, std::uint16_t* out, const Planes& p, int threads) {
  const EncodeRow row;
#pragma omp parallel for schedule(static) num_threads(threads) if (p.tiles() > 4)
  for (long long t = 0; t < p.tiles(); ++t) {
    const auto [n, c0, s0, cw, sw] = p.tile(t);
    const float* src = in + (n * p.s + s0) * p.c + c0;
    std::uint16_t* dst = out + (n * p.c + c0) * p.s + s0;
    long long j0 = 0;
#if defined(__AVX512F__)
    for (; cw == 16 && j0 + 16 <= sw; j0 += 16) {
      __m512 r[16];
      for (int j = 0; j < 16; ++j) r[j] = _mm512_loadu_ps(src + (j0 + j) * p.c);
      transpose16(r);
      for (int k = 0; k < 16; ++k) row.put(r[k], dst + k * p.s + j0);
    }
#endif
    if (j0 == sw) continue;
    float tile[kTileS][kTileC], line[kTileS];
    for (long long j = j0; j < sw; ++j) std::memcpy(tile[j], src + j * p.c, sizeof(float) * cw);
    for (long long k = 0; k < cw; ++k) {
      for (long long j = j0; j < sw; ++j) line[j - j0] = tile[j][k];
      row(line, dst + k * p.s + j0, sw - j0);
    }
  }
}

#pragma GCC diagnostic pop

}  // namespace onednn
}  // namespace pz_sdk

#endif  // PZ_ONEDNN_CONVERSIONS_H_
