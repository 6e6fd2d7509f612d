// cnml_mock.h: the mock SDK's device-model extensions (not CNML).
#include <cnml_mock.h>

#include <algorithm>
#include <exception>
#include <set>
#include <string>

#include "executor.h"
#include "device_model/op_cost.h"

using namespace pz_sdk;

namespace {

thread_local std::string last_error;

cnmlStatus_t fail(cnmlStatus_t status, std::string message) {
  last_error = std::move(message);
  return status;
}

bool validMp(int mp) { return mp >= 1 && mp <= std::min(kMaxCoreLimit, mockProfile().cores); }

std::string mpRange() {
  return "1.." + std::to_string(std::min(kMaxCoreLimit, mockProfile().cores));
}

// A forward's `extra` as the estimates take it (cnrtInvokeFuncParam_t or NULL): the launch,
// or a message saying which rule it breaks (compile_check.h states them).
std::string launchOf(const cnrtInvokeFuncParam_t* extra, int mp, Launch* launch) {
  *launch = Launch();
  if (!extra) return "";
  if (extra->end != CNRT_PARAM_END || !extra->data_parallelism)
    return "extra: end must be CNRT_PARAM_END and data_parallelism non-null";
  const int cores = mockProfile().cores;
  launch->dp = *extra->data_parallelism;
  if (launch->dp < 1 || launch->dp * mp > cores)
    return "data parallelism must be in 1.." + std::to_string(cores / mp) + " at mp " +
           std::to_string(mp) + " (data parallelism x mp <= " + std::to_string(cores) + ")";
  if (extra->affinity) {
    const unsigned int mask = *extra->affinity;
    const int chosen = __builtin_popcount(mask);
    if (mask == 0 || (cores < 32 && (mask >> cores) != 0) || chosen < launch->dp * mp)
      return "affinity must name at least data parallelism x mp of the device's " +
             std::to_string(cores) + " cores";
    launch->dram_share = static_cast<double>(chosen) / cores;
  }
  return "";
}

// Runs f(), turning exceptions into a status and a message.
template <typename F>
cnmlStatus_t wrapped(F&& f) {
  try {
    last_error.clear();
    return f();
  } catch (const std::bad_alloc&) {
    return fail(CNML_STATUS_BADALLOC, "out of host memory");
  } catch (const std::exception& e) {
    return fail(CNML_STATUS_INVALIDPARAM, e.what());
  }
}

cnmlStatus_t overrides(const int* precisions, int op_num, std::vector<PrecisionOverride>& out) {
  out.assign(op_num, PrecisionOverride::kAsBuilt);
  if (!precisions) return CNML_STATUS_SUCCESS;
  for (int i = 0; i < op_num; ++i) {
    if (precisions[i] < CNML_MOCK_PRECISION_AS_BUILT || precisions[i] > CNML_MOCK_PRECISION_INT8)
      return fail(CNML_STATUS_INVALIDPARAM, "precision " + std::to_string(precisions[i]) +
                                                " of op " + std::to_string(i) +
                                                " is not a cnmlMockPrecision_t");
    out[i] = static_cast<PrecisionOverride>(precisions[i]);
  }
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t collect(cnmlBaseOp_t ops[], int op_num, std::vector<const OpDesc*>& out) {
  if (!ops || op_num < 1) return fail(CNML_STATUS_INVALIDPARAM, "no ops given");
  std::set<cnmlBaseOp_t> seen;
  for (int i = 0; i < op_num; ++i) {
    if (!ops[i]) return fail(CNML_STATUS_INVALIDPARAM, "null op at index " + std::to_string(i));
    if (!seen.insert(ops[i]).second)
      return fail(CNML_STATUS_INVALIDPARAM, "op at index " + std::to_string(i) + " given twice");
    out.push_back(&ops[i]->desc);
  }
  return CNML_STATUS_SUCCESS;
}

}  // namespace

extern "C" {

cnmlStatus_t cnmlMockSetDeviceProfile(const char* path) {
  if (!path) return fail(CNML_STATUS_INVALIDPARAM, "null profile path");
  return wrapped([&] {
    setCurrentProfile(parseDeviceProfile(path));
    return CNML_STATUS_SUCCESS;
  });
}

cnmlStatus_t cnmlMockResetDeviceProfile(void) {
  setCurrentProfile(DeviceProfile());
  last_error.clear();
  return CNML_STATUS_SUCCESS;
}

const char* cnmlMockLastError(void) { return last_error.c_str(); }

const char* cnmlMockOpImplementation(cnmlBaseOp_t op) {
  thread_local std::string text;
  if (op == nullptr) return nullptr;
  if (op->fused) {
    const auto& all = op->fused_implementations;
    if (!all || op->fused_index >= all->size()) return nullptr;  // fusion not compiled
    text = (*all)[op->fused_index];
  } else {
    if (!op->compiled || !op->prepared) return nullptr;
    text = implementationOf(*op->prepared);
  }
  return text.c_str();
}

cnmlStatus_t cnmlMockSetDeferredPreparation(int on) {
  setPreparationDeferred(on != 0);
  return CNML_STATUS_SUCCESS;
}

int cnmlMockDeviceProfileSize(void) { return static_cast<int>(mockProfile().items().size()); }

cnmlStatus_t cnmlMockGetDeviceProfileItem(int index, const char** key, double* value) {
  static const std::vector<std::pair<std::string, double>> keys = DeviceProfile().items();
  const auto items = mockProfile().items();
  if (index < 0 || index >= static_cast<int>(items.size()) || !key || !value)
    return fail(CNML_STATUS_INVALIDPARAM, "profile item index out of range");
  *key = keys[index].first.c_str();
  *value = items[index].second;
  return CNML_STATUS_SUCCESS;
}

cnmlStatus_t cnmlMockExplainFusion(cnmlBaseOp_t ops[], int op_num, cnmlTensor_t outputs[],
                                   int output_num, int mp, double* values, int value_num) {
  return cnmlMockExplainFusion_V2(ops, op_num, nullptr, outputs, output_num, mp, values,
                                  value_num);
}

cnmlStatus_t cnmlMockExplainFusion_V2(cnmlBaseOp_t ops[], int op_num, const int precisions[],
                                      cnmlTensor_t outputs[], int output_num, int mp,
                                      double* values, int value_num) {
  return cnmlMockExplainFusion_V3(ops, op_num, precisions, outputs, output_num, mp, nullptr,
                                  values, value_num);
}

cnmlStatus_t cnmlMockExplainFusion_V3(cnmlBaseOp_t ops[], int op_num, const int precisions[],
                                      cnmlTensor_t outputs[], int output_num, int mp,
                                      const cnrtInvokeFuncParam_t* extra, double* values,
                                      int value_num) {
  if (!values || value_num < 0) return fail(CNML_STATUS_INVALIDPARAM, "null result pointer");
  if (!validMp(mp)) return fail(CNML_STATUS_INVALIDPARAM, "mp must be in " + mpRange());
  Launch launch;
  const std::string broken = launchOf(extra, mp, &launch);
  if (!broken.empty()) return fail(CNML_STATUS_INVALIDPARAM, broken);
  if (output_num < 0 || (output_num > 0 && !outputs))
    return fail(CNML_STATUS_INVALIDPARAM, "bad output list");
  return wrapped([&] {
    std::vector<const OpDesc*> descs;
    cnmlStatus_t s = collect(ops, op_num, descs);
    if (s != CNML_STATUS_SUCCESS) return s;
    std::vector<std::uint64_t> out_ids;
    for (int i = 0; i < output_num; ++i) {
      if (!outputs[i]) return fail(CNML_STATUS_INVALIDPARAM, "null output tensor");
      out_ids.push_back(outputs[i]->impl->id);
    }
    std::vector<PrecisionOverride> as;
    s = overrides(precisions, op_num, as);
    if (s != CNML_STATUS_SUCCESS) return s;
    const std::vector<GraphLayer> graph =
        frameGroupGraph(fusionGraphOf(descs, out_ids, as), launch.dp);
    BlockBreakdown b;
    fusedBlockTimeUs(graph, 0, static_cast<int>(graph.size()), mp,
                     launchProfile(mockProfile(), launch), &b);
    const double all[] = {b.total_us,   b.launch_sync_us, b.layers_us,
                          b.compute_us, b.halo_us,        b.dram_us,
                          b.spill_bytes, b.peak_live_bytes, static_cast<double>(b.exchanges)};
    const int count = std::min(value_num, static_cast<int>(sizeof(all) / sizeof(all[0])));
    std::copy(all, all + count, values);
    return CNML_STATUS_SUCCESS;
  });
}

cnmlStatus_t cnmlMockEstimateFusionUs(cnmlBaseOp_t ops[], int op_num, cnmlTensor_t outputs[],
                                      int output_num, int mp, float* us) {
  if (!us) return fail(CNML_STATUS_INVALIDPARAM, "null result pointer");
  double total = 0.0;
  cnmlStatus_t s = cnmlMockExplainFusion(ops, op_num, outputs, output_num, mp, &total, 1);
  if (s == CNML_STATUS_SUCCESS) *us = static_cast<float>(total);
  return s;
}

cnmlStatus_t cnmlMockEstimateBaseOpUs(cnmlBaseOp_t op, int mp, float* us) {
  return cnmlMockEstimateBaseOpUs_V2(op, CNML_MOCK_PRECISION_AS_BUILT, mp, us);
}

cnmlStatus_t cnmlMockEstimateBaseOpUs_V2(cnmlBaseOp_t op, int precision, int mp, float* us) {
  return cnmlMockEstimateBaseOpUs_V3(op, precision, mp, nullptr, us);
}

cnmlStatus_t cnmlMockEstimateBaseOpUs_V3(cnmlBaseOp_t op, int precision, int mp,
                                         const cnrtInvokeFuncParam_t* extra, float* us) {
  if (!op || !us) return fail(CNML_STATUS_INVALIDPARAM, "null op or result pointer");
  if (!validMp(mp)) return fail(CNML_STATUS_INVALIDPARAM, "mp must be in " + mpRange());
  Launch launch;
  const std::string broken = launchOf(extra, mp, &launch);
  if (!broken.empty()) return fail(CNML_STATUS_INVALIDPARAM, broken);
  std::vector<PrecisionOverride> as;
  cnmlStatus_t s = overrides(&precision, 1, as);
  if (s != CNML_STATUS_SUCCESS) return s;
  return wrapped([&] {
    *us = static_cast<float>(baseOpTimeUs(frameGroupWork(layerWorkOf(op->desc, as[0]), launch.dp),
                                          mp, launchProfile(mockProfile(), launch)));
    return CNML_STATUS_SUCCESS;
  });
}

cnmlStatus_t cnmlMockCostTable(cnmlBaseOp_t ops[], int op_num, const int last_use[],
                               const int mps[], int mp_num, double* table) {
  return cnmlMockCostTable_V2(ops, op_num, last_use, nullptr, mps, mp_num, table);
}

cnmlStatus_t cnmlMockCostTable_V2(cnmlBaseOp_t ops[], int op_num, const int last_use[],
                                  const int precisions[], const int mps[], int mp_num,
                                  double* table) {
  return cnmlMockCostTable_V3(ops, op_num, last_use, precisions, mps, mp_num, nullptr, table);
}

cnmlStatus_t cnmlMockCostTable_V3(cnmlBaseOp_t ops[], int op_num, const int last_use[],
                                  const int precisions[], const int mps[], int mp_num,
                                  const cnrtInvokeFuncParam_t* extra, double* table) {
  if (!last_use || !mps || mp_num < 1 || !table)
    return fail(CNML_STATUS_INVALIDPARAM, "null argument or empty mp list");
  Launch launch;
  for (int k = 0; k < mp_num; ++k) {
    if (!validMp(mps[k]))
      return fail(CNML_STATUS_INVALIDPARAM,
                  "mp " + std::to_string(mps[k]) + " is outside " + mpRange());
    const std::string broken = launchOf(extra, mps[k], &launch);
    if (!broken.empty()) return fail(CNML_STATUS_INVALIDPARAM, broken);
  }
  return wrapped([&] {
    std::vector<const OpDesc*> descs;
    cnmlStatus_t s = collect(ops, op_num, descs);
    if (s != CNML_STATUS_SUCCESS) return s;
    std::vector<PrecisionOverride> as;
    s = overrides(precisions, op_num, as);
    if (s != CNML_STATUS_SUCCESS) return s;
    std::vector<int> uses(last_use, last_use + op_num);
    std::vector<GraphLayer> graph = frameGroupGraph(listGraphOf(descs, uses, as), launch.dp);
    std::vector<double> t = costTable(graph, std::vector<int>(mps, mps + mp_num),
                                      launchProfile(mockProfile(), launch));
    std::copy(t.begin(), t.end(), table);
    return CNML_STATUS_SUCCESS;
  });
}

}  // extern "C"
