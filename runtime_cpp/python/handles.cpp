// The Tensor, Layer and Block handles into a Session, for Python.
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "session.h"

namespace pz_py {
namespace {

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

cnmlDataPreprocessStrategy_t preprocessStrategy(const std::string& name) {
  return pz::sdkValue(pz::parseEnum<pz::PreprocessStrategy>(name));
}

}  // namespace

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
          [](LayerRef& l, const std::string& p) { l.layer->setPrecision(pz::parsePrecision(p, l.layer->name())); },
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

}  // namespace pz_py
