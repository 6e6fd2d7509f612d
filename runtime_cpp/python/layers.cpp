// Layers built from Python: Session.<kind>(...) through the layer registry, with Python
// values as the registry's attributes, and the registry's shape inference (output_shape).
#include <pybind11/stl.h>

#include <string>
#include <utility>
#include <vector>

#include "session.h"

namespace pz_py {
namespace {

LayerRef makeRef(pz::Layer& layer, std::string kind, const py::object& self) {
  return LayerRef{&layer, std::move(kind), self};
}

TensorRef tensorArg(const std::string& layer, const py::handle& value) {
  if (!py::isinstance<TensorRef>(value)) {
    throw pz::Error(layer + ": expected an input tensor, got " +
                    std::string(py::str(py::type::of(value))));
  }
  return value.cast<TensorRef>();
}

}  // namespace

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

void bindLayers(py::class_<Session>& session, py::module_& m) {
  session
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
          "The registered kinds: (kind, input count or None for a list, attribute names).");

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

}  // namespace pz_py
