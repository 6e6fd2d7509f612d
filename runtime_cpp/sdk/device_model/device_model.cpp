#include "device_model.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <system_error>
#include <thread>
#include <vector>

namespace pz_sdk {
namespace {

// Below this many layers a cost table is quick on one thread (see costTable).
constexpr int kParallelTableLayers = 64;
constexpr unsigned kTableThreads = 8;

int clampMp(int mp, const DeviceProfile& p) { return std::max(1, std::min(mp, p.cores)); }

double syncUs(int mp, const DeviceProfile& p) {
  return mp > 1 ? p.sync_us_per_log2_core * std::log2(static_cast<double>(mp)) : 0.0;
}

double flopsPerUs(const DeviceProfile& p, Precision precision) {
  return p.coreFlops(precision) * 1e-6;
}

bool tiled(const LayerWork& w) { return w.row_local && w.out_height > 1; }

int ownRows(int height, int mp) { return (height + mp - 1) / mp; }

// Compute time of a layer split over channels (a base op, or a non-row-local layer).
double channelComputeUs(const LayerWork& w, int mp, const DeviceProfile& p) {
  return w.flops /
         (mp * flopsPerUs(p, w.precision) * parallelEfficiency(w.parallel_extent, mp));
}

// Compute time of a layer inside a fusion op, given its halo; adds the halo part to *halo.
double fusedComputeUs(const LayerWork& w, int mp, int g, const DeviceProfile& p, double* halo) {
  // A host layer's link time counts as its compute (it moves no DRAM bytes), so a list
  // that holds one is priced with it; plans never fuse host layers.
  if (!tiled(w)) return channelComputeUs(w, mp, p) + w.host_us;
  const int h = w.out_height;
  const int own = ownRows(h, mp);
  const int rows = std::min(h, own + g);
  const double per_row = w.flops / h / flopsPerUs(p, w.precision);
  if (halo) *halo += per_row * (rows - own);
  return per_row * rows;
}

// Consumers of each layer within the list, ascending.
std::vector<std::vector<int>> consumersOf(const std::vector<GraphLayer>& layers) {
  std::vector<std::vector<int>> users(layers.size());
  for (std::size_t c = 0; c < layers.size(); ++c)
    for (const auto& in : layers[c].inputs)
      if (in.first >= 0 && (users[in.first].empty() || users[in.first].back() != (int)c))
        users[in.first].push_back(static_cast<int>(c));
  return users;
}

// Halo rows g[l] and exchanges ex[l] for l in [first, last) of a block ending at `last`.
// Both depend only on the layers' consumers before `last`, not on where the block starts.
void haloPass(const std::vector<GraphLayer>& layers, const std::vector<std::vector<int>>& users,
              int first, int last, int mp, double ratio, int* g, int* ex) {
  // A view has nothing to complete: a barrier its readers need falls on its producer.
  std::vector<char> wants_barrier(layers.size(), 0);
  for (int l = last - 1; l >= first; --l) {
    g[l] = 0;
    ex[l] = 0;
    const LayerWork& w = layers[l].work;
    bool whole = false, inside = false;
    int demand = 0;
    for (int c : users[l]) {
      if (c >= last) break;
      const LayerWork& cw = layers[c].work;
      if (cw.view) {
        inside = inside || wants_barrier[c];
        whole = whole || wants_barrier[c];
        continue;
      }
      inside = true;
      if (tiled(w) && tiled(cw)) {
        const int up = std::max(1, cw.upsample_h);
        demand = std::max(demand, (g[c] + up - 1) / up * cw.stride_h +
                                      std::max(0, cw.window_h - cw.stride_h));
      } else {
        whole = true;
      }
    }
    if (!inside) continue;
    if (w.view) {
      wants_barrier[l] = 1;
    } else if (!tiled(w) || whole || (mp > 1 && demand > ratio * ownRows(w.out_height, mp))) {
      ex[l] = 1;  // l's output is completed at a barrier before its consumers read it
    } else if (mp > 1) {
      g[l] = demand;
    }
  }
}

int lastUse(const GraphLayer& layer, int index) { return std::max(layer.last_use, index); }

}  // namespace

double parallelEfficiency(long long extent, int mp) {
  if (mp <= 1) return 1.0;
  if (extent < 1) extent = 1;
  long long per_core = (extent + mp - 1) / mp;
  return static_cast<double>(extent) / (static_cast<double>(mp) * per_core);
}

LayerWork frameGroupWork(const LayerWork& layer, int dp) {
  if (dp <= 1) return layer;
  LayerWork w = layer;
  w.flops /= dp;
  w.input_bytes /= dp;
  w.output_bytes /= dp;
  if (w.frames % dp == 0) {
    w.parallel_extent /= dp;
    w.frames /= dp;
  }
  return w;
}

std::vector<GraphLayer> frameGroupGraph(std::vector<GraphLayer> layers, int dp) {
  if (dp <= 1) return layers;
  for (GraphLayer& l : layers) {
    l.work = frameGroupWork(l.work, dp);
    for (auto& in : l.inputs) in.second /= dp;
  }
  return layers;
}

DeviceProfile launchProfile(const DeviceProfile& profile, const Launch& launch) {
  DeviceProfile group = profile;
  group.dram_gbps *= launch.dram_share / std::max(1, launch.dp);
  return group;
}

double baseOpTimeUs(const LayerWork& layer, int mp, const DeviceProfile& profile) {
  if (layer.view) return 0.0;
  mp = clampMp(mp, profile);
  double compute = channelComputeUs(layer, mp, profile);
  double bytes = layer.input_bytes + layer.output_bytes + layer.weight_bytes;
  return profile.launch_us + syncUs(mp, profile) + layer.host_us +
         std::max(compute, bytes / profile.dramBytesPerUs());
}

double fusedBlockTimeUs(const std::vector<GraphLayer>& layers, int first, int last, int mp,
                        const DeviceProfile& profile, BlockBreakdown* breakdown) {
  mp = clampMp(mp, profile);
  const int n = static_cast<int>(layers.size());
  first = std::max(0, first);
  last = std::min(n, last);
  BlockBreakdown b;
  if (first >= last) return 0.0;
  const auto users = consumersOf(layers);
  std::vector<int> g(n), ex(n);
  haloPass(layers, users, first, last, mp, profile.halo_exchange_ratio, g.data(), ex.data());
  // Peak live intermediate bytes over the block's steps.
  std::vector<double> delta(last - first + 1, 0.0);
  for (int l = first; l < last; ++l) {
    int u = lastUse(layers[l], l);
    if (u >= last) continue;
    delta[l - first] += layers[l].work.output_bytes;
    delta[u - first + 1] -= layers[l].work.output_bytes;
  }
  double live = 0.0;
  for (int s = 0; s < last - first; ++s) {
    live += delta[s];
    b.peak_live_bytes = std::max(b.peak_live_bytes, live);
  }
  const double cap = mp * profile.onchip_bytes_per_core;
  const double spill =
      b.peak_live_bytes > cap ? (b.peak_live_bytes - cap) / b.peak_live_bytes : 0.0;
  const double bw = profile.dramBytesPerUs();
  for (int l = first; l < last; ++l) {
    const GraphLayer& layer = layers[l];
    double c = fusedComputeUs(layer.work, mp, g[l], profile, &b.halo_us);
    double bytes = layer.work.weight_bytes;
    for (const auto& in : layer.inputs)
      if (in.first < first) bytes += in.second;
    if (lastUse(layer, l) >= last) {
      bytes += layer.work.output_bytes;
    } else {
      bytes += 2.0 * spill * layer.work.output_bytes;
      b.spill_bytes += spill * layer.work.output_bytes;
    }
    const double d = bytes / bw;
    b.compute_us += c;
    b.dram_us += d;
    b.layers_us += std::max(c, d);
    b.exchanges += ex[l];
  }
  b.launch_sync_us = profile.launch_us + syncUs(mp, profile) * (1 + b.exchanges);
  b.total_us = b.launch_sync_us + b.layers_us;
  if (breakdown) *breakdown = b;
  return b.total_us;
}

std::vector<double> costTable(const std::vector<GraphLayer>& layers, const std::vector<int>& mps,
                              const DeviceProfile& profile) {
  const int n = static_cast<int>(layers.size());
  const int K = static_cast<int>(mps.size());
  std::vector<double> table(static_cast<std::size_t>(n) * (n + 1) * K,
                            std::numeric_limits<double>::infinity());
  if (n == 0 || K == 0) return table;
  auto at = [&](int i, int j, int k) -> double& {
    return table[(static_cast<std::size_t>(i) * (n + 1) + j) * K + k];
  };
  std::vector<int> mp(K);
  for (int k = 0; k < K; ++k) mp[k] = clampMp(mps[k], profile);
  for (int i = 0; i < n; ++i)
    for (int k = 0; k < K; ++k) at(i, i + 1, k) = baseOpTimeUs(layers[i].work, mp[k], profile);

  // Peak live intermediate bytes of every block [i, j), incrementally in j for each i.
  std::vector<std::vector<int>> ending(n);  // layers whose output is last read by layer u
  for (int l = 0; l < n; ++l) {
    int u = lastUse(layers[l], l);
    if (u < n) ending[u].push_back(l);
  }
  std::vector<double> peak(static_cast<std::size_t>(n) * (n + 1), 0.0);
  std::vector<double> live(n);
  for (int i = 0; i < n; ++i) {
    std::fill(live.begin(), live.end(), 0.0);
    double best = 0.0;
    for (int j = i + 1; j <= n; ++j) {
      for (int l : ending[j - 1]) {
        if (l < i) continue;
        const double bytes = layers[l].work.output_bytes;
        for (int s = l; s < j; ++s) {
          live[s] += bytes;
          best = std::max(best, live[s]);
        }
      }
      peak[static_cast<std::size_t>(i) * (n + 1) + j] = best;
    }
  }

  const auto users = consumersOf(layers);
  const double bw = profile.dramBytesPerUs();
  // The blocks ending at layer j, on every MP; columns share nothing they write.
  struct Scratch {
    std::vector<int> g, ex;
    std::vector<double> compute;  // [k][l]
    std::vector<int> ex_suffix;   // [k][l]: sum ex[l..j)
    std::vector<double> fixed_bytes, out_bytes;
    std::vector<char> leaves;
  };
  auto column = [&](int j, Scratch& s) {
    for (int k = 0; k < K; ++k) {
      haloPass(layers, users, 0, j, mp[k], profile.halo_exchange_ratio, s.g.data(),
               s.ex.data());
      double* c = &s.compute[static_cast<std::size_t>(k) * n];
      int* sfx = &s.ex_suffix[static_cast<std::size_t>(k) * (n + 1)];
      sfx[j] = 0;
      for (int l = j - 1; l >= 0; --l) {
        c[l] = fusedComputeUs(layers[l].work, mp[k], s.g[l], profile, nullptr);
        sfx[l] = sfx[l + 1] + s.ex[l];
      }
    }
    for (int l = 0; l < j; ++l) {
      s.leaves[l] = lastUse(layers[l], l) >= j;
      s.out_bytes[l] = layers[l].work.output_bytes;
    }
    for (int i = 0; i + 2 <= j; ++i) {
      // DRAM bytes of each layer apart from spill (block inputs, outputs, weights).
      for (int l = i; l < j; ++l) {
        double bytes = layers[l].work.weight_bytes;
        for (const auto& in : layers[l].inputs)
          if (in.first < i) bytes += in.second;
        if (s.leaves[l]) bytes += s.out_bytes[l];
        s.fixed_bytes[l] = bytes;
      }
      const double p = peak[static_cast<std::size_t>(i) * (n + 1) + j];
      for (int k = 0; k < K; ++k) {
        const double cap = mp[k] * profile.onchip_bytes_per_core;
        const double spill = p > cap ? (p - cap) / p : 0.0;
        const double* c = &s.compute[static_cast<std::size_t>(k) * n];
        double sum = 0.0;
        if (spill > 0.0) {
          for (int l = i; l < j; ++l) {
            double bytes = s.fixed_bytes[l];
            if (!s.leaves[l]) bytes += 2.0 * spill * s.out_bytes[l];
            sum += std::max(c[l], bytes / bw);
          }
        } else {
          for (int l = i; l < j; ++l) sum += std::max(c[l], s.fixed_bytes[l] / bw);
        }
        const int exchanges = s.ex_suffix[static_cast<std::size_t>(k) * (n + 1) + i];
        at(i, j, k) = profile.launch_us + syncUs(mp[k], profile) * (1 + exchanges) + sum;
      }
    }
  };
  // Columns cost O(j^2) each: a DenseNet-121's table took 0.9 s on one core, in the
  // serial part of every search, so they are spread over the host's cores, interleaved so
  // that each thread gets long and short ones. Every cell is computed as on one thread.
  const int threads = n < kParallelTableLayers
                          ? 1
                          : static_cast<int>(std::clamp(std::thread::hardware_concurrency(),
                                                        1u, kTableThreads));
  std::vector<std::exception_ptr> failed(threads);
  auto run = [&](int t) {
    try {
      Scratch s{std::vector<int>(n), std::vector<int>(n),
                std::vector<double>(static_cast<std::size_t>(K) * n),
                std::vector<int>(static_cast<std::size_t>(K) * (n + 1)),
                std::vector<double>(n), std::vector<double>(n), std::vector<char>(n)};
      for (int j = n - t; j >= 2; j -= threads) column(j, s);
    } catch (...) {
      failed[t] = std::current_exception();
    }
  };
  {
    std::vector<std::thread> pool;
    int t = 1;
    try {
      for (; t < threads; ++t) pool.emplace_back(run, t);
    } catch (const std::system_error&) {  // no thread to be had: this one takes the rest
      for (; t < threads; ++t) run(t);
    }
    run(0);
    for (std::thread& thread : pool) thread.join();
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  return table;
}

IoConversion ioConversionUs(double elements, int host_bytes, int device_bytes, bool on_device,
                            int mp, const DeviceProfile& profile) {
  IoConversion cost;
  if (host_bytes == device_bytes) {
    cost.host_us = elements * host_bytes / profile.hostLinkBytesPerUs();
    return cost;
  }
  if (on_device) {
    cost.host_us = elements * host_bytes / profile.hostLinkBytesPerUs();
    cost.device_us = std::max(elements / (mp * profile.coreFlops(Precision::kFp16)) * 1e6,
                              elements * host_bytes / profile.dramBytesPerUs());
  } else {
    cost.host_us = elements * (host_bytes + device_bytes) / profile.hostConvertBytesPerUs() +
                   elements * device_bytes / profile.hostLinkBytesPerUs();
  }
  return cost;
}

}  // namespace pz_sdk
