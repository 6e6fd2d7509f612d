// paleozoic._runtime: the runtime wrapper over the mock SDK, for tests and measurement (or
// over another SDK: PZ_PY_MODULE). The Session, its handles, its layers and the device
// model's queries are bound in the files session.h lists.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "session.h"

namespace pz_py {

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

std::vector<pz::Layer*> layerPtrs(const std::vector<LayerRef>& layers) {
  std::vector<pz::Layer*> ptrs;
  for (const auto& l : layers) ptrs.push_back(l.layer);
  return ptrs;
}

pz::Shape toShape(const std::vector<int>& v) { return pz::Shape(v.begin(), v.end()); }

py::tuple shapeTuple(const pz::Shape& s) {
  py::tuple t(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

namespace {

std::map<std::string, pz::Precision> parsePrecisions(
    const std::map<std::string, std::string>& names) {
  std::map<std::string, pz::Precision> out;
  for (const auto& [layer, name] : names) out[layer] = pz::parsePrecision(name, layer);
  return out;
}

// Session.make_block (and compile_block, which then compiles it).
BlockRef addBlock(py::object self, const std::string& name, bool fuse, int mp,
                  const std::vector<LayerRef>& layers, const std::string& precision,
                  const std::map<std::string, std::string>& layer_precision) {
  return BlockRef{&sessionOf(self).addBlock(name, fuse, mp, layerPtrs(layers),
                                            pz::parsePrecision(precision),
                                            parsePrecisions(layer_precision)),
                  self};
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

py::class_<Session> bindSession(py::module_& m) {
  return py::class_<Session>(m, "Session", py::module_local(),
                             "A Device with the tensors, layers and blocks built on it.")
      .def(py::init<>())
      .def(
          "input",
          [](py::object self, const std::string& name, const std::vector<int>& shape,
             const std::string& dtype) {
            const auto type = pz::parseEnum<pz::ElementType>(dtype, "input " + name);
            return TensorRef{&sessionOf(self).input(name, toShape(shape), type), self};
          },
          py::arg("name"), py::arg("shape"), py::arg("dtype") = "float32",
          "An input tensor; integer ones (int64, int32, uint8) are set from integer arrays "
          "and read by host layers.")
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
           "Device microseconds of each block's last run, in compile order.");
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

}  // namespace
}  // namespace pz_py

PYBIND11_MODULE(PZ_PY_MODULE, m) {
  m.doc() = "Paleozoic runtime wrapper over the " PZ_SDK_NAME " CNML/CNRT SDK";
  pz_py::registerExceptions(m);
  pz_py::bindHandles(m);
  py::class_<pz_py::Session> session = pz_py::bindSession(m);
  pz_py::bindLayers(session, m);
  pz_py::bindSessionDeviceModel(session);
  pz_py::bindFiles(m);
  pz_py::bindDeviceModel(m);
  bindRecording(m);
}
