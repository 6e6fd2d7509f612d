// The device model's queries (the mock SDK's extension, cnml_mock.h) for Python: block
// estimates, their breakdown and cost tables over a session's layers, and the device profile.
#include <pybind11/stl.h>

#include <algorithm>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <cnml_mock.h>

#include "paleozoic/cost_table.h"
#include "session.h"

namespace pz_py {
namespace {

// Per-layer precision of a device-model query: None (the whole argument, or one entry) prices
// a layer as built; "fp32", "fp16", "int8" as if built in that precision (cnml_mock.h,
// cnmlMockPrecision_t).
using Precisions = std::optional<std::vector<std::optional<std::string>>>;

// pz::Precision's members (enums.h) in order, as the device model codes them.
constexpr cnmlMockPrecision_t kMockPrecisions[] = {
    CNML_MOCK_PRECISION_FP32, CNML_MOCK_PRECISION_FP16, CNML_MOCK_PRECISION_INT8};
static_assert(std::size(kMockPrecisions) == std::size(pz::EnumTable<pz::Precision>::names));

std::vector<int> precisionCodes(const Precisions& precisions, std::size_t layers) {
  std::vector<int> codes(layers, CNML_MOCK_PRECISION_AS_BUILT);
  if (!precisions) return codes;
  if (precisions->size() != layers)
    throw pz::Error("precisions: " + std::to_string(precisions->size()) + " given for " +
                    std::to_string(layers) + " layers");
  for (std::size_t i = 0; i < layers; ++i) {
    const std::optional<std::string>& p = (*precisions)[i];
    if (!p) continue;
    codes[i] = kMockPrecisions[static_cast<std::size_t>(pz::parsePrecision(*p, "precisions"))];
  }
  return codes;
}

void mockCheck(cnmlStatus_t status, const char* call) {
  if (status != CNML_STATUS_SUCCESS)
    throw pz::Error(std::string(call) + ": " + cnmlMockLastError());
}

// Default fusion outputs of `layers`, as FusionLayer derives them at compile time.
std::vector<pz::Tensor*> defaultOutputs(const std::vector<pz::Layer*>& layers) {
  return pz::fusionBoundary(layers).outputs;
}

// Every op of `layers` in running order (a recurrent layer has many) with its layer's
// precision: the device model prices ops, not layers.
void flatOps(const std::vector<pz::Layer*>& layers, const std::vector<int>& precisions,
             std::vector<cnmlBaseOp_t>* ops, std::vector<int>* op_precisions,
             std::vector<int>* first = nullptr) {
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (first != nullptr) first->push_back(static_cast<int>(ops->size()));
    for (cnmlBaseOp_t op : layers[i]->ops()) {
      ops->push_back(op);
      op_precisions->push_back(precisions.at(i));
    }
  }
  if (first != nullptr) first->push_back(static_cast<int>(ops->size()));
}

// A forward's `extra` for the estimates: dp groups of frames, on `cores` cores of the
// chip (an affinity mask of the lowest ones; 0: the whole chip, no mask).
struct Launch {
  int dp = 1;
  unsigned int affinity = 0;
  cnrtInvokeFuncParam_t param{&dp, nullptr, CNRT_PARAM_END};
  Launch(int data_parallelism, int cores)
      : dp(data_parallelism), affinity(cores >= 32 ? ~0u : (1u << cores) - 1u) {
    if (cores > 0) param.affinity = &affinity;
  }
  Launch(const Launch&) = delete;
  Launch& operator=(const Launch&) = delete;
};

std::vector<double> explain(const std::vector<pz::Layer*>& layers, int mp,
                            const std::vector<pz::Tensor*>& outputs,
                            const std::vector<int>& precisions, int dp, int cores) {
  const Launch launch(dp, cores);
  std::vector<cnmlBaseOp_t> ops;
  std::vector<int> op_precisions;
  flatOps(layers, precisions, &ops, &op_precisions);
  std::vector<cnmlTensor_t> outs;
  for (pz::Tensor* t : outputs) outs.push_back(t->desc());
  std::vector<double> values(9, 0.0);
  mockCheck(cnmlMockExplainFusion_V3(ops.data(), static_cast<int>(ops.size()),
                                     op_precisions.data(), outs.data(),
                                     static_cast<int>(outs.size()), mp, &launch.param,
                                     values.data(),
                                     static_cast<int>(values.size())),
            "cnmlMockExplainFusion_V3");
  return values;
}

double estimate(const std::vector<pz::Layer*>& layers, int mp, bool fuse,
                const std::vector<pz::Tensor*>& outputs, const std::vector<int>& precisions,
                int dp, int cores) {
  if (layers.empty()) throw pz::Error("estimate_block: no layers given");
  const Launch launch(dp, cores);
  std::vector<cnmlBaseOp_t> ops;
  std::vector<int> op_precisions;
  flatOps(layers, precisions, &ops, &op_precisions);
  if (!fuse) {
    double total = 0.0;
    for (std::size_t i = 0; i < ops.size(); ++i) {
      float us = 0.0f;
      mockCheck(cnmlMockEstimateBaseOpUs_V3(ops[i], op_precisions[i], mp, &launch.param, &us),
                "cnmlMockEstimateBaseOpUs_V3");
      total += us;
    }
    return total;
  }
  std::vector<cnmlTensor_t> outs;
  for (pz::Tensor* t : outputs) outs.push_back(t->desc());
  double total = 0.0;
  mockCheck(cnmlMockExplainFusion_V3(ops.data(), static_cast<int>(ops.size()),
                                     op_precisions.data(), outs.data(),
                                     static_cast<int>(outs.size()), mp, &launch.param, &total,
                                     1),
            "cnmlMockExplainFusion_V3");
  return static_cast<float>(total);  // as cnmlMockEstimateFusionUs reports it
}

// [n, n + 1, len(mps)] table of block times over `layers` (see cnmlMockCostTable), from
// the table of their ops (pz::layerCostTable).
py::array_t<double> costTable(const std::vector<pz::Layer*>& layers,
                              const std::vector<int>& mps, const std::vector<int>& precisions,
                              int dp, int cores) {
  const Launch launch(dp, cores);
  const int n = static_cast<int>(layers.size());
  if (n == 0) throw pz::Error("cost_table: no layers given");
  if (mps.empty()) throw pz::Error("cost_table: no MP choices given");
  std::vector<cnmlBaseOp_t> ops;
  std::vector<int> op_precisions, first;
  flatOps(layers, precisions, &ops, &op_precisions, &first);
  const int m = static_cast<int>(ops.size());
  const std::vector<int> op_last_use = pz::opLastUse(layers, first);
  const std::size_t k = mps.size();
  std::vector<double> flat(static_cast<std::size_t>(m) * (m + 1) * k);
  cnmlStatus_t status;
  {
    py::gil_scoped_release release;
    status = cnmlMockCostTable_V3(ops.data(), m, op_last_use.data(), op_precisions.data(),
                                  mps.data(), static_cast<int>(k), &launch.param,
                                  flat.data());
  }
  mockCheck(status, "cnmlMockCostTable_V3");
  const std::vector<double> values = pz::layerCostTable(flat, first, k);
  py::array_t<double> table({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(n + 1),
                             static_cast<py::ssize_t>(k)});
  std::copy(values.begin(), values.end(), table.mutable_data());
  return table;
}

std::vector<pz::Tensor*> blockOutputs(const std::vector<pz::Layer*>& layers,
                                      const std::optional<std::vector<TensorRef>>& outputs) {
  if (!outputs) return defaultOutputs(layers);
  std::vector<pz::Tensor*> out;
  for (const auto& t : *outputs) out.push_back(t.tensor);
  return out;
}

}  // namespace

void bindSessionDeviceModel(py::class_<Session>& session) {
  session
      .def(
          "estimate_block",
          [](Session&, const std::vector<LayerRef>& layers, int mp, bool fuse,
             const std::optional<std::vector<TensorRef>>& outputs, const Precisions& precisions,
             int data_parallelism, int cores) {
            std::vector<pz::Layer*> ptrs = layerPtrs(layers);
            return estimate(ptrs, mp, fuse, blockOutputs(ptrs, outputs),
                            precisionCodes(precisions, ptrs.size()), data_parallelism, cores);
          },
          py::arg("layers"), py::arg("mp"), py::arg("fuse") = true,
          py::arg("outputs") = py::none(), py::arg("precisions") = py::none(),
          py::arg("data_parallelism") = 1, py::arg("cores") = 0,
          "Simulated device us of `layers` as one block on mp cores (the device model; what "
          "the block reports when compiled and run). fuse=False: the sum of the layers' "
          "base-op times. outputs default to the tensors read outside the layers, graph "
          "outputs and tensors read by nobody, as a fused block derives them. precisions: "
          "one of 'fp32', 'fp16', 'int8' or None per layer, pricing the layer as if built in "
          "that precision (None, or no list: as built). data_parallelism: the forwards run "
          "the batch as that many groups of frames, each on mp cores of its own. cores: the "
          "forwards are pinned to that many cores (an affinity mask) while other blocks run on "
          "the rest, so they have that share of the DRAM (0: the whole chip).")
      .def(
          "explain_block",
          [](Session&, const std::vector<LayerRef>& layers, int mp,
             const std::optional<std::vector<TensorRef>>& outputs, const Precisions& precisions,
             int data_parallelism, int cores) {
            std::vector<pz::Layer*> ptrs = layerPtrs(layers);
            if (ptrs.empty()) throw pz::Error("explain_block: no layers given");
            const std::vector<double> v =
                explain(ptrs, mp, blockOutputs(ptrs, outputs),
                        precisionCodes(precisions, ptrs.size()), data_parallelism, cores);
            py::dict d;
            const char* keys[] = {"total_us", "launch_sync_us", "layers_us",
                                  "compute_us", "halo_us", "dram_us",
                                  "spill_bytes", "peak_live_bytes", "exchanges"};
            for (std::size_t i = 0; i < v.size(); ++i) d[keys[i]] = v[i];
            return d;
          },
          py::arg("layers"), py::arg("mp"), py::arg("outputs") = py::none(),
          py::arg("precisions") = py::none(), py::arg("data_parallelism") = 1,
          py::arg("cores") = 0,
          "Where the fused time of estimate_block goes: launch and barriers, per-layer "
          "max(compute, dram) sum, compute (of which recomputed halo rows), DRAM, spill.")
      .def_static(
          "fusion_boundary",
          [](const std::vector<LayerRef>& layers) {
            const pz::BlockBoundary b = pz::fusionBoundary(layerPtrs(layers));
            auto names = [](const std::vector<pz::Tensor*>& ts) {
              std::vector<std::string> out;
              for (const pz::Tensor* t : ts) out.push_back(t->name());
              return out;
            };
            return py::make_tuple(names(b.inputs), names(b.outputs));
          },
          py::arg("layers"),
          "(input names, output names) of `layers` as one block, by pz::fusionBoundary: the "
          "rule a FusionLayer applies at compile time.")
      .def(
          "cost_table",
          [](Session&, const std::vector<LayerRef>& layers, const std::vector<int>& mps,
             const Precisions& precisions, int data_parallelism, int cores) {
            return costTable(layerPtrs(layers), mps, precisionCodes(precisions, layers.size()),
                             data_parallelism, cores);
          },
          py::arg("layers"), py::arg("mps"), py::arg("precisions") = py::none(),
          py::arg("data_parallelism") = 1, py::arg("cores") = 0,
          "float64 [n, n+1, len(mps)]: [i, j, k] = us of layers[i:j] on mps[k] cores, fused "
          "when j > i + 1, the single layer unfused when j == i + 1, inf elsewhere. Block "
          "outputs are relative to the whole list (plus graph outputs); equals "
          "estimate_block entry by entry. precisions, data_parallelism and cores: as "
          "estimate_block's.");
}

void bindDeviceModel(py::module_& m) {
  m.def(
      "estimate_preprocess",
      [](std::size_t elements, bool on_device, int mp) {
        double host_us = 0.0, device_us = 0.0;
        mockCheck(cnmlMockEstimatePreprocessUs(elements, CNML_DATA_FLOAT32,
                                                        CNML_DATA_FLOAT16, on_device ? 1 : 0,
                                                        mp, &host_us, &device_us),
                           "estimate_preprocess");
        return py::make_tuple(host_us, device_us);
      },
      py::arg("elements"), py::arg("on_device"), py::arg("mp"),
      "(host us, device us) of moving a float32 session input or output of `elements` "
      "values to or from a float16 block on mp cores, converted on the device (MLU "
      "priority) or the host (cnmlMockEstimatePreprocessUs).");
  m.def(
      "set_device_profile",
      [](const std::string& path) { mockCheck(cnmlMockSetDeviceProfile(path.c_str()),
                                                       "set_device_profile"); },
      py::arg("path"),
      "Loads a device profile file into the mock SDK's device model (process-wide; used by "
      "later compiles and estimates). Raises Error naming the file, line and problem.");
  m.def(
      "reset_device_profile", [] { cnmlMockResetDeviceProfile(); },
      "Restores the compiled-in profile (equal to the bundled mlu100.profile).");
  m.def(
      "device_profile",
      [] {
        py::dict d;
        const int n = cnmlMockDeviceProfileSize();
        for (int i = 0; i < n; ++i) {
          const char* key = nullptr;
          double value = 0.0;
          mockCheck(cnmlMockGetDeviceProfileItem(i, &key, &value), "device_profile");
          d[key] = value;
        }
        return d;
      },
      "The current device profile as {key: value}.");
  m.def(
      "default_profile_path",
      [m]() {
        py::object path = py::module_::import("pathlib").attr("Path");
        py::object here = path(m.attr("__file__")).attr("resolve")().attr("parent");
        return py::str(here / py::str("runtime") / py::str("share") / py::str("profiles") /
                       py::str("mlu100.profile"));
      },
      "Path of the installed MLU-100 profile (paleozoic/runtime/share/profiles).");
}

}  // namespace pz_py
