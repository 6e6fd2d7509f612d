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

#include "paleozoic/runtime.h"

namespace py = pybind11;

namespace {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;
using Pair = std::pair<int, int>;
using Quad = std::tuple<int, int, int, int>;

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

class Session {
 public:
  Session() : device_(sharedDevice()) {}
  ~Session() {
    blocks_.clear();
    while (!layers_.empty()) layers_.pop_back();  // consumers before producers
    inputs_.clear();
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  pz::Tensor& input(const std::string& name, const pz::Shape& shape) {
    inputs_.push_back(std::make_unique<pz::Tensor>(name, shape));
    return *inputs_.back();
  }

  template <typename L, typename... Args>
  L& add(Args&&... args) {
    auto layer = std::make_unique<L>(std::forward<Args>(args)...);
    L& ref = *layer;
    layers_.push_back(std::move(layer));
    return ref;
  }

  // Builds a block and compiles it; a block that fails to compile is not kept.
  pz::Block& compileBlock(const std::string& name, bool fuse, int mp,
                          const std::vector<pz::Layer*>& layers) {
    auto block = std::make_unique<pz::Block>(name, fuse, mp, layers);
    block->compile();
    blocks_.push_back(std::move(block));
    return *blocks_.back();
  }

  // Adds a block without compiling it (Block.compile() later).
  pz::Block& addBlock(const std::string& name, bool fuse, int mp,
                      const std::vector<pz::Layer*>& layers) {
    blocks_.push_back(std::make_unique<pz::Block>(name, fuse, mp, layers));
    return *blocks_.back();
  }

  cnrtQueue_t queue() const { return device_->queue(); }

  void run() {
    for (auto& block : blocks_) block->run(device_->queue());
  }

  // ---- device model (mock SDK extension, cnml_mock.h) -------------------------------
  // Default fusion outputs of `layers`, as FusionLayer derives them at compile time.
  static std::vector<pz::Tensor*> defaultOutputs(const std::vector<pz::Layer*>& layers) {
    return pz::fusionBoundary(layers).outputs;
  }

  static std::vector<double> explain(const std::vector<pz::Layer*>& layers, int mp,
                                     const std::vector<pz::Tensor*>& outputs) {
    std::vector<cnmlBaseOp_t> ops;
    for (pz::Layer* layer : layers) ops.push_back(layer->op());
    std::vector<cnmlTensor_t> outs;
    for (pz::Tensor* t : outputs) outs.push_back(t->desc());
    std::vector<double> values(9, 0.0);
    mockCheck(cnmlMockExplainFusion(ops.data(), static_cast<int>(ops.size()), outs.data(),
                                    static_cast<int>(outs.size()), mp, values.data(),
                                    static_cast<int>(values.size())),
              "cnmlMockExplainFusion");
    return values;
  }

  static double estimate(const std::vector<pz::Layer*>& layers, int mp, bool fuse,
                         const std::vector<pz::Tensor*>& outputs) {
    if (layers.empty()) throw pz::Error("estimate_block: no layers given");
    if (!fuse) {
      double total = 0.0;
      for (pz::Layer* layer : layers) {
        float us = 0.0f;
        mockCheck(cnmlMockEstimateBaseOpUs(layer->op(), mp, &us), "cnmlMockEstimateBaseOpUs");
        total += us;
      }
      return total;
    }
    std::vector<cnmlBaseOp_t> ops;
    for (pz::Layer* layer : layers) ops.push_back(layer->op());
    std::vector<cnmlTensor_t> outs;
    for (pz::Tensor* t : outputs) outs.push_back(t->desc());
    float us = 0.0f;
    mockCheck(cnmlMockEstimateFusionUs(ops.data(), static_cast<int>(ops.size()), outs.data(),
                                       static_cast<int>(outs.size()), mp, &us),
              "cnmlMockEstimateFusionUs");
    return us;
  }

  // [n, n + 1, len(mps)] table of block times over `layers` (see cnmlMockCostTable).
  static py::array_t<double> costTable(const std::vector<pz::Layer*>& layers,
                                       const std::vector<int>& mps) {
    const int n = static_cast<int>(layers.size());
    if (n == 0) throw pz::Error("cost_table: no layers given");
    if (mps.empty()) throw pz::Error("cost_table: no MP choices given");
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
    for (int i = 0; i < n; ++i) {
      const pz::Tensor& out = layers[i]->output();
      if (pz::leavesBlock(out, reads[i]))
        last_use[i] = n;  // needed after the list
      else
        last_use[i] = std::max(last_use[i], i);
    }
    std::vector<cnmlBaseOp_t> ops;
    for (pz::Layer* layer : layers) ops.push_back(layer->op());
    py::array_t<double> table({static_cast<py::ssize_t>(n), static_cast<py::ssize_t>(n + 1),
                               static_cast<py::ssize_t>(mps.size())});
    cnmlStatus_t status;
    {
      py::gil_scoped_release release;
      status = cnmlMockCostTable(ops.data(), n, last_use.data(), mps.data(),
                                 static_cast<int>(mps.size()), table.mutable_data());
    }
    mockCheck(status, "cnmlMockCostTable");
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

pz::Active activeByName(const std::string& fn) {
  pz::Active out;
  if (!pz::parseActive(fn, &out))
    throw pz::Error("unknown activation '" + fn + "'; use " + pz::activeChoices());
  return out;
}

pz::Binary binaryByName(const std::string& op) {
  pz::Binary out;
  if (!pz::parseBinary(op, &out))
    throw pz::Error("unknown binary op '" + op + "'; use " + pz::binaryChoices());
  return out;
}

pz::Deconv deconvParams(int out_channels, Pair kernel, Pair stride, Quad pads, Pair dilation,
                        int groups, Pair output_padding) {
  pz::Deconv p(out_channels, {kernel.first, kernel.second});
  p.stride(stride.first, stride.second)
      .pads(std::get<0>(pads), std::get<1>(pads), std::get<2>(pads), std::get<3>(pads))
      .dilation(dilation.first, dilation.second)
      .groups(groups)
      .outputPadding(output_padding.first, output_padding.second);
  return p;
}

pz::Interp interpParams(const std::string& mode, Pair size, const std::string& coordinates,
                        const std::string& rounding) {
  if (mode != "nearest" && mode != "linear") {
    throw pz::Error("unknown interp mode '" + mode + "'; use nearest or linear");
  }
  pz::InterpCoordinates c;
  if (!pz::parseInterpCoordinates(coordinates, &c)) {
    throw pz::Error("unknown interp coordinates '" + coordinates + "'; use " +
                    pz::interpCoordinatesChoices());
  }
  const pz::Window out{size.first, size.second};
  pz::Interp p = mode == "nearest" ? pz::Interp::nearest(out) : pz::Interp::linear(out);
  p.coordinates(c);
  if (mode == "nearest") {
    pz::InterpRounding r;
    if (!pz::parseInterpRounding(rounding, &r)) {
      throw pz::Error("unknown nearest rounding '" + rounding + "'; use " +
                      pz::interpRoundingChoices());
    }
    p.rounding(r);
  } else if (!rounding.empty()) {
    throw pz::Error("linear interp takes no rounding (give \"\"), got '" + rounding + "'");
  }
  return p;
}

pz::Pool poolParams(const std::string& mode, Pair kernel, Pair stride, Quad pads, bool ceil_mode,
                    bool count_include_pad) {
  pz::Window k{kernel.first, kernel.second};
  if (mode != "max" && mode != "avg") {
    throw pz::Error("unknown pool mode '" + mode + "'; use max or avg");
  }
  pz::Pool p = mode == "max" ? pz::Pool::max(k) : pz::Pool::avg(k);
  p.stride(stride.first, stride.second)
      .pads(std::get<0>(pads), std::get<1>(pads), std::get<2>(pads), std::get<3>(pads))
      .ceilMode(ceil_mode)
      .countIncludePad(count_include_pad);
  return p;
}

void registerExceptions(py::module_& m) {
  static py::handle sdk_error =
      PyErr_NewException("paleozoic._runtime.SdkError", PyExc_RuntimeError, nullptr);
  static py::handle error =
      PyErr_NewException("paleozoic._runtime.Error", PyExc_RuntimeError, nullptr);
  m.attr("SdkError") = sdk_error;
  m.attr("Error") = error;
  py::register_exception_translator([](std::exception_ptr p) {
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

void bindHandles(py::module_& m) {
  py::class_<TensorRef>(m, "Tensor", "An activation tensor owned by a Session.")
      .def_property_readonly("name", [](const TensorRef& t) { return t.tensor->name(); })
      .def_property_readonly("shape",
                             [](const TensorRef& t) { return shapeTuple(t.tensor->shape()); })
      .def_property_readonly("consumers", [](const TensorRef& t) { return t.tensor->consumers(); })
      .def("__repr__", [](const TensorRef& t) {
        return "<Tensor " + t.tensor->name() + " " + pz::shapeToString(t.tensor->shape()) + ">";
      });

  py::class_<LayerRef>(m, "Layer", "A layer owned by a Session.")
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
      .def("config", &configLayer,
           "Binds the layer's weights (Layer::configLayer), one float array per role in "
           "weight_specs order; None leaves an optional one (a bias) as zeros.")
      .def_property_readonly("weight_specs", &weightSpecs,
                             "The weights the layer declares: (role, shape, optional) each.")
      .def("__repr__", [](const LayerRef& l) {
        return "<Layer " + l.kind + " " + l.layer->name() + ">";
      });

  py::class_<BlockRef>(m, "Block", "A compiled block owned by a Session.")
      .def_property_readonly("name", [](const BlockRef& b) { return b.block->name(); })
      .def_property_readonly("fuse", [](const BlockRef& b) { return b.block->fuse(); })
      .def_property_readonly("mp", [](const BlockRef& b) { return b.block->mp(); })
      .def_property_readonly("last_device_micros",
                             [](const BlockRef& b) { return b.block->lastDeviceMicros(); })
      .def("compile", [](BlockRef& b) { b.block->compile(); })
      .def("run", [](BlockRef& b) { b.block->run(sessionOf(b.session).queue()); });
}

void bindSession(py::module_& m) {
  py::class_<Session>(m, "Session", "A Device with the tensors, layers and blocks built on it.")
      .def(py::init<>())
      .def(
          "input",
          [](py::object self, const std::string& name, const std::vector<int>& shape) {
            return TensorRef{&sessionOf(self).input(name, toShape(shape)), self};
          },
          py::arg("name"), py::arg("shape"))
      .def(
          "conv",
          [](py::object self, const std::string& name, const TensorRef& x, int out_channels,
             Pair kernel, Pair stride, Quad pads, Pair dilation, int groups) {
            pz::Conv p(out_channels, {kernel.first, kernel.second});
            p.stride(stride.first, stride.second)
                .pads(std::get<0>(pads), std::get<1>(pads), std::get<2>(pads), std::get<3>(pads))
                .dilation(dilation.first, dilation.second)
                .groups(groups);
            auto& layer = sessionOf(self).add<pz::ConvLayer>(name, *x.tensor, p);
            return makeRef(layer, "conv", self);
          },
          py::arg("name"), py::arg("x"), py::arg("out_channels"), py::arg("kernel"),
          py::arg("stride") = Pair{1, 1}, py::arg("pads") = Quad{0, 0, 0, 0},
          py::arg("dilation") = Pair{1, 1}, py::arg("groups") = 1)
      .def(
          "deconv",
          [](py::object self, const std::string& name, const TensorRef& x, int out_channels,
             Pair kernel, Pair stride, Quad pads, Pair dilation, int groups, Pair output_padding) {
            const pz::Deconv p =
                deconvParams(out_channels, kernel, stride, pads, dilation, groups, output_padding);
            auto& layer = sessionOf(self).add<pz::DeconvLayer>(name, *x.tensor, p);
            return makeRef(layer, "deconv", self);
          },
          py::arg("name"), py::arg("x"), py::arg("out_channels"), py::arg("kernel"),
          py::arg("stride") = Pair{1, 1}, py::arg("pads") = Quad{0, 0, 0, 0},
          py::arg("dilation") = Pair{1, 1}, py::arg("groups") = 1,
          py::arg("output_padding") = Pair{0, 0},
          "ONNX ConvTranspose; pads (top, bottom, left, right); config(weight [ci, co/groups, "
          "kh, kw], bias [co] or None).")
      .def(
          "interp",
          [](py::object self, const std::string& name, const TensorRef& x, const std::string& mode,
             Pair size, const std::string& coordinates, const std::string& rounding) {
            const pz::Interp p = interpParams(mode, size, coordinates, rounding);
            auto& layer = sessionOf(self).add<pz::InterpLayer>(name, *x.tensor, p);
            return makeRef(layer, "interp", self);
          },
          py::arg("name"), py::arg("x"), py::arg("mode"), py::arg("size"),
          py::arg("coordinates") = "half_pixel", py::arg("rounding") = "round_prefer_floor",
          "ONNX Resize of H and W to size (out_h, out_w): mode nearest or linear, coordinates "
          "half_pixel, pytorch_half_pixel, align_corners or asymmetric, rounding (nearest) "
          "round_prefer_floor, round_prefer_ceil, floor or ceil (\"\" for linear).")
      .def(
          "pool",
          [](py::object self, const std::string& name, const TensorRef& x, const std::string& mode,
             Pair kernel, Pair stride, Quad pads, bool ceil_mode, bool count_include_pad) {
            const pz::Pool p = poolParams(mode, kernel, stride, pads, ceil_mode, count_include_pad);
            auto& layer = sessionOf(self).add<pz::PoolLayer>(name, *x.tensor, p);
            return makeRef(layer, "pool", self);
          },
          py::arg("name"), py::arg("x"), py::arg("mode"), py::arg("kernel"),
          py::arg("stride") = Pair{1, 1}, py::arg("pads") = Quad{0, 0, 0, 0},
          py::arg("ceil_mode") = false, py::arg("count_include_pad") = false)
      .def(
          "global_avg_pool",
          [](py::object self, const std::string& name, const TensorRef& x) {
            auto& layer = sessionOf(self).add<pz::GlobalAvgPoolLayer>(name, *x.tensor);
            return makeRef(layer, "global_avg_pool", self);
          },
          py::arg("name"), py::arg("x"))
      .def(
          "lrn",
          [](py::object self, const std::string& name, const TensorRef& x, int size, double alpha,
             double beta, double bias) {
            auto& layer = sessionOf(self).add<pz::LrnLayer>(
                name, *x.tensor, pz::Lrn(size).alphaBetaBias(alpha, beta, bias));
            return makeRef(layer, "lrn", self);
          },
          py::arg("name"), py::arg("x"), py::arg("size"), py::arg("alpha") = 1e-4,
          py::arg("beta") = 0.75, py::arg("bias") = 1.0)
      .def(
          "batch_norm",
          [](py::object self, const std::string& name, const TensorRef& x) {
            auto& layer = sessionOf(self).add<pz::BatchNormLayer>(name, *x.tensor);
            return makeRef(layer, "batch_norm", self);
          },
          py::arg("name"), py::arg("x"))
      .def(
          "scale",
          [](py::object self, const std::string& name, const TensorRef& x) {
            auto& layer = sessionOf(self).add<pz::ScaleLayer>(name, *x.tensor);
            return makeRef(layer, "scale", self);
          },
          py::arg("name"), py::arg("x"))
      .def(
          "active",
          [](py::object self, const std::string& name, const TensorRef& x, const std::string& fn) {
            auto& layer = sessionOf(self).add<pz::ActiveLayer>(name, *x.tensor, activeByName(fn));
            return makeRef(layer, "active", self);
          },
          py::arg("name"), py::arg("x"), py::arg("fn"))
      .def(
          "add",
          [](py::object self, const std::string& name, const TensorRef& a, const TensorRef& b) {
            auto& layer = sessionOf(self).add<pz::AddLayer>(name, *a.tensor, *b.tensor);
            return makeRef(layer, "add", self);
          },
          py::arg("name"), py::arg("a"), py::arg("b"))
      .def(
          "binary",
          [](py::object self, const std::string& name, const TensorRef& a, const TensorRef& b,
             const std::string& op) {
            const pz::Binary fn = binaryByName(op);
            auto& layer = sessionOf(self).add<pz::BinaryLayer>(name, *a.tensor, *b.tensor, fn);
            return makeRef(layer, "binary", self);
          },
          py::arg("name"), py::arg("a"), py::arg("b"), py::arg("op"),
          "a (op) b for op in add, sub, mul, div; b has a's shape or broadcasts to it.")
      .def(
          "prelu",
          [](py::object self, const std::string& name, const TensorRef& x) {
            auto& layer = sessionOf(self).add<pz::PReluLayer>(name, *x.tensor);
            return makeRef(layer, "prelu", self);
          },
          py::arg("name"), py::arg("x"), "x >= 0 ? x : slope[c] * x; config(slope [C]).")
      .def(
          "fully_connected",
          [](py::object self, const std::string& name, const TensorRef& x, int out_features) {
            auto& layer =
                sessionOf(self).add<pz::FullyConnectedLayer>(name, *x.tensor, out_features);
            return makeRef(layer, "fully_connected", self);
          },
          py::arg("name"), py::arg("x"), py::arg("out_features"))
      .def(
          "softmax",
          [](py::object self, const std::string& name, const TensorRef& x, int axis) {
            auto& layer = sessionOf(self).add<pz::SoftmaxLayer>(name, *x.tensor, axis);
            return makeRef(layer, "softmax", self);
          },
          py::arg("name"), py::arg("x"), py::arg("axis"))
      .def(
          "concat",
          [](py::object self, const std::string& name, const std::vector<TensorRef>& xs, int axis) {
            std::vector<pz::Tensor*> inputs;
            for (const auto& x : xs) inputs.push_back(x.tensor);
            auto& layer = sessionOf(self).add<pz::ConcatLayer>(name, inputs, axis);
            return makeRef(layer, "concat", self);
          },
          py::arg("name"), py::arg("xs"), py::arg("axis"))
      .def(
          "reshape",
          [](py::object self, const std::string& name, const TensorRef& x,
             const std::vector<int>& shape) {
            auto& layer = sessionOf(self).add<pz::ReshapeLayer>(name, *x.tensor, toShape(shape));
            return makeRef(layer, "reshape", self);
          },
          py::arg("name"), py::arg("x"), py::arg("shape"))
      .def(
          "transpose",
          [](py::object self, const std::string& name, const TensorRef& x,
             const std::vector<int>& perm) {
            auto& layer = sessionOf(self).add<pz::TransposeLayer>(name, *x.tensor, perm);
            return makeRef(layer, "transpose", self);
          },
          py::arg("name"), py::arg("x"), py::arg("perm"))
      .def(
          "slice",
          [](py::object self, const std::string& name, const TensorRef& x,
             const std::vector<int>& begin, const std::vector<int>& end,
             const std::vector<int>& step) {
            auto& layer = sessionOf(self).add<pz::SliceLayer>(name, *x.tensor, begin, end, step);
            return makeRef(layer, "slice", self);
          },
          py::arg("name"), py::arg("x"), py::arg("begin"), py::arg("end"), py::arg("step"),
          "x[begin:end:step] per axis (one entry per axis; 0 <= begin < end <= dim, step >= 1).")
      .def(
          "mark_output", [](Session&, const TensorRef& t) { t.tensor->markGraphOutput(); },
          py::arg("t"))
      .def(
          "compile_block",
          [](py::object self, const std::string& name, bool fuse, int mp,
             const std::vector<LayerRef>& layers) {
            std::vector<pz::Layer*> ptrs;
            for (const auto& l : layers) ptrs.push_back(l.layer);
            return BlockRef{&sessionOf(self).compileBlock(name, fuse, mp, ptrs), self};
          },
          py::arg("name"), py::arg("fuse"), py::arg("mp"), py::arg("layers"))
      .def(
          "make_block",
          [](py::object self, const std::string& name, bool fuse, int mp,
             const std::vector<LayerRef>& layers) {
            std::vector<pz::Layer*> ptrs;
            for (const auto& l : layers) ptrs.push_back(l.layer);
            return BlockRef{&sessionOf(self).addBlock(name, fuse, mp, ptrs), self};
          },
          py::arg("name"), py::arg("fuse"), py::arg("mp"), py::arg("layers"),
          "Adds a block to the run list without compiling it; call Block.compile().")
      .def(
          "set_input",
          [](Session&, const TensorRef& t, const FloatArray& data) {
            t.tensor->copyFromHost(data.data(), static_cast<std::size_t>(data.size()));
          },
          py::arg("t"), py::arg("data"))
      .def("run", &Session::run, "Runs every compiled block in order.")
      .def(
          "get",
          [](Session&, const TensorRef& t) {
            std::vector<py::ssize_t> shape(t.tensor->shape().begin(), t.tensor->shape().end());
            py::array_t<float> out(shape);
            t.tensor->copyToHost(out.mutable_data(), t.tensor->elements());
            return out;
          },
          py::arg("t"))
      .def("block_micros", &Session::blockMicros,
           "Device microseconds of each block's last run, in compile order.")
      .def(
          "estimate_block",
          [](Session&, const std::vector<LayerRef>& layers, int mp, bool fuse,
             const std::optional<std::vector<TensorRef>>& outputs) {
            std::vector<pz::Layer*> ptrs = layerPtrs(layers);
            return Session::estimate(ptrs, mp, fuse, blockOutputs(ptrs, outputs));
          },
          py::arg("layers"), py::arg("mp"), py::arg("fuse") = true,
          py::arg("outputs") = py::none(),
          "Simulated device us of `layers` as one block on mp cores (the device model; what "
          "the block reports when compiled and run). fuse=False: the sum of the layers' "
          "base-op times. outputs default to the tensors read outside the layers, graph "
          "outputs and tensors read by nobody, as a fused block derives them.")
      .def(
          "explain_block",
          [](Session&, const std::vector<LayerRef>& layers, int mp,
             const std::optional<std::vector<TensorRef>>& outputs) {
            std::vector<pz::Layer*> ptrs = layerPtrs(layers);
            if (ptrs.empty()) throw pz::Error("explain_block: no layers given");
            const std::vector<double> v = Session::explain(ptrs, mp, blockOutputs(ptrs, outputs));
            py::dict d;
            const char* keys[] = {"total_us", "launch_sync_us", "layers_us",
                                  "compute_us", "halo_us", "dram_us",
                                  "spill_bytes", "peak_live_bytes", "exchanges"};
            for (std::size_t i = 0; i < v.size(); ++i) d[keys[i]] = v[i];
            return d;
          },
          py::arg("layers"), py::arg("mp"), py::arg("outputs") = py::none(),
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
          [](Session&, const std::vector<LayerRef>& layers, const std::vector<int>& mps) {
            return Session::costTable(layerPtrs(layers), mps);
          },
          py::arg("layers"), py::arg("mps"),
          "float64 [n, n+1, len(mps)]: [i, j, k] = us of layers[i:j] on mps[k] cores, fused "
          "when j > i + 1, the single layer unfused when j == i + 1, inf elsewhere. Block "
          "outputs are relative to the whole list (plus graph outputs); equals "
          "estimate_block entry by entry.");
}

void bindFiles(py::module_& m) {
  py::class_<pz::WeightFile>(m, "WeightFile", "A checked Paleozoic weights file.")
      .def(py::init<const std::string&, const std::string&>(), py::arg("path"),
           py::arg("model_id_hex"))
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
      "conv_output_shape",
      [](const std::vector<int>& in, int out_channels, Pair kernel, Pair stride, Quad pads,
         Pair dilation, int groups) {
        pz::Conv p(out_channels, {kernel.first, kernel.second});
        p.stride(stride.first, stride.second)
            .pads(std::get<0>(pads), std::get<1>(pads), std::get<2>(pads), std::get<3>(pads))
            .dilation(dilation.first, dilation.second)
            .groups(groups);
        return shapeTuple(pz::convOutputShape(toShape(in), p));
      },
      py::arg("shape"), py::arg("out_channels"), py::arg("kernel"), py::arg("stride") = Pair{1, 1},
      py::arg("pads") = Quad{0, 0, 0, 0}, py::arg("dilation") = Pair{1, 1}, py::arg("groups") = 1);
  m.def(
      "deconv_output_shape",
      [](const std::vector<int>& in, int out_channels, Pair kernel, Pair stride, Quad pads,
         Pair dilation, int groups, Pair output_padding) {
        return shapeTuple(pz::deconvOutputShape(
            toShape(in),
            deconvParams(out_channels, kernel, stride, pads, dilation, groups, output_padding)));
      },
      py::arg("shape"), py::arg("out_channels"), py::arg("kernel"), py::arg("stride") = Pair{1, 1},
      py::arg("pads") = Quad{0, 0, 0, 0}, py::arg("dilation") = Pair{1, 1}, py::arg("groups") = 1,
      py::arg("output_padding") = Pair{0, 0});
  m.def(
      "pool_output_shape",
      [](const std::vector<int>& in, Pair kernel, Pair stride, Quad pads, bool ceil_mode) {
        const pz::Pool p = poolParams("max", kernel, stride, pads, ceil_mode, false);
        return shapeTuple(pz::poolOutputShape(toShape(in), p));
      },
      py::arg("shape"), py::arg("kernel"), py::arg("stride") = Pair{1, 1},
      py::arg("pads") = Quad{0, 0, 0, 0}, py::arg("ceil_mode") = false);
}

}  // namespace

void bindRecording(py::module_& m);  // record.cpp

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "Paleozoic runtime wrapper over the mock CNML/CNRT SDK";
  registerExceptions(m);
  bindHandles(m);
  bindSession(m);
  bindFiles(m);
  bindShapes(m);
  bindDeviceModel(m);
  bindRecording(m);
}
