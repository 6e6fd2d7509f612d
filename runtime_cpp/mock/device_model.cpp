#include "device_model.h"

#include <algorithm>
#include <cmath>

namespace pz_mock {
namespace {

double syncUs(int mp, const DeviceProfile& p) {
  return mp > 1 ? p.sync_us_per_log2_core * std::log2(static_cast<double>(mp)) : 0.0;
}

// Seconds -> microseconds for `flops` on mp cores with the layer's efficiency.
double computeUs(double flops, long long extent, int mp, const DeviceProfile& p) {
  double eff = parallelEfficiency(extent, mp);
  return flops / (mp * p.coreFlops() * eff) * 1e6;
}

double dramUs(double bytes, const DeviceProfile& p) { return bytes / (p.dram_gbps * 1e9) * 1e6; }

int clampMp(int mp, const DeviceProfile& p) { return std::max(1, std::min(mp, p.cores)); }

}  // namespace

double parallelEfficiency(long long extent, int mp) {
  if (mp <= 1) return 1.0;
  if (extent < 1) extent = 1;
  long long per_core = (extent + mp - 1) / mp;
  return static_cast<double>(extent) / (static_cast<double>(mp) * per_core);
}

double baseOpTimeUs(const LayerWork& layer, int mp, const DeviceProfile& profile) {
  mp = clampMp(mp, profile);
  double compute = computeUs(layer.flops, layer.parallel_extent, mp, profile);
  double bytes = layer.input_bytes + layer.output_bytes + layer.weight_bytes;
  return profile.launch_us + syncUs(mp, profile) + std::max(compute, dramUs(bytes, profile));
}

double fusionOpTimeUs(const FusionWork& fusion, int mp, const DeviceProfile& profile) {
  mp = clampMp(mp, profile);
  double compute = 0.0, weights = 0.0;
  for (const LayerWork& l : fusion.layers) {
    double flops = l.flops;
    if (l.kernel_h > 1 && mp > 1)  // halo rows recomputed by neighbouring tiles
      flops += l.flops * (l.kernel_h - 1) * (mp - 1) / std::max(1, l.out_height);
    compute += computeUs(flops, l.parallel_extent, mp, profile);
    weights += l.weight_bytes;
  }
  double capacity = mp * profile.onchip_bytes_per_core;
  double spilled = std::max(0.0, fusion.intermediate_bytes - capacity);
  double bytes = fusion.io_bytes + weights + 2.0 * spilled;  // spill = write + read back
  return profile.launch_us + syncUs(mp, profile) + std::max(compute, dramUs(bytes, profile));
}

}  // namespace pz_mock
