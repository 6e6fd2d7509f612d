# Paleozoic device profile: Cambricon MLU-100 (balanced mode).
#
# Read by the mock SDK's device model (runtime_cpp/sdk/device_model/device_profile.cpp),
# which gives the simulated device time the mock reports and the cost table the optimizer
# plans with.
# Format: one `key = value` per line, numbers only; `#` starts a comment. Every key below is
# required; an unknown key, a bad number or a missing key is an error naming the line.
# The compiled-in defaults (pz_sdk::DeviceProfile) equal this file; a test checks it.
#
# Published figures are cited: [W] WikiChip, en.wikichip.org/wiki/cambricon/mlu/mlu100;
# [SZU] Li & Jiang, "Performance analysis of Cambricon MLU100", Bench 2019 (LNCS 12093).
# Figures the public record lacks are marked ASSUMPTION, with the reasoning.
# The model's formulas are in runtime_cpp/sdk/device_model/device_model.h.

# Cores: 4 channels x 8 cores [SZU 2.1]; MP (cores per block) is 1..cores.
cores = 32

# Clock in GHz: 1.0 in balanced mode, 1.3 in high-performance mode [W]. Documentation only:
# the peak figures below are already at this clock.
clock_ghz = 1.0

# Peak throughput of the whole chip at clock_ghz: 64 TFLOPS fp16, 128 TOPS int8 [W].
peak_fp16_tflops = 64
peak_int8_tops = 128

# fp32 throughput relative to fp16. ASSUMPTION: no published fp32 figure; half rate is the
# usual ratio for a fp16 MAC array that computes fp32 in two passes. The mock computes in
# fp32, so per-core fp32 FLOP/s = peak_fp16_tflops * fp32_rate / cores = 1 TFLOP/s.
fp32_rate = 0.5

# Sustained fraction of peak a core reaches on dense work (conv / matrix). ASSUMPTION: the
# public record has no utilisation figure; 0.8 is typical of well-tiled MAC arrays.
compute_efficiency = 0.8

# DRAM: DDR4-3200, 4 channels x 25.6 GB/s = 102.4 GB/s, shared by all cores [W, SZU].
dram_gbps = 102.4

# Sustained fraction of DRAM peak. ASSUMPTION: no public measurement; 0.8 is typical of DDR4
# streaming with a few concurrent access streams.
dram_efficiency = 0.8

# DDR channels: 4, each serving 8 of the cores [SZU 2.1]. A forward at MP 1 from a host
# thread placed on a channel (cnrtSetCurrentChannel) reads and writes that channel only: its
# DRAM bandwidth is dram_gbps / dram_channels.
dram_channels = 4

# Device memory (DDR) in bytes: the MLU-100 card has 8 GB [W]. A session's weights and its
# activation arena must fit (paleozoic compile refuses a plan that does not; the mock's
# cnrtMalloc refuses past it). An edge part's profile sets its own, smaller size.
dram_bytes = 8589934592

# Fixed cost of launching one compiled op (a base op or a fusion op) on the device, in us.
# ASSUMPTION: not published; 10 us is the order of a kernel launch through a driver queue.
launch_us = 10

# Barrier among the MP cores of a block, in us per log2(mp) (tree barrier over the NoC).
# Paid once per block and once per in-block exchange. ASSUMPTION: not published.
sync_us_per_log2_core = 0.5

# On-chip memory per core for activations (NRAM/SRAM), in bytes. ASSUMPTION: Cambricon does
# not publish the MLU-100's per-core buffer size; 512 KiB (16 MiB over 32 cores) is the
# order of its DianNao-family predecessors scaled to 16 nm. Fused intermediates stay on
# chip while the block's peak live set fits in mp * onchip_bytes_per_core.
onchip_bytes_per_core = 524288

# Halo policy of the SDK's fusion op: a fused block's tiles recompute the rows their
# neighbours own (the halo, growing with the receptive field back through the chain) until
# the halo exceeds halo_exchange_ratio times the tile's own rows; then the tiles exchange
# that layer's boundary rows at a barrier instead (one more sync). ASSUMPTION: the SDK's
# tiling policy is not documented.
halo_exchange_ratio = 4

# Host <-> device copies (cnrtMemcpy) over PCIe 3.0 x16, in GB/s: 15.75 GB/s raw; 12 is the
# usual sustained figure of DMA transfers of a few MB. ASSUMPTION: the MLU-100 is a PCIe 3.0
# x16 card [W]; its measured copy rate is not published. Prices host layers' transfers.
host_link_gbps = 12

# Sparse mode (MLU100's CNML_Sparse on a convolution or fully connected op): the op skips
# the multiply-adds of its filter's zero pairs (output channels 2i and 2i+1, both zero at one
# position, as Cambricon Caffe prunes) at sparse_skip_efficiency, and does not read their
# bytes, while the filter carries an index of sparse_index_bits per pair. The efficiency is
# fitted (benchmarks/sparse_fit.py) to the one published MLU100 sweep, DenseNet-121 at
# sparsity 0.10 against dense: fp16 gives 0.93; int8 asks for more than 1 (the model prices
# that int8 network as less compute-bound than the chip ran it), so 0.93 stands. ASSUMPTION:
# how the chip stores the index is not documented; a bitmap, 1 bit per pair, is the least.
sparse_skip_efficiency = 0.93
sparse_index_bits = 1

# Conversion of a session's I/O tensors between their host form (float32) and the device's
# (float16 in an fp16 or int8 block) on the host, in GB/s of bytes read plus written: the
# CPU_PRIORITY side of CNML's data-preprocess strategy (on the device the conversion is a
# cast the fusion op runs). ASSUMPTION: one host thread; numpy's float32 -> float16 cast
# runs at 3.6 GB/s on the development machine; a vectorised cast with the NCHW -> NHWC
# reorder the real device wants would be of that order.
host_convert_gbps = 4
