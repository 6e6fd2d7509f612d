// Max / average pooling, one (n, c) plane per OpenMP iteration. Window cells are a product
// of a row set and a column set, so counts for the average divisor factor per axis.
#include <algorithm>
#include <limits>

#include "kernels.h"

namespace pz_sdk {
namespace {

// For output index o along one axis: input indices of the window that are inside the input,
// and how many window cells fall inside the padded extent [-pad_lo, size + pad_hi).
struct AxisWindow {
  int first, step, count;  // inside-input cells: first, first + step, ... (count of them)
  int padded_count;
};

AxisWindow axisWindow(int o, int size, int k, int stride, int dil, int pad_lo, int pad_hi) {
  AxisWindow a{0, dil, 0, 0};
  int start = o * stride - pad_lo;
  bool found = false;
  for (int i = 0; i < k; ++i) {
    int x = start + i * dil;
    if (x >= -pad_lo && x < size + pad_hi) ++a.padded_count;
    if (x >= 0 && x < size) {
      if (!found) {
        a.first = x;
        found = true;
      }
      ++a.count;
    }
  }
  return a;
}

}  // namespace

void poolForward(const OpDesc& d, const float* in, float* out, int threads) {
  const PoolParams& p = d.pool;
  const Dims& id = d.inputs[0].dims;
  const Dims& od = d.outputs[0].dims;
  const int planes = id[0] * id[1], h = id[2], w = id[3], ho = od[2], wo = od[3];
  const bool is_max = p.mode == CNML_POOL_MAX;
  std::vector<AxisWindow> rows(ho), cols(wo);
  for (int oy = 0; oy < ho; ++oy) rows[oy] = axisWindow(oy, h, p.kh, p.sh, p.dh, p.pt, p.pb);
  for (int ox = 0; ox < wo; ++ox) cols[ox] = axisWindow(ox, w, p.kw, p.sw, p.dw, p.pl, p.pr);
#pragma omp parallel for schedule(static) num_threads(threads)
  for (int pl = 0; pl < planes; ++pl) {
    const float* src = in + static_cast<std::size_t>(pl) * h * w;
    float* dst = out + static_cast<std::size_t>(pl) * ho * wo;
    for (int oy = 0; oy < ho; ++oy) {
      const AxisWindow& r = rows[oy];
      for (int ox = 0; ox < wo; ++ox) {
        const AxisWindow& c = cols[ox];
        float v;
        if (is_max) {
          // Pad cells act as -inf, so only inside cells matter.
          v = -std::numeric_limits<float>::infinity();
          for (int i = 0, y = r.first; i < r.count; ++i, y += r.step)
            for (int j = 0, x = c.first; j < c.count; ++j, x += c.step)
              v = std::max(v, src[static_cast<std::size_t>(y) * w + x]);
        } else {
          // A float running sum over a global window (56 x 56 = 3,136 cells) loses
          // several bits; a double one is exact enough that the mean rounds once.
          double sum = 0.0;
          for (int i = 0, y = r.first; i < r.count; ++i, y += r.step)
            for (int j = 0, x = c.first; j < c.count; ++j, x += c.step)
              sum += src[static_cast<std::size_t>(y) * w + x];
          int divisor = p.real ? r.count * c.count : r.padded_count * c.padded_count;
          v = divisor > 0 ? static_cast<float>(sum / divisor) : 0.0f;
        }
        dst[static_cast<std::size_t>(oy) * wo + ox] = v;
      }
    }
  }
}

}  // namespace pz_sdk
