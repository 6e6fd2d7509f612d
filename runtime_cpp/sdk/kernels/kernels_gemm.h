// Single-precision GEMM on pre-packed operands: C[M,N] = A[M,K] * B[K,N] (+ bias).
//
// Packed A: ceil(M/kMR) panels, each [K][kMR] (rows past M are zero).
// Packed B: ceil(N/kNR) panels, each [K][kNR] (columns past N are zero).
// Panels hold the full K so one packing serves every K block; conv weights are packed once at
// compile and im2col writes straight into the packed-B layout.
#ifndef PZ_SDK_KERNELS_GEMM_H_
#define PZ_SDK_KERNELS_GEMM_H_

#include <cstddef>

namespace pz_sdk {
namespace gemm {

#if defined(__AVX512F__)
constexpr int kVec = 16;  // floats per vector register
constexpr int kMR = 8;    // 8 x 2 zmm accumulators leave room for operands in 32 registers
#else
constexpr int kVec = 8;
constexpr int kMR = 6;    // 6 x 2 ymm accumulators fit the 16 AVX2 registers
#endif
constexpr int kNR = 2 * kVec;

inline int roundUp(int x, int m) { return (x + m - 1) / m * m; }
inline std::size_t packedASize(int M, int K) {
  return static_cast<std::size_t>(roundUp(M, kMR)) * K;
}
inline std::size_t packedBSize(int K, int N) {
  return static_cast<std::size_t>(roundUp(N, kNR)) * K;
}
// Offset of element (k, n) inside packed B.
inline std::size_t packedBIndex(int k, int n, int K) {
  return static_cast<std::size_t>(n / kNR) * K * kNR + static_cast<std::size_t>(k) * kNR + n % kNR;
}

// A row-major with leading dimension lda.
void packA(const float* A, int lda, int M, int K, float* out);
// B row-major [K][N] with leading dimension ldb.
void packB(const float* B, int ldb, int K, int N, float* out, int threads);
// B given transposed: B[k][n] = Bt[n * ldbt + k] (e.g. an Mlp filter [co][K]).
void packBTransposed(const float* Bt, int ldbt, int K, int N, float* out, int threads);

// K and N blocking used by callers that pack B themselves block by block (conv).
// kKC also bounds a float running sum: each output adds K / kKC block sums, each of kKC
// fused multiply-adds, so a long reduction's rounding error grows with kKC + K / kKC, not
// K (128 brings a 3x3 convolution over 512 channels to onnxruntime's error, 256 did not).
constexpr int kKC = 128;  // a B micro-panel (kKC x kNR) stays near L1
constexpr int kNC = 256;  // columns per block: a kKC x kNC B block stays in L2

// One block of a larger product: C[0:M, 0:nb] (+)= Ap[:, pc:pc+kc] * Bblock, where Bblock
// holds ceil(nb/kNR) panels of [kc][kNR]. The first block (pc == 0) overwrites C, later
// ones accumulate, and the last (pc + kc == K) adds bias_row to the finished sum.
void gemmBlock(int M, int nb, int kc, int pc, int K, const float* Ap, const float* Bblock,
               float* C, int ldc, const float* bias_row);

// C = Ap * Bp, plus bias_row[m] and/or bias_col[n] when non-null. Overwrites C.
void sgemmPacked(int M, int N, int K, const float* Ap, const float* Bp, float* C, int ldc,
                 const float* bias_row, const float* bias_col, int threads);

}  // namespace gemm
}  // namespace pz_sdk

#endif  // PZ_SDK_KERNELS_GEMM_H_
