// Analytic timing model of an MLU-100 class device: the simulated time the mock reports
// through CNRT notifiers, and the cost the Paleozoic optimizer plans with (exposed to Python
// later), so both agree by construction. Pure C++; no CNML types.
//
// time = launch + sync(mp) + max(compute, dram_bytes / bandwidth)
//   compute = sum over layers of flops / (mp * per_core_flops * efficiency)
//   efficiency = work / (mp * ceil(work / mp)) over the layer's parallel dimension
// Fusion: DRAM traffic is the fusion I/O plus weights; intermediates stay on chip while they
// fit in mp * onchip_bytes_per_core, and the excess is written and read back. Spatial layers
// (kernel height > 1) tiled over mp cores recompute halo rows:
//   extra flops = flops * (kernel_h - 1) * (mp - 1) / out_height.
#ifndef PZ_MOCK_DEVICE_MODEL_H_
#define PZ_MOCK_DEVICE_MODEL_H_

#include <vector>

namespace pz_mock {

struct DeviceProfile {
  int cores = 32;                        // MLU-100: 4 channels x 8 cores
  double clock_ghz = 1.0;                // balanced mode
  double peak_fp16_tflops = 64.0;        // whole chip at clock_ghz
  double fp32_rate = 0.5;                // fp32 throughput relative to fp16
  double dram_gbps = 102.4;              // DDR4-3200 x 4 channels, shared by all cores
  double launch_us = 10.0;               // ASSUMPTION: fixed cost per kernel launch
  double sync_us_per_log2_core = 0.5;    // ASSUMPTION: barrier cost grows with log2(mp)
  double onchip_bytes_per_core = 512.0 * 1024.0;  // ASSUMPTION: no public NRAM/SRAM figure

  // fp32 FLOP/s of one core.
  double coreFlops() const { return peak_fp16_tflops * 1e12 * fp32_rate / cores; }
};

// Work of one layer, as the model sees it. flops counts a multiply-add as 2.
struct LayerWork {
  double flops = 0.0;
  double input_bytes = 0.0;     // activations read
  double output_bytes = 0.0;    // activations written
  double weight_bytes = 0.0;    // filter, bias and other constants
  long long parallel_extent = 1;  // size of the dimension split across cores
  int kernel_h = 1;             // > 1: spatial layer, fused tiles need halo rows
  int out_height = 1;           // rows of the output tiled across cores
};

struct FusionWork {
  std::vector<LayerWork> layers;  // in execution order
  double io_bytes = 0.0;          // fusion inputs + outputs
  double intermediate_bytes = 0.0;  // tensors produced and consumed inside the fusion
};

// Fraction of mp cores doing useful work when `extent` items are dealt out evenly.
double parallelEfficiency(long long extent, int mp);

// Simulated device microseconds of one layer compiled alone for mp cores.
double baseOpTimeUs(const LayerWork& layer, int mp, const DeviceProfile& profile = {});

// Simulated device microseconds of a fusion op compiled for mp cores (one launch).
double fusionOpTimeUs(const FusionWork& fusion, int mp, const DeviceProfile& profile = {});

}  // namespace pz_mock

#endif  // PZ_MOCK_DEVICE_MODEL_H_
