// paleozoic._runtime: the runtime wrapper over the mock SDK, for tests and measurement.
//
// A Session owns a Device, its input tensors, layers and blocks. Tensor, Layer and Block
// handles point into the session and hold a reference to it, so the session outlives them.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <cnml_mock.h>

#include <cmath>
#include <limits>

#include "paleozoic/layer_registry.h"
#include "paleozoic/runtime.h"
#include "paleozoic/session.h"

namespace py = pybind11;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// One Device per process while any session lives: the SDK is initialised once.
std::shared_ptr<pz::Device> sharedDevice() {
  static std::weak_ptr<pz::Device> cache;
  std::shared_ptr<pz::Device> device = cache.lock();
  if (!device) {
    device = std::make_shared<pz::Device>();
    cache = device;
  }
  return device;
}

// Per-layer precision of a device-model query: None (the whole argument, or one entry) prices
// a layer as built; "fp32", "fp16", "int8" as if built in that precision (cnml_mock.h,
// cnmlMockPrecision_t).
using Precisions = std::optional<std::vector<std::optional<std::string>>>;

std::vector<int> precisionCodes(const Precisions& precisions, std::size_t layers) {
  std::vector<int> codes(layers, CNML_MOCK_PRECISION_AS_BUILT);
  if (!precisions) return codes;
  if (precisions->size() != layers)
    throw pz::Error("precisions: " + std::to_string(precisions->size()) + " given for " +
                    std::to_string(layers) + " layers");
  for (std::size_t i = 0; i < layers; ++i) {
    const std::optional<std::string>& p = (*precisions)[i];
    if (!p) continue;
    if (*p == "fp32") codes[i] = CNML_MOCK_PRECISION_FP32;
    else if (*p == "fp16") codes[i] = CNML_MOCK_PRECISION_FP16;
    else if (*p == "int8") codes[i] = CNML_MOCK_PRECISION_INT8;
    else throw pz::Error("precisions: '" + *p + "' is not fp32, fp16, int8 or None");
  }
  return codes;
}

class Session {
 public:
  Session() : device_(sharedDevice()) {}
  ~Session() {
    stages_.clear();  // their threads run blocks
    blocks_.clear();
    while (!layers_.empty()) layers_.pop_back();  // consumers before producers
    inputs_.clear();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  pz::Tensor& input(const std::string& name, const pz::Shape& shape,
                    pz::ElementType type = pz::ElementType::kFloat) {
    inputs_.push_back(std::make_unique<pz::Tensor>(name, shape, type));
    return *inputs_.back();
  }

  pz::Layer& adopt(std::unique_ptr<pz::Layer> layer) {
    layers_.push_back(std::move(layer));
    return *layers_.back();
  }

  // Compiles the block added last; a block that fails to compile is not kept.
  void compileLast() {
    try {
      blocks_.back()->compile();
    } catch (...) {
      blocks_.pop_back();
      throw;
    }
  }

  // Adds a block without compiling it (Block.compile() later).
  pz::Block& addBlock(const std::string& name, bool fuse, int mp,
                      const std::vector<pz::Layer*>& layers, pz::Precision precision,
                      const std::map<std::string, pz::Precision>& layer_precision) {
    blocks_.push_back(makeBlock(name, fuse, mp, layers, precision, layer_precision));
    return *blocks_.back();
  }

  static std::unique_ptr<pz::Block> makeBlock(
      const std::string& name, bool fuse, int mp, const std::vector<pz::Layer*>& layers,
      pz::Precision precision, const std::map<std::string, pz::Precision>& layer_precision) {
    auto block = std::make_unique<pz::Block>(name, fuse, mp, layers, precision);
    for (const auto& [layer_name, p] : layer_precision) {
      const auto it = std::find_if(layers.begin(), layers.end(),
                                   [&](const pz::Layer* l) { return l->name() == layer_name; });
      if (it == layers.end()) {
        throw pz::Error("block " + name + ": layer_precision names " + layer_name +
                        ", which is not one of its layers");
      }
      block->setLayerPrecision(**it, p);
    }
    return block;
  }

  cnrtQueue_t queue() const { return device_->queue(); }

  void run() {
    for (auto& block : blocks_) {
      const auto staged = stage_of_.find(block.get());
      if (staged == stage_of_.end()) {
        block->run(device_->queue());
      } else if (staged->second->blocks().front() == block.get()) {
        staged->second->run();
      }
    }
  }

  // From now on the named compiled blocks run at once (a pz::Stage).
  void makeStage(const std::string& name, const std::vector<std::string>& names) {
    std::vector<pz::Block*> chosen;
    for (const std::string& wanted : names) {
      const auto it = std::find_if(blocks_.begin(), blocks_.end(),
                                   [&](const auto& b) { return b->name() == wanted; });
      if (it == blocks_.end()) throw pz::Error("stage " + name + ": no block named " + wanted);
      if (stage_of_.count(it->get())) {
        throw pz::Error("stage " + name + ": block " + wanted + " is in another stage");
      }
      chosen.push_back(it->get());
    }
    stages_.push_back(std::make_unique<pz::Stage>(name, chosen));
    for (pz::Block* block : chosen) stage_of_[block] = stages_.back().get();
  }

  // (layer, what computes it) for every SDK op of the compiled blocks, in running order.
  std::vector<std::pair<std::string, std::string>> implementations() const {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& block : blocks_) {
      const auto mine = pz::implementations(*block);
      out.insert(out.end(), mine.begin(), mine.end());
    }
    return out;
  }

  // ---- device model (mock SDK extension, cnml_mock.h) -------------------------------
  // Default fusion outputs of `layers`, as FusionLayer derives them at compile time.
  static std::vector<pz::Tensor*> defaultOutputs(const std::vector<pz::Layer*>& layers) {
    return pz::fusionBoundary(layers).outputs;
  }

  // Every op of `layers` in running order (a recurrent layer has many) with its layer's
  // precision: the device model prices ops, not layers.
  static void flatOps(const std::vector<pz::Layer*>& layers, const std::vector<int>& precisions,
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

  static std::vector<double> explain(const std::vector<pz::Layer*>& layers, int mp,
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

  static double estimate(const std::vector<pz::Layer*>& layers, int mp, bool fuse,
                         const std::vector<pz::Tensor*>& outputs,
                         const std::vector<int>& precisions, int dp, int cores) {
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
  // the table of their ops: a block of layers [i, j) is ops [first[i], first[j]), fused when
  // it holds more than one op, except a single several-op layer, which a one-layer block
  // compiles op by op (Block does not fuse one layer).
  static py::array_t<double> costTable(const std::vector<pz::Layer*>& layers,
                                       const std::vector<int>& mps,
                                       const std::vector<int>& precisions, int dp,
                                       int cores) {
    const Launch launch(dp, cores);
    const int n = static_cast<int>(layers.size());
    if (n == 0) throw pz::Error("cost_table: no layers given");
    if (mps.empty()) throw pz::Error("cost_table: no MP choices given");
    std::vector<cnmlBaseOp_t> ops;
    std::vector<int> op_precisions, first;
    flatOps(layers, precisions, &ops, &op_precisions, &first);
    const int m = static_cast<int>(ops.size());
    std::map<const pz::Tensor*, int> index_of;
    for (int i = 0; i < n; ++i) index_of[&layers[i]->output()] = i;
    std::vector<int> last_use(n, -1), reads(n, 0);
    for (int c = 0; c < n; ++c) {
      for (pz::Tensor* in : layers[c]->inputs()) {
        auto it = index_of.find(in);
        if (it == index_of.end()) continue;
        last_use[it->second] = std::max(last_use[it->second], c);
        ++reads[it->second];
      }
    }
    // Per op: an op inside a layer is read inside it (its last op); a layer's last op writes
    // the layer's output, read up to the last op of its last reader.
    std::vector<int> op_last_use(m, 0);
    for (int i = 0; i < n; ++i) {
      const pz::Tensor& out = layers[i]->output();
      const int last_op = first[i + 1] - 1;
      for (int k = first[i]; k < last_op; ++k) op_last_use[k] = last_op;
      if (pz::leavesBlock(out, reads[i]))
        op_last_use[last_op] = m;  // needed after the list
      else
        op_last_use[last_op] = last_use[i] < 0 ? last_op : first[last_use[i] + 1] - 1;
    }
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
    py::array_t<double> table({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(n + 1),
                               static_cast<py::ssize_t>(k)});
    double* out = table.mutable_data();
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j <= n; ++j) {
        for (std::size_t q = 0; q < k; ++q) {
          double value;
          if (j <= i) {
            value = std::numeric_limits<double>::infinity();
          } else if (j == i + 1 && first[i + 1] - first[i] > 1) {
            value = 0.0;  // one several-op layer, compiled op by op
            for (int o = first[i]; o < first[i + 1]; ++o) {
              value += flat[(static_cast<std::size_t>(o) * (m + 1) + o + 1) * k + q];
            }
          } else {
            value = flat[(static_cast<std::size_t>(first[i]) * (m + 1) + first[j]) * k + q];
          }
          out[(static_cast<std::size_t>(i) * (n + 1) + j) * k + q] = value;
        }
      }
    }
    return table;
  }

  static void mockCheck(cnmlStatus_t status, const char* call) {
    if (status != CNML_STATUS_SUCCESS)
      throw pz::Error(std::string(call) + ": " + cnmlMockLastError());
  }

  std::vector<float> blockMicros() const {
    std::vector<float> out;
    for (const auto& block : blocks_) out.push_back(block->lastDeviceMicros());
    return out;
  }

 private:
  std::shared_ptr<pz::Device> device_;
  std::vector<std::unique_ptr<pz::Tensor>> inputs_;
  std::vector<std::unique_ptr<pz::Layer>> layers_;
  std::vector<std::unique_ptr<pz::Block>> blocks_;
  std::vector<std::unique_ptr<pz::Stage>> stages_;
  std::map<const pz::Block*, pz::Stage*> stage_of_;
};

// Handles: a raw pointer into the session plus a reference keeping the session alive.
struct TensorRef {
  pz::Tensor* tensor;
  py::object session;
};

struct LayerRef {
  pz::Layer* layer;
  std::string kind;
  py::object session;
};

struct BlockRef {
  pz::Block* block;
  py::object session;
};

Session& sessionOf(const py::object& self) { return self.cast<Session&>(); }

pz::Precision parsePrecision(const std::string& name) {
  if (name == "fp32") return pz::Precision::kFp32;
  if (name == "fp16") return pz::Precision::kFp16;
  if (name == "int8") return pz::Precision::kInt8;
  throw pz::Error("unknown precision '" + name + "'; use fp32, fp16 or int8");
}

std::map<std::string, pz::Precision> parsePrecisions(
    const std::map<std::string, std::string>& names) {
  std::map<std::string, pz::Precision> out;
  for (const auto& [layer, name] : names) out[layer] = parsePrecision(name);
  return out;
}

// Session.make_block (and compile_block, which then compiles it).
BlockRef addBlock(py::object self, const std::string& name, bool fuse, int mp,
                  const std::vector<LayerRef>& layers, const std::string& precision,
                  const std::map<std::string, std::string>& layer_precision) {
  std::vector<pz::Layer*> ptrs;
  for (const auto& l : layers) ptrs.push_back(l.layer);
  return BlockRef{&sessionOf(self).addBlock(name, fuse, mp, ptrs, parsePrecision(precision),
                                            parsePrecisions(layer_precision)),
                  self};
}

std::vector<pz::Layer*> layerPtrs(const std::vector<LayerRef>& layers) {
  std::vector<pz::Layer*> ptrs;
  for (const auto& l : layers) ptrs.push_back(l.layer);
  return ptrs;
}

std::vector<pz::Tensor*> blockOutputs(const std::vector<pz::Layer*>& layers,
                                      const std::optional<std::vector<TensorRef>>& outputs) {
  if (!outputs) return Session::defaultOutputs(layers);
  std::vector<pz::Tensor*> out;
  for (const auto& t : *outputs) out.push_back(t.tensor);
  return out;
}

pz::Shape toShape(const std::vector<int>& v) { return pz::Shape(v.begin(), v.end()); }

py::tuple shapeTuple(const pz::Shape& s) {
  py::tuple t(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

LayerRef makeRef(pz::Layer& layer, std::string kind, const py::object& self) {
  return LayerRef{&layer, std::move(kind), self};
}

// Layer::configLayer with numpy arrays (None for an absent optional weight): each array is a
// weight view with its shape, so the layer checks its extent against what it declared.
void configLayer(LayerRef& ref, const py::args& arrays) {
  std::vector<FloatArray> keep;  // owns converted copies while the layer binds them
  keep.reserve(arrays.size());
  std::vector<pz::WeightView> views;
  for (const py::handle& item : arrays) {
    if (item.is_none()) {
      views.emplace_back(nullptr);
      continue;
    }
    keep.push_back(FloatArray::ensure(item));
    if (!keep.back()) {
      throw pz::Error(ref.layer->name() + ": config takes float arrays or None");
    }
    const FloatArray& array = keep.back();
    pz::WeightView view{array.data()};
    view.shape = pz::Shape(array.shape(), array.shape() + array.ndim());
    view.has_shape = true;
    views.push_back(std::move(view));
  }
  ref.layer->bindWeights(views);
}

py::list weightSpecs(const LayerRef& ref) {
  py::list out;
  for (const pz::WeightSpec& spec : ref.layer->weightSpecs()) {
    out.append(py::make_tuple(spec.role, shapeTuple(spec.shape), spec.optional));
  }
  return out;
}

// A Python attribute value as the layer registry takes it: bool, integer (Python or numpy),
// number, string, or a sequence of integers.
pz::LayerArgs::Value attributeValue(const std::string& layer, const std::string& key,
                                    const py::handle& value) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>();
  if (PyIndex_Check(value.ptr())) {
    return py::reinterpret_borrow<py::object>(value).cast<long long>();
  }
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  if (PyFloat_Check(value.ptr()) || py::hasattr(value, "__float__")) {
    return py::reinterpret_borrow<py::object>(value).cast<double>();
  }
  if (py::isinstance<py::sequence>(value)) {
    std::vector<int> ints;
    for (const py::handle item : value) {
      if (!PyIndex_Check(item.ptr()) || py::isinstance<py::bool_>(item)) {
        throw pz::Error(layer + ": attribute '" + key + "' must be a list of integers");
      }
      ints.push_back(py::reinterpret_borrow<py::object>(item).cast<int>());
    }
    return ints;
  }
  throw pz::Error(layer + ": attribute '" + key + "' has a type a layer cannot take (" +
                  std::string(py::str(py::type::of(value))) + ")");
}

TensorRef tensorArg(const std::string& layer, const py::handle& value) {
  if (!py::isinstance<TensorRef>(value)) {
    throw pz::Error(layer + ": expected an input tensor, got " +
                    std::string(py::str(py::type::of(value))));
  }
  return value.cast<TensorRef>();
}

// Session.<kind>(name, inputs..., attributes...): inputs as the kind takes them (one tensor
// each, or a list for a kind of any input count), then the attributes in the factory's
// order, positionally or by keyword.
LayerRef buildLayer(const py::object& self, const pz::LayerFactory& factory,
                    const py::args& args, const py::kwargs& kwargs) {
  if (args.size() < 1) throw pz::Error(factory.kind + ": needs the layer's name first");
  const std::string name = py::str(args[0]);
  std::size_t next = 1;
  std::vector<pz::Tensor*> inputs;
  if (factory.inputs == pz::LayerFactory::kAnyInputs) {
    if (args.size() < 2 || !py::isinstance<py::sequence>(args[1])) {
      throw pz::Error(name + ": a " + factory.kind + " layer takes a list of input tensors");
    }
    for (const py::handle item : py::reinterpret_borrow<py::sequence>(args[1])) {
      inputs.push_back(tensorArg(name, item).tensor);
    }
    next = 2;
  } else {
    for (int i = 0; i < factory.inputs; ++i, ++next) {
      if (next >= args.size()) {
        throw pz::Error(name + ": a " + factory.kind + " layer takes " +
                        std::to_string(factory.inputs) + " input tensor(s)");
      }
      inputs.push_back(tensorArg(name, args[next]).tensor);
    }
  }
  pz::LayerArgs attrs(name);
  if (args.size() - next > factory.params.size()) {
    throw pz::Error(name + ": a " + factory.kind + " layer takes " +
                    std::to_string(factory.params.size()) + " attribute(s), got " +
                    std::to_string(args.size() - next) + " positional ones");
  }
  for (std::size_t i = next; i < args.size(); ++i) {
    const std::string& key = factory.params[i - next];
    attrs.set(key, attributeValue(name, key, args[i]));
  }
  for (const auto& item : kwargs) {
    const std::string key = py::str(item.first);
    if (attrs.has(key)) throw pz::Error(name + ": attribute '" + key + "' given twice");
    attrs.set(key, attributeValue(name, key, item.second));
  }
  Session& session = sessionOf(self);
  pz::Layer& layer = session.adopt(pz::makeLayer(factory.kind, name, inputs, attrs));
  return makeRef(layer, factory.kind, self);
}

// The module built over another SDK than the mock (PZ_PY_MODULE, e.g. _runtime_onednn) raises
// paleozoic._runtime's exception classes, so callers catch one set whichever SDK ran; its
// translator is module-local, as the other module's would also match these C++ types.
#ifndef PZ_PY_MODULE
#define PZ_PY_MODULE _runtime
#define PZ_SDK_NAME "mock"
#define PZ_PY_MODULE_IS_MOCK 1
#endif

void registerExceptions(py::module_& m) {
#ifdef PZ_PY_MODULE_IS_MOCK
  static py::handle sdk_error =
      PyErr_NewException("paleozoic._runtime.SdkError", PyExc_RuntimeError, nullptr);
  static py::handle error =
      PyErr_NewException("paleozoic._runtime.Error", PyExc_RuntimeError, nullptr);
#else
  static py::handle sdk_error =
      py::object(py::module_::import("paleozoic._runtime").attr("SdkError")).release();
  static py::handle error =
      py::object(py::module_::import("paleozoic._runtime").attr("Error")).release();
#endif
  m.attr("SdkError") = sdk_error;
  m.attr("Error") = error;
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const pz::SdkError& e) {
      py::object exc = py::reinterpret_borrow<py::object>(sdk_error)(e.what());
      exc.attr("status") = e.status();
      exc.attr("layer") = e.layer();
      PyErr_SetObject(sdk_error.ptr(), exc.ptr());
    } catch (const pz::Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
}

cnmlDataPreprocessStrategy_t preprocessStrategy(const std::string& name) {
  if (name == "cpu_priority") return CNML_CPU_PRIORITY;
  if (name == "mlu_priority") return CNML_MLU_PRIORITY;
  if (name == "balance") return CNML_CPU_MLU_BALANCE;
  throw pz::Error("data-preprocess strategy " + name +
                  " is not one of cpu_priority, mlu_priority, balance");
}

void bindHandles(py::module_& m) {
  py::class_<TensorRef>(m, "Tensor", py::module_local(), "An activation tensor owned by a Session.")
      .def_property_readonly("name", [](const TensorRef& t) { return t.tensor->name(); })
      .def_property_readonly("shape",
                             [](const TensorRef& t) { return shapeTuple(t.tensor->shape()); })
      .def_property_readonly("consumers", [](const TensorRef& t) { return t.tensor->consumers(); })
      .def_property_readonly(
          "dtype", [](const TensorRef& t) { return pz::elementTypeName(t.tensor->elementType()); })
      .def(
          "set_data_preprocess_strategy",
          [](const TensorRef& t, const std::string& strategy) {
            t.tensor->setDataPreprocessStrategy(preprocessStrategy(strategy));
          },
          py::arg("strategy"),
          "Load balance of a graph input or output (Tensor::setDataPreprocessStrategy): "
          "'cpu_priority', 'mlu_priority' or 'balance'.")
      .def_property_readonly("transfer_dtype",
                             [](const TensorRef& t) {
                               return t.tensor->transferType() == CNML_DATA_FLOAT16
                                          ? "float16"
                                          : "float32";
                             })
      .def("__repr__", [](const TensorRef& t) {
        return "<Tensor " + t.tensor->name() + " " + pz::shapeToString(t.tensor->shape()) + ">";
      });

  py::class_<LayerRef>(m, "Layer", py::module_local(), "A layer owned by a Session.")
      .def_property_readonly("name", [](const LayerRef& l) { return l.layer->name(); })
      .def_property_readonly("kind", [](const LayerRef& l) { return l.kind; })
      .def_property_readonly("output",
                             [](const LayerRef& l) {
                               return TensorRef{&l.layer->output(), l.session};
                             })
      .def_property_readonly("compiled", [](const LayerRef& l) { return l.layer->compiled(); })
      .def_property_readonly("fused", [](const LayerRef& l) { return l.layer->fused(); })
      .def(
          "compile", [](LayerRef& l, int mp) { l.layer->compileOp(mp); }, py::arg("mp"),
          "Compiles the layer alone (Layer::compileOp).")
      .def(
          "run",
          [](LayerRef& l) {
            cnrtQueue_t queue = sessionOf(l.session).queue();
            l.layer->run(queue);
            pz::check(cnrtSyncQueue(queue), l.layer->name(), "cnrtSyncQueue");
          },
          "Runs the layer alone (Layer::run) and waits for it.")
      .def_property_readonly(
          "precision", [](const LayerRef& l) { return pz::precisionName(l.layer->precision()); })
      .def(
          "set_precision",
          [](LayerRef& l, const std::string& p) { l.layer->setPrecision(parsePrecision(p)); },
          py::arg("precision"),
          "Sets what the layer computes in before its op is built (blocks do it when they "
          "compile; the device model's estimates use it).")
      .def(
          "build_op", [](LayerRef& l) { l.layer->op(); },
          "Creates the layer's SDK op now, at its precision (blocks do it when they compile).")
      .def_property_readonly("has_int8_mode",
                             [](const LayerRef& l) { return l.layer->hasInt8Mode(); })
      .def_property_readonly("sparse", [](const LayerRef& l) { return l.layer->sparse(); })
      .def(
          "set_sparse", [](LayerRef& l, bool sparse) { l.layer->setSparse(sparse); },
          py::arg("sparse"),
          "The SDK's sparse mode (Layer::setSparse), before the op is built: the device model "
          "then prices the zero pairs of the weights bound with config().")
      .def(
          "set_quantization",
          [](LayerRef& l, std::pair<int, float> input,
             const std::vector<std::pair<int, float>>& filter) {
            pz::LayerQuantization q;
            q.input = {input.first, input.second};
            for (const auto& [position, scale] : filter) q.filter.push_back({position, scale});
            l.layer->setQuantization(std::move(q));
          },
          py::arg("input"), py::arg("filter"),
          "int8 parameters (Layer::setQuantization): the input's (position, scale) and one "
          "(position, scale) per output channel of the filter.")
      .def("config", &configLayer,
           "Binds the layer's weights (Layer::configLayer), one float array per role in "
           "weight_specs order; None leaves an optional one (a bias) as zeros.")
      .def_property_readonly("weight_specs", &weightSpecs,
                             "The weights the layer declares: (role, shape, optional) each.")
      .def("__repr__", [](const LayerRef& l) {
        return "<Layer " + l.kind + " " + l.layer->name() + ">";
      });

  py::class_<BlockRef>(m, "Block", py::module_local(), "A compiled block owned by a Session.")
      .def_property_readonly("name", [](const BlockRef& b) { return b.block->name(); })
      .def_property_readonly("fuse", [](const BlockRef& b) { return b.block->fuse(); })
      .def_property_readonly("mp", [](const BlockRef& b) { return b.block->mp(); })
      .def_property_readonly("precision",
                             [](const BlockRef& b) { return pz::precisionName(b.block->precision()); })
      .def_property_readonly("last_device_micros",
                             [](const BlockRef& b) { return b.block->lastDeviceMicros(); })
      .def_property(
          "data_parallelism", [](const BlockRef& b) { return b.block->dataParallelism(); },
          [](BlockRef& b, int dp) { b.block->setDataParallelism(dp); },
          "Groups of frames the block's forwards run at once, each on its MP cores "
          "(pz::Block::setDataParallelism; dp x MP <= 32).")
      .def_property(
          "affinity", [](const BlockRef& b) { return b.block->affinity(); },
          [](BlockRef& b, unsigned int cores) { b.block->setAffinity(cores); },
          "The mask of cores the block's forwards are pinned to (0: none; "
          "pz::Block::setAffinity).")
      .def_property(
          "channel", [](const BlockRef& b) { return static_cast<int>(b.block->channel()); },
          [](BlockRef& b, int channel) {
            b.block->setChannel(static_cast<cnrtChannelType_t>(channel));
          },
          "The DDR channel the block's forwards are issued on (-1: none; "
          "pz::Block::setChannel); it takes effect at MP 1.")
      .def("compile", [](BlockRef& b) { b.block->compile(); })
      .def("run", [](BlockRef& b) { b.block->run(sessionOf(b.session).queue()); })
      .def("run_beside", [](BlockRef& b) { b.block->runBeside(); },
           "Runs on a queue of its own, as a stage runs its blocks (pz::Block::runBeside).");
}

void bindSession(py::module_& m) {
  py::class_<Session>(m, "Session", py::module_local(),
                      "A Device with the tensors, layers and blocks built on it.")
      .def(py::init<>())
      .def(
          "input",
          [](py::object self, const std::string& name, const std::vector<int>& shape,
             const std::string& dtype) {
            pz::ElementType type = pz::ElementType::kFloat;
            bool known = false;
            for (pz::ElementType t : {pz::ElementType::kFloat, pz::ElementType::kInt64,
                                      pz::ElementType::kInt32, pz::ElementType::kUint8}) {
              if (dtype == pz::elementTypeName(t)) {
                type = t;
                known = true;
              }
            }
            if (!known) {
              throw pz::Error("input " + name + ": dtype '" + dtype +
                              "' is not float32, int64, int32 or uint8");
            }
            return TensorRef{&sessionOf(self).input(name, toShape(shape), type), self};
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32",
          "An input tensor; integer ones (int64, int32, uint8) are set from integer arrays "
          "and read by host layers.")
      .def(
          "__getattr__",
          [](py::object self, const std::string& kind) -> py::object {
            const auto& all = pz::layerFactories();
            const auto it = std::find_if(all.begin(), all.end(),
                                         [&](const pz::LayerFactory& f) { return f.kind == kind; });
            if (it == all.end())
              throw py::attribute_error("Session has no attribute '" + kind + "'");
            const pz::LayerFactory* factory = &*it;
            return py::cpp_function(
                [self, factory](const py::args& args, const py::kwargs& kwargs) {
                  return buildLayer(self, *factory, args, kwargs);
                });
          },
          py::arg("kind"),
          "Session.<kind>(name, inputs..., attributes...) builds a layer of a registered kind "
          "(layer_kinds()): conv(name, x, out_channels, kernel, stride=, pads=, ...), "
          "concat(name, [a, b], axis), ...")
      .def_static(
          "layer_kinds",
          [] {
            py::list out;
            for (const pz::LayerFactory& f : pz::layerFactories()) {
              py::object inputs = f.inputs == pz::LayerFactory::kAnyInputs
                                      ? py::object(py::none())
                                      : py::object(py::int_(f.inputs));
              out.append(py::make_tuple(f.kind, inputs, py::cast(f.params)));
            }
            return out;
          },
          "The registered kinds: (kind, input count or None for a list, attribute names).")
      .def(
          "mark_output", [](Session&, const TensorRef& t) { t.tensor->markGraphOutput(); },
          py::arg("t"))
      .def(
          "compile_block",
          [](py::object self, const std::string& name, bool fuse, int mp,
             const std::vector<LayerRef>& layers, const std::string& precision,
             const std::map<std::string, std::string>& layer_precision) {
            BlockRef block = addBlock(self, name, fuse, mp, layers, precision, layer_precision);
            sessionOf(self).compileLast();
            return block;
          },
          py::arg("name"), py::arg("fuse"), py::arg("mp"), py::arg("layers"),
          py::arg("precision") = "fp32",
          py::arg("layer_precision") = std::map<std::string, std::string>{},
          "Builds and compiles a block (pz::Block) at `precision` (fp32, fp16, int8), with "
          "`layer_precision` {layer name: precision} for layers computed otherwise.")
      .def(
          "make_block",
          &addBlock,
          py::arg("name"), py::arg("fuse"), py::arg("mp"), py::arg("layers"),
          py::arg("precision") = "fp32",
          py::arg("layer_precision") = std::map<std::string, std::string>{},
          "Adds a block to the run list without compiling it; call Block.compile().")
      .def(
          "set_input",
          [](Session&, const TensorRef& t, const py::array& data) {
            if (t.tensor->isInteger()) {
              const auto ints =
                  py::array_t<std::int64_t, py::array::c_style | py::array::forcecast>::ensure(data);
              if (!ints) throw pz::Error("tensor " + t.tensor->name() + " takes integers");
              t.tensor->setInts(ints.data(), static_cast<std::size_t>(ints.size()));
              return;
            }
            const FloatArray floats = FloatArray::ensure(data);
            if (!floats) throw pz::Error("tensor " + t.tensor->name() + " takes float32 data");
            t.tensor->copyFromHost(floats.data(), static_cast<std::size_t>(floats.size()));
          },
          py::arg("t"), py::arg("data"))
      .def("run", &Session::run, "Runs every compiled block in order (a stage's at once).")
      .def("make_stage", &Session::makeStage, py::arg("name"), py::arg("blocks"),
           "From now on the named compiled blocks run at once, each on cores and a queue of "
           "its own (pz::Stage; none may read what another writes). Set their data "
           "parallelism first.")
      .def(
          "get",
          [](Session&, const TensorRef& t) -> py::array {
            std::vector<py::ssize_t> shape(t.tensor->shape().begin(), t.tensor->shape().end());
            if (t.tensor->isInteger()) {  // int64, as onnxruntime returns ArgMax's indices
              py::array_t<std::int64_t> ints(shape);
              const std::vector<std::int64_t>& values = t.tensor->ints();
              std::copy(values.begin(), values.end(), ints.mutable_data());
              return std::move(ints);
            }
            py::array_t<float> out(shape);
            t.tensor->copyToHost(out.mutable_data(), t.tensor->elements());
            return out;
          },
          py::arg("t"))
      .def("implementations", &Session::implementations,
           "(layer, kernel) for every SDK op of the compiled blocks (cnmlMockOpImplementation).")
      .def("block_micros", &Session::blockMicros,
           "Device microseconds of each block's last run, in compile order.")
      .def(
          "estimate_block",
          [](Session&, const std::vector<LayerRef>& layers, int mp, bool fuse,
             const std::optional<std::vector<TensorRef>>& outputs, const Precisions& precisions,
             int data_parallelism, int cores) {
            std::vector<pz::Layer*> ptrs = layerPtrs(layers);
            return Session::estimate(ptrs, mp, fuse, blockOutputs(ptrs, outputs),
                                     precisionCodes(precisions, ptrs.size()), data_parallelism,
                                     cores);
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
                Session::explain(ptrs, mp, blockOutputs(ptrs, outputs),
                                 precisionCodes(precisions, ptrs.size()), data_parallelism,
                                 cores);
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
            return Session::costTable(layerPtrs(layers), mps,
                                      precisionCodes(precisions, layers.size()),
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

void bindFiles(py::module_& m) {
  py::class_<pz::WeightFile>(m, "WeightFile", py::module_local(), "A checked Paleozoic weights file.")
      .def(py::init([](const std::string& path, const std::string& model_id_hex,
                       bool on_demand) {
             return std::make_unique<pz::WeightFile>(
                 path, model_id_hex,
                 on_demand ? pz::WeightFile::Residency::kOnDemand
                           : pz::WeightFile::Residency::kWholeFile);
           }),
           py::arg("path"), py::arg("model_id_hex"), py::arg("on_demand") = false,
           "on_demand: each tensor read and checked when get() asks for it (as emitted "
           "sessions read theirs), else the whole file read and checked now.")
      .def(
          "get",
          [](const pz::WeightFile& wf, const std::string& name, const std::vector<int>& shape) {
            const pz::Shape s = toShape(shape);
            const pz::WeightView view = wf.get(name, s);
            std::vector<py::ssize_t> dims(view.shape.begin(), view.shape.end());
            py::array_t<float> out(dims);
            std::copy(view.data, view.data + pz::elementCount(view.shape), out.mutable_data());
            return out;
          },
          py::arg("name"), py::arg("shape"))
      .def_property_readonly("tensor_count", &pz::WeightFile::tensorCount);

  m.def(
      "read_float_file",
      [](const std::string& path, std::size_t count) {
        std::vector<float> v = pz::readFloatFile(path, count);
        py::array_t<float> out(static_cast<py::ssize_t>(v.size()));
        std::copy(v.begin(), v.end(), out.mutable_data());
        return out;
      },
      py::arg("path"), py::arg("count"));
  m.def(
      "write_float_file",
      [](const std::string& path, const FloatArray& data) {
        pz::writeFloatFile(path, std::vector<float>(data.data(), data.data() + data.size()));
      },
      py::arg("path"), py::arg("data"));
}

void bindDeviceModel(py::module_& m) {
  m.def(
      "estimate_preprocess",
      [](std::size_t elements, bool on_device, int mp) {
        double host_us = 0.0, device_us = 0.0;
        Session::mockCheck(cnmlMockEstimatePreprocessUs(elements, CNML_DATA_FLOAT32,
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
      [](const std::string& path) { Session::mockCheck(cnmlMockSetDeviceProfile(path.c_str()),
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
          Session::mockCheck(cnmlMockGetDeviceProfileItem(i, &key, &value), "device_profile");
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

void bindShapes(py::module_& m) {
  m.def(
      "output_shape",
      [](const std::string& kind, const std::vector<std::vector<int>>& shapes,
         const py::kwargs& attrs) {
        // The wrapper's own shape inference: a throwaway layer built by the registry.
        const std::shared_ptr<pz::Device> device = sharedDevice();
        std::vector<std::unique_ptr<pz::Tensor>> tensors;
        std::vector<pz::Tensor*> inputs;
        for (std::size_t i = 0; i < shapes.size(); ++i) {
          tensors.push_back(
              std::make_unique<pz::Tensor>("in" + std::to_string(i), toShape(shapes[i])));
          inputs.push_back(tensors.back().get());
        }
        pz::LayerArgs args(kind);
        for (const auto& item : attrs) {
          const std::string key = py::str(item.first);
          args.set(key, attributeValue(kind, key, item.second));
        }
        const std::unique_ptr<pz::Layer> layer = pz::makeLayer(kind, kind, inputs, args);
        return shapeTuple(layer->output().shape());
      },
      py::arg("kind"), py::arg("shapes"),
      "Output shape the wrapper gives a layer of `kind` (layer_kinds()) on inputs of `shapes`.");
}

}  // namespace

void bindRecording(py::module_& m);  // record.cpp

PYBIND11_MODULE(PZ_PY_MODULE, m) {
  m.doc() = "Paleozoic runtime wrapper over the " PZ_SDK_NAME " CNML/CNRT SDK";
  registerExceptions(m);
  bindHandles(m);
  bindSession(m);
  bindFiles(m);
  bindShapes(m);
  bindDeviceModel(m);
  bindRecording(m);
}
