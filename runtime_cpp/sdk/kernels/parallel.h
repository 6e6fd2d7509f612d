// Loops over independent work items on an op's thread count. On one thread they are plain
// loops, with no OpenMP region at all: libgomp charges even a one-thread region a futex
// call (1-2 us once the pool's other thread sleeps), and an unrolled recurrent cell is
// hundreds of such small ops per forward (a GRU of 50 steps spent most of its time there).
// Items are independent, so who computes which changes no result.
#ifndef PZ_SDK_PARALLEL_H_
#define PZ_SDK_PARALLEL_H_

#include <omp.h>

namespace pz_sdk {

// body(i) for i in [0, n), statically scheduled.
template <typename Body>
inline void parallelFor(long long n, int threads, const Body& body) {
  if (threads <= 1) {
    for (long long i = 0; i < n; ++i) body(i);
    return;
  }
#pragma omp parallel for schedule(static) num_threads(threads)
  for (long long i = 0; i < n; ++i) body(i);
}

// body(begin, end) on contiguous ranges covering [0, n), one per thread, so the body's own
// inner loop (e.g. `omp simd`) sees a whole range.
template <typename Body>
inline void parallelRanges(long long n, int threads, const Body& body) {
  if (threads <= 1) {
    body(0LL, n);
    return;
  }
#pragma omp parallel num_threads(threads)
  {
    const long long t = omp_get_thread_num(), count = omp_get_num_threads();
    body(n * t / count, n * (t + 1) / count);
  }
}

}  // namespace pz_sdk

#endif  // PZ_SDK_PARALLEL_H_
