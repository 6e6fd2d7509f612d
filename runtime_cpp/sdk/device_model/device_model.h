// Analytic timing model of an MLU-100 class device: the simulated time the mock reports
// through CNRT notifiers, and the cost the Paleozoic optimizer plans with (exposed to Python
// through cnml_mock.h and pybind11), so both agree by construction. Pure C++; no CNML types.
// Parameters come from a DeviceProfile (device_profile.h, runtime_cpp/profiles/*.profile).
//
// Notation: F = core_flops of the layer's compute precision, B = dram_gbps *
// dram_efficiency, sync(mp) = sync_us_per_log2_core * log2(mp), cap(mp) = mp *
// onchip_bytes_per_core. Flops count a multiply-add as 2.
//
// Precision. Each layer has one (LayerWork::precision):
//   fp32: F = peak_fp16_tflops * fp32_rate * compute_efficiency / cores
//   fp16: F = peak_fp16_tflops * compute_efficiency / cores
//   int8: F = peak_int8_tops * compute_efficiency / cores (only Conv, ConvGroup and Mlp
//         compute in int8; the other layers of an int8 block are fp16)
// and its bytes are real dtype sizes: activations 4 (FLOAT32) or 2 (FLOAT16; an int8 layer
// reads and writes FLOAT16 activations, quantising on chip), weights 4 (fp32), 2 (fp16 and
// the fp16 bias of an int8 layer) or 1 (an int8 filter). So precision changes compute time,
// DRAM traffic, and (through intermediate sizes) on-chip residency and spill of fusions.
// Cast layers (fp16 <-> fp32) are element-wise data movement: one op per element, reading
// the input's dtype and writing the output's, row-local.
//
// A layer compiled alone (base op) on mp cores splits its output channels (or N*C planes)
// among the cores:
//   t = launch + sync(mp) + max(flops / (mp * F * eff), (in + out + weights) / B)
//   eff = extent / (mp * ceil(extent / mp))           (cores idle when work divides poorly)
//
// A fusion op (a block of layers fused, one launch) tiles the block spatially: each core
// owns ceil(H / mp) output rows of every row-local layer (conv, pool, element-wise, LRN,
// channel concat on NCHW) and runs the chain on its tile, keeping its rows on chip. Layers
// in a block run one after another; each overlaps its compute with its own DRAM traffic:
//   t = launch + sync(mp) * (1 + exchanges) + sum over layers l of max(c_l, d_l / B)
// Compute c_l. Row-local layer with H rows out:
//   c_l = flops_l * min(H, ceil(H / mp) + g_l) / H / F          (the slowest core's rows)
// where g_l is the halo: rows of l's output a tile needs beyond its own because its
// in-block consumers have windows that overlap neighbouring tiles. Receptive fields grow
// through the chain, from the block's end backwards:
//   g_l = max over in-block row-local consumers c of
//         ceil(g_c / up_c) * stride_c + max(0, win_c - stride_c)
//   (win = dilated kernel height; element-wise consumers pass g_c through; up = output rows
//   per input row of an upsampling layer, deconv or resize, which reads win input rows per
//   output row with stride 1, so its halo shrinks by up on the way to its producer).
// Recomputing halos is what lets tiles run without talking to each other. When g_l would
// exceed halo_exchange_ratio * ceil(H / mp) (the tile's own rows; ratio 4 in the MLU-100
// profile) the tiles instead exchange l's boundary rows at a barrier: g_l = 0 and the block
// pays one more sync(mp). So a layer costs at most (1 + ratio) times its share, and small
// tiles (high mp, small H) on long large-kernel chains lose most. mp = 1: no halo.
// A view (a reshape that only inserts or drops unit axes: [N, C, L] <-> [N, C, 1, L] around
// the 1-D layers, which run as 2-D ones) keeps every element where it is in NCHW and in the
// device's NHWC alike: it costs nothing, as a base op too, takes no barrier in a block, and
// its bytes are its producer's (the producer's output leaves a block when the view's does).
// A layer that is not row-local (fully connected, softmax, global pooling, reshape,
// transpose) needs whole inputs: its producers exchange (a barrier each) and it splits its
// output channels as a base op does: c_l = flops_l / (mp * F * eff).
// DRAM d_l: block inputs l reads (each reading layer fetches them), l's output when it
// leaves the block, l's weights (fetched once and multicast to the cores working in lock
// step), and spill: intermediates (produced and consumed inside the block) stay on chip
// while the block's peak live intermediate set P (each intermediate live from its producer
// to its last consumer) fits in cap(mp); otherwise the fraction s = (P - cap) / P of every
// intermediate is written out and read back: d_l += 2 * s * out_l.
//
// Data parallelism dp (CNRT's cnrtInvokeFuncParam_t::data_parallelism, chosen per forward):
// the op runs its batch as dp groups of frames at once, each group on mp cores of its own
// (dp * mp <= cores), compiled once. The op's time is one group's: the op on 1/dp of the
// frames (flops, activation bytes and the frame part of the parallel extent divided by dp)
// with its whole weights (every group reads them), on DRAM bandwidth B / dp (the groups
// share the chip's DRAM). Each group tiles its frames on its own cores' on-chip memory, so
// spill compares 1/dp of the intermediates with cap(mp). Launch, barriers over mp cores and
// host copies are the same as at dp 1.
//
// Affinity (cnrtInvokeFuncParam_t::affinity, a mask of the cores a forward may use): an op
// pinned to part of the chip, while other ops run on the rest (a Stage of concurrent
// blocks), has the DRAM bandwidth of its cores' share of the channels: B * cores in the mask
// / all cores (the MLU100's 4 DDR channels serve 8 cores each). Compute, on-chip memory and
// barriers are its own cores'. No mask: the whole chip's bandwidth.
#ifndef PZ_SDK_DEVICE_MODEL_H_
#define PZ_SDK_DEVICE_MODEL_H_

#include <vector>

#include "device_profile.h"
#include "core/precision.h"

namespace pz_sdk {

// Work of one layer, as the model sees it.
struct LayerWork {
  double flops = 0.0;
  double input_bytes = 0.0;     // activations read (all inputs)
  double output_bytes = 0.0;    // activations written
  double weight_bytes = 0.0;    // filter, bias and other constants
  long long parallel_extent = 1;  // split across cores when not row-tiled
  long long frames = 1;         // the factor of parallel_extent that counts batch frames
  bool row_local = false;       // output rows depend on a window of input rows (NCHW, H > 1)
  int out_height = 1;           // H of the output
  int window_h = 1;             // input rows per output row (dilated kernel height)
  int stride_h = 1;
  int upsample_h = 1;           // output rows per input row (deconv, resize up)
  Precision precision = Precision::kFp32;  // picks F (see above); bytes are already sized
  bool view = false;            // a reshape of unit axes only: no work, no bytes (above)
  // Time on the host link (a host layer's copies), added to the layer's time as it does not
  // overlap with compute or DRAM traffic: bytes / (host_link_gbps).
  double host_us = 0.0;
};

// A layer in a list of layers (a block, or the run of layers a cost table covers).
struct GraphLayer {
  LayerWork work;
  // Activation inputs: index of the producing layer in the list (-1: produced outside the
  // list) and bytes. A tensor read twice by the layer appears twice.
  std::vector<std::pair<int, double>> inputs;
  // Index of the last layer in the list reading this layer's output; >= list size when the
  // output is needed after the list (graph output, read outside, or kept as a block output).
  // A block [i, j) of the list writes the output to DRAM iff last_use >= j.
  int last_use = 0;
};

// Where a fused block's time goes (for reports and tests).
struct BlockBreakdown {
  double total_us = 0.0;
  double launch_sync_us = 0.0;   // launch + barriers
  double layers_us = 0.0;        // sum of per-layer max(compute, dram)
  double compute_us = 0.0;       // sum of c_l
  double halo_us = 0.0;          // part of compute_us spent on recomputed halo rows
  double dram_us = 0.0;          // sum of d_l / B
  double spill_bytes = 0.0;      // intermediate bytes written out and read back (each way)
  double peak_live_bytes = 0.0;
  int exchanges = 0;
};

// Fraction of mp cores doing useful work when `extent` items are dealt out evenly.
double parallelEfficiency(long long extent, int mp);

// Simulated device microseconds of one layer compiled alone for mp cores.
double baseOpTimeUs(const LayerWork& layer, int mp, const DeviceProfile& profile);

// Simulated device microseconds of layers[first, last) fused into one op on mp cores.
double fusedBlockTimeUs(const std::vector<GraphLayer>& layers, int first, int last, int mp,
                        const DeviceProfile& profile, BlockBreakdown* breakdown = nullptr);

// One group of frames of a data-parallel op (above): the work of each layer on 1/dp of the
// frames, and the profile whose DRAM bandwidth is the group's share. dp 1: unchanged.
LayerWork frameGroupWork(const LayerWork& layer, int dp);
std::vector<GraphLayer> frameGroupGraph(std::vector<GraphLayer> layers, int dp);

// How a forward runs: groups of frames (data parallelism), and the share of the DRAM its
// affinity's cores have (1: the whole chip's).
struct Launch {
  int dp = 1;
  double dram_share = 1.0;
};
// The profile one group of frames of a forward sees: the DRAM bandwidth of its share, split
// among the groups.
DeviceProfile launchProfile(const DeviceProfile& profile, const Launch& launch);

// A session I/O tensor of `elements` values moved between its host form (host_bytes per
// value, the twin's dtype) and its device form (device_bytes) across the host link, with the
// conversion on one side (CNML's data-preprocess strategy):
//   on the host (CPU_PRIORITY):   host = elements * (host_bytes + device_bytes) / host_convert
//                                        + elements * device_bytes / host_link,  device = 0
//   on the device (MLU_PRIORITY): host = elements * host_bytes / host_link,
//                                 device = max(elements / (mp * F16), elements * host_bytes / B)
// The device side is the cast the fusion op runs at its edge, as the fusion model prices a
// fused row-local layer: its DRAM side is the host-form bytes (the device form stays on chip
// for the block's layers, or comes from them). Equal dtypes: nothing to convert, both sides
// price the copy alone.
struct IoConversion {
  double host_us = 0.0;    // host thread: conversion (if there) and the copy over the link
  double device_us = 0.0;  // added to the fusion op's device time
  double total() const { return host_us + device_us; }
};
IoConversion ioConversionUs(double elements, int host_bytes, int device_bytes, bool on_device,
                            int mp, const DeviceProfile& profile);

// table[(i * (n + 1) + j) * mps.size() + k] = time of layers[i, j) on mps[k] cores: fused
// when j > i + 1, the base op time when j == i + 1, +inf when j <= i. Computed incrementally;
// equals fusedBlockTimeUs / baseOpTimeUs entry by entry.
std::vector<double> costTable(const std::vector<GraphLayer>& layers, const std::vector<int>& mps,
                              const DeviceProfile& profile);

}  // namespace pz_sdk

#endif  // PZ_SDK_DEVICE_MODEL_H_
