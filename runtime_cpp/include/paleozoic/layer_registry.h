// Layers built by kind name from named attributes (ncnn's layer registry and ParamDict):
// the way a host program (the Python bindings, a plan-driven tool) builds wrapper layers
// without knowing each class. Each layer family's source file registers its kinds next to
// their classes, so a kind's constructor arguments are read in one place. Emitted sessions
// construct their layers directly and do not use it.
#ifndef PALEOZOIC_LAYER_REGISTRY_H_
#define PALEOZOIC_LAYER_REGISTRY_H_

#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "paleozoic/core.h"

namespace pz {

// A layer's attributes by name. Every accessor names the layer and the attribute when the
// value is missing or of the wrong type; the ones with a fallback return it for a missing
// attribute (the wrapper's own defaults, as its parameter structs have them).
class LayerArgs {
 public:
  using Value = std::variant<bool, long long, double, std::string, std::vector<int>>;

  explicit LayerArgs(std::string layer) : layer_(std::move(layer)) {}
  void set(const std::string& key, Value value) { values_[key] = std::move(value); }
  bool has(const std::string& key) const { return values_.count(key) != 0; }
  std::vector<std::string> keys() const;

  int integer(const std::string& key) const;
  int integer(const std::string& key, int fallback) const;
  double real(const std::string& key, double fallback) const;  // an integer is accepted
  bool flag(const std::string& key, bool fallback) const;
  std::string text(const std::string& key) const;
  std::string text(const std::string& key, const std::string& fallback) const;
  std::vector<int> ints(const std::string& key) const;
  Window window(const std::string& key) const;  // two integers: h, w
  Window window(const std::string& key, Window fallback) const;
  Pads pads(const std::string& key, Pads fallback) const;  // top, bottom, left, right

 private:
  const Value& at(const std::string& key) const;
  [[noreturn]] void wrongType(const std::string& key, const char* wanted) const;
  std::vector<int> sized(const std::string& key, std::size_t count) const;

  std::string layer_;
  std::map<std::string, Value> values_;
};

// How to build one kind: its name (the Python registry's LayerKind.binding), how many input
// tensors it takes (kAnyInputs: a list of one or more), its attribute names in positional
// order, and the builder.
struct LayerFactory {
  static constexpr int kAnyInputs = -1;
  using Make = std::unique_ptr<Layer> (*)(const std::string& name,
                                          const std::vector<Tensor*>& inputs,
                                          const LayerArgs& args);
  std::string kind;
  int inputs;
  std::vector<std::string> params;
  Make make;
};

// Every registered kind, in family order.
const std::vector<LayerFactory>& layerFactories();
// The factory of `kind`; throws pz::Error listing the known kinds.
const LayerFactory& layerFactory(const std::string& kind);
// Builds a layer of `kind`: checks the input count and that every attribute is one the kind
// takes (pz::Error naming the layer otherwise), then calls its factory.
std::unique_ptr<Layer> makeLayer(const std::string& kind, const std::string& name,
                                 const std::vector<Tensor*>& inputs, const LayerArgs& args);

}  // namespace pz

#endif  // PALEOZOIC_LAYER_REGISTRY_H_
