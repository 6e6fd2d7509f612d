// What the binding files of the _runtime module share: the Session that Python builds on,
// the handles into it, and each file's bind function.
//
// A Session owns a Device, its input tensors, layers and blocks. Tensor, Layer and Block
// handles point into the session and hold a reference to it, so the session outlives them.
#ifndef PZ_PYTHON_SESSION_H_
#define PZ_PYTHON_SESSION_H_

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "paleozoic/layer_registry.h"
#include "paleozoic/runtime.h"
#include "paleozoic/session.h"

namespace py = pybind11;

namespace pz_py {

using FloatArray = py::array_t<float, py::array::c_style | py::array::forcecast>;

// One Device per process while any session lives: the SDK is initialised once.
std::shared_ptr<pz::Device> sharedDevice();

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

inline Session& sessionOf(const py::object& self) { return self.cast<Session&>(); }

std::vector<pz::Layer*> layerPtrs(const std::vector<LayerRef>& layers);
pz::Shape toShape(const std::vector<int>& v);
py::tuple shapeTuple(const pz::Shape& s);

// Session.<kind>(name, inputs..., attributes...): inputs as the kind takes them (one tensor
// each, or a list for a kind of any input count), then the attributes in the factory's
// order, positionally or by keyword.
LayerRef buildLayer(const py::object& self, const pz::LayerFactory& factory,
                    const py::args& args, const py::kwargs& kwargs);

// A Python attribute value as the layer registry takes it: bool, integer (Python or numpy),
// number, string, or a sequence of integers.
pz::LayerArgs::Value attributeValue(const std::string& layer, const std::string& key,
                                    const py::handle& value);

void bindHandles(py::module_& m);   // handles.cpp
void bindLayers(py::class_<Session>& session, py::module_& m);  // layers.cpp
void bindSessionDeviceModel(py::class_<Session>& session);  // device_model.cpp
void bindDeviceModel(py::module_& m);  // device_model.cpp

}  // namespace pz_py

void bindRecording(py::module_& m);  // record.cpp

#endif  // PZ_PYTHON_SESSION_H_
