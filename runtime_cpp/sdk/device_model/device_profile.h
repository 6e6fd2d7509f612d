// Device profile: the parameters of the analytic device model, read from a profile file
// (runtime_cpp/profiles/mlu100.profile is the bundled MLU-100 profile; its values are also
// the compiled-in defaults below, and a test keeps the two equal).
#ifndef PZ_SDK_DEVICE_PROFILE_H_
#define PZ_SDK_DEVICE_PROFILE_H_

#include <string>
#include <utility>
#include <vector>

#include "core/precision.h"

namespace pz_sdk {

struct DeviceProfile {
  int cores = 32;                        // 4 channels x 8 cores
  double clock_ghz = 1.0;                // balanced mode (documentation only)
  double peak_fp16_tflops = 64.0;        // whole chip at clock_ghz
  double peak_int8_tops = 128.0;         // whole chip at clock_ghz
  double fp32_rate = 0.5;                // ASSUMPTION: fp32 throughput relative to fp16
  double compute_efficiency = 0.8;       // ASSUMPTION: sustained fraction of peak
  double dram_gbps = 102.4;              // DDR4-3200 x 4 channels, shared by all cores
  double dram_efficiency = 0.8;          // ASSUMPTION: sustained fraction of DRAM peak
  double dram_channels = 4.0;            // DDR channels, each serving cores / dram_channels
  double dram_bytes = 8589934592.0;      // 8 GB of DDR4 on the card: weights and activations
  double launch_us = 10.0;               // ASSUMPTION: fixed cost per launched op
  double sync_us_per_log2_core = 0.5;    // ASSUMPTION: barrier cost per log2(mp)
  double onchip_bytes_per_core = 524288.0;  // ASSUMPTION: no public NRAM/SRAM figure
  double halo_exchange_ratio = 4.0;      // ASSUMPTION: fusion exchanges when halo > ratio * tile
  double host_link_gbps = 12.0;          // PCIe 3.0 x16 card: 15.75 GB/s raw, ~12 sustained
  double sparse_skip_efficiency = 0.93;  // fitted (sparse_fit.py): fraction of zero pairs' MACs skipped
  double sparse_index_bits = 1.0;        // ASSUMPTION: index bits per filter pair (a bitmap)
  double host_convert_gbps = 4.0;        // ASSUMPTION: one host thread's dtype/layout conversion

  // Sustained fp32 FLOP/s of one core.
  double coreFlops() const {
    return peak_fp16_tflops * 1e12 * fp32_rate * compute_efficiency / cores;
  }
  // Sustained FLOP/s (int8: OP/s) of one core in a precision: fp32 as coreFlops(), fp16 at
  // peak_fp16_tflops, int8 at peak_int8_tops (both times compute_efficiency).
  double coreFlops(Precision precision) const {
    switch (precision) {
      case Precision::kFp16: return peak_fp16_tflops * 1e12 * compute_efficiency / cores;
      case Precision::kInt8: return peak_int8_tops * 1e12 * compute_efficiency / cores;
      case Precision::kFp32: break;
    }
    return coreFlops();
  }
  // Sustained DRAM bytes per microsecond.
  double dramBytesPerUs() const { return dram_gbps * 1e3 * dram_efficiency; }
  // Sustained host <-> device bytes per microsecond (cnrtMemcpy).
  double hostLinkBytesPerUs() const { return host_link_gbps * 1e3; }
  // Bytes (read plus written) per microsecond the host converts an I/O tensor at.
  double hostConvertBytesPerUs() const { return host_convert_gbps * 1e3; }

  // (key, value) pairs in file order, as numbers; used by tests and the Python binding.
  std::vector<std::pair<std::string, double>> items() const;
};

// Parses a profile file. Throws std::runtime_error naming the file and line for a missing
// or unreadable file, an unknown key, a bad or out-of-range number, a key given twice, or a
// key missing from the file.
DeviceProfile parseDeviceProfile(const std::string& path);

// The process-wide profile the mock times ops with (the compiled-in defaults until set).
const DeviceProfile& currentProfile();
void setCurrentProfile(const DeviceProfile& profile);

}  // namespace pz_sdk

#endif  // PZ_SDK_DEVICE_PROFILE_H_
