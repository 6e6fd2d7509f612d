// Register-tiled SGEMM written with GCC vector extensions so -march=native picks the ISA
// (AVX-512 zmm or AVX2 ymm) without intrinsics. Work is split into (M block, N block) tiles
// scheduled dynamically across OpenMP threads, so both tall (many output channels) and wide
// (large feature map) problems keep every thread busy.
#include "kernels_gemm.h"

#include <algorithm>
#include <cstring>

namespace pz_sdk {
namespace gemm {
namespace {

typedef float vfloat __attribute__((vector_size(kVec * sizeof(float))));

constexpr int kMB = kMR * 12;   // rows per task
constexpr int kNB = kNR * 8;    // columns per task

inline vfloat load(const float* p) {
  vfloat v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store(float* p, vfloat v) { std::memcpy(p, &v, sizeof v); }

// One kMR x kNR tile of C over kc steps of K. `first` overwrites C instead of adding to it;
// `last` then adds the bias: once, to the whole sum, so a bias far larger than the
// products does not absorb the low bits of every later block's sum.
void microKernel(int kc, const float* __restrict a, const float* __restrict b,
                 float* __restrict c, int ldc, int mr, int nr, bool first, bool last,
                 const float* bias_row, const float* bias_col) {
  vfloat acc[kMR][2];
#pragma GCC unroll 16
  for (int i = 0; i < kMR; ++i) acc[i][0] = acc[i][1] = vfloat{};
  for (int k = 0; k < kc; ++k) {
    vfloat b0 = load(b), b1 = load(b + kVec);
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      acc[i][0] += a[i] * b0;
      acc[i][1] += a[i] * b1;
    }
    a += kMR;
    b += kNR;
  }
  if (mr == kMR && nr == kNR) {
#pragma GCC unroll 16
    for (int i = 0; i < kMR; ++i) {
      float* row = c + static_cast<std::size_t>(i) * ldc;
      vfloat c0 = acc[i][0], c1 = acc[i][1];
      if (!first) {
        c0 += load(row);
        c1 += load(row + kVec);
      }
      if (last && bias_row) {
        c0 += bias_row[i];
        c1 += bias_row[i];
      }
      if (last && bias_col) {
        c0 += load(bias_col);
        c1 += load(bias_col + kVec);
      }
      store(row, c0);
      store(row + kVec, c1);
    }
    return;
  }
  alignas(64) float tile[kMR * kNR];
  for (int i = 0; i < kMR; ++i) {
    store(tile + i * kNR, acc[i][0]);
    store(tile + i * kNR + kVec, acc[i][1]);
  }
  for (int i = 0; i < mr; ++i) {
    float* row = c + static_cast<std::size_t>(i) * ldc;
    for (int j = 0; j < nr; ++j) {
      float v = first ? tile[i * kNR + j] : row[j] + tile[i * kNR + j];
      if (last && bias_row) v += bias_row[i];
      if (last && bias_col) v += bias_col[j];
      row[j] = v;
    }
  }
}

}  // namespace

void packA(const float* A, int lda, int M, int K, float* out) {
  for (int p0 = 0; p0 < M; p0 += kMR) {
    int rows = std::min(kMR, M - p0);
    float* panel = out + static_cast<std::size_t>(p0) * K;
    for (int k = 0; k < K; ++k) {
      for (int r = 0; r < rows; ++r) panel[k * kMR + r] = A[static_cast<std::size_t>(p0 + r) * lda + k];
      for (int r = rows; r < kMR; ++r) panel[k * kMR + r] = 0.0f;
    }
  }
}

void packB(const float* B, int ldb, int K, int N, float* out, int threads) {
  int panels = (N + kNR - 1) / kNR;
#pragma omp parallel for collapse(2) schedule(static) num_threads(threads)
  for (int p = 0; p < panels; ++p) {
    for (int k = 0; k < K; ++k) {
      int n0 = p * kNR, cols = std::min(kNR, N - n0);
      float* dst = out + static_cast<std::size_t>(p) * K * kNR + static_cast<std::size_t>(k) * kNR;
      const float* src = B + static_cast<std::size_t>(k) * ldb + n0;
      std::memcpy(dst, src, cols * sizeof(float));
      for (int j = cols; j < kNR; ++j) dst[j] = 0.0f;
    }
  }
}

void packBTransposed(const float* Bt, int ldbt, int K, int N, float* out, int threads) {
  int panels = (N + kNR - 1) / kNR;
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int p = 0; p < panels; ++p) {
    int n0 = p * kNR, cols = std::min(kNR, N - n0);
    float* panel = out + static_cast<std::size_t>(p) * K * kNR;
    for (int k = 0; k < K; ++k) {
      for (int j = 0; j < cols; ++j) panel[k * kNR + j] = Bt[static_cast<std::size_t>(n0 + j) * ldbt + k];
      for (int j = cols; j < kNR; ++j) panel[k * kNR + j] = 0.0f;
    }
  }
}

void gemmBlock(int M, int nb, int kc, int pc, int K, const float* Ap, const float* Bblock,
               float* C, int ldc, const float* bias_row) {
  const bool first = pc == 0, last = pc + kc == K;
  for (int j0 = 0; j0 < nb; j0 += kNR) {
    const float* bpanel = Bblock + static_cast<std::size_t>(j0) * kc;
    int nr = std::min(kNR, nb - j0);
    for (int m0 = 0; m0 < M; m0 += kMR) {
      const float* apanel = Ap + static_cast<std::size_t>(m0) * K + static_cast<std::size_t>(pc) * kMR;
      microKernel(kc, apanel, bpanel, C + static_cast<std::size_t>(m0) * ldc + j0, ldc,
                  std::min(kMR, M - m0), nr, first, last, bias_row ? bias_row + m0 : nullptr,
                  nullptr);
    }
  }
}

void sgemmPacked(int M, int N, int K, const float* Ap, const float* Bp, float* C, int ldc,
                 const float* bias_row, const float* bias_col, int threads) {
  if (M <= 0 || N <= 0) return;
  if (K == 0) {  // degenerate: C is just the bias
    for (int m = 0; m < M; ++m)
      for (int n = 0; n < N; ++n)
        C[static_cast<std::size_t>(m) * ldc + n] =
            (bias_row ? bias_row[m] : 0.0f) + (bias_col ? bias_col[n] : 0.0f);
    return;
  }
  int mblocks = (M + kMB - 1) / kMB, nblocks = (N + kNB - 1) / kNB;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) num_threads(threads)
  for (int mb = 0; mb < mblocks; ++mb) {
    for (int nb = 0; nb < nblocks; ++nb) {
      int m_end = std::min(M, (mb + 1) * kMB), n_end = std::min(N, (nb + 1) * kNB);
      for (int pc = 0; pc < K; pc += kKC) {
        int kc = std::min(kKC, K - pc);
        for (int n0 = nb * kNB; n0 < n_end; n0 += kNR) {
          const float* bpanel = Bp + static_cast<std::size_t>(n0) * K + static_cast<std::size_t>(pc) * kNR;
          int nr = std::min(kNR, n_end - n0);
          for (int m0 = mb * kMB; m0 < m_end; m0 += kMR) {
            const float* apanel = Ap + static_cast<std::size_t>(m0) * K + static_cast<std::size_t>(pc) * kMR;
            int mr = std::min(kMR, m_end - m0);
            microKernel(kc, apanel, bpanel, C + static_cast<std::size_t>(m0) * ldc + n0, ldc, mr,
                        nr, pc == 0, pc + kc == K, bias_row ? bias_row + m0 : nullptr,
                        bias_col ? bias_col + n0 : nullptr);
          }
        }
      }
    }
  }
}

}  // namespace gemm
}  // namespace pz_sdk
