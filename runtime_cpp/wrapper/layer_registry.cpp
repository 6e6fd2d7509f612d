// The layer registry: typed access to named attributes, and the table of factories the
// family sources contribute.
#include "paleozoic/layer_registry.h"

#include <algorithm>

#include "detail.h"

namespace pz {

std::vector<std::string> LayerArgs::keys() const {
  std::vector<std::string> out;
  for (const auto& entry : values_) out.push_back(entry.first);
  return out;
}

const LayerArgs::Value& LayerArgs::at(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) throw Error(layer_ + ": needs attribute '" + key + "'");
  return it->second;
}

void LayerArgs::wrongType(const std::string& key, const char* wanted) const {
  throw Error(layer_ + ": attribute '" + key + "' must be " + wanted);
}

int LayerArgs::integer(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* i = std::get_if<long long>(&v)) return static_cast<int>(*i);
  wrongType(key, "an integer");
}

int LayerArgs::integer(const std::string& key, int fallback) const {
  return has(key) ? integer(key) : fallback;
}

double LayerArgs::real(const std::string& key, double fallback) const {
  if (!has(key)) return fallback;
  const Value& v = at(key);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* i = std::get_if<long long>(&v)) return static_cast<double>(*i);
  wrongType(key, "a number");
}

bool LayerArgs::flag(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const Value& v = at(key);
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  wrongType(key, "true or false");
}

std::string LayerArgs::text(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  wrongType(key, "a string");
}

std::string LayerArgs::text(const std::string& key, const std::string& fallback) const {
  return has(key) ? text(key) : fallback;
}

std::vector<int> LayerArgs::ints(const std::string& key) const {
  const Value& v = at(key);
  if (const auto* list = std::get_if<std::vector<int>>(&v)) return *list;
  wrongType(key, "a list of integers");
}

std::vector<int> LayerArgs::sized(const std::string& key, std::size_t count) const {
  std::vector<int> list = ints(key);
  if (list.size() != count) {
    throw Error(layer_ + ": attribute '" + key + "' must hold " + std::to_string(count) +
                " integers, got " + std::to_string(list.size()));
  }
  return list;
}

Window LayerArgs::window(const std::string& key) const {
  const std::vector<int> hw = sized(key, 2);
  return Window{hw[0], hw[1]};
}

Window LayerArgs::window(const std::string& key, Window fallback) const {
  return has(key) ? window(key) : fallback;
}

Pads LayerArgs::pads(const std::string& key, Pads fallback) const {
  if (!has(key)) return fallback;
  const std::vector<int> p = sized(key, 4);
  return Pads{p[0], p[1], p[2], p[3]};
}

namespace detail {

std::string eitherText(const LayerArgs& args, const std::string& layer, const char* key,
                       const char* what, const char* first, const char* second) {
  std::string text = args.text(key);
  if (text != first && text != second) {
    throwUnknownName(layer, what, text, std::string(first) + " or " + second);
  }
  return text;
}

}  // namespace detail

const std::vector<LayerFactory>& layerFactories() {
  // The family sources append their kinds, in the Python registry's family order (its
  // modules by name); listed here, not by static registration, so the linker cannot drop a
  // family whose classes nothing else references.
  static const std::vector<LayerFactory> all = [] {
    std::vector<LayerFactory> factories;
    detail::addConvFactories(factories);
    detail::addDenseFactories(factories);
    detail::addElementwiseFactories(factories);
    detail::addHostFactories(factories);
    detail::addImageFactories(factories);
    detail::addLayoutFactories(factories);
    detail::addNormalizeFactories(factories);
    detail::addPoolFactories(factories);
    detail::addRecurrentFactories(factories);
    detail::addReduceFactories(factories);
    return factories;
  }();
  return all;
}

const LayerFactory& layerFactory(const std::string& kind) {
  const auto& all = layerFactories();
  const auto it = std::find_if(all.begin(), all.end(),
                               [&](const LayerFactory& f) { return f.kind == kind; });
  if (it != all.end()) return *it;
  std::string known;
  for (const LayerFactory& f : all) known += (known.empty() ? "" : ", ") + f.kind;
  throw Error("unknown layer kind '" + kind + "'; known kinds: " + known);
}

std::unique_ptr<Layer> makeLayer(const std::string& kind, const std::string& name,
                                 const std::vector<Tensor*>& inputs, const LayerArgs& args) {
  const LayerFactory& factory = layerFactory(kind);
  const bool any = factory.inputs == LayerFactory::kAnyInputs;
  if (any ? inputs.empty() : static_cast<int>(inputs.size()) != factory.inputs) {
    throw Error(name + ": a " + kind + " layer takes " +
                (any ? std::string("one or more") : std::to_string(factory.inputs)) +
                " input(s), got " + std::to_string(inputs.size()));
  }
  for (const std::string& key : args.keys()) {
    if (std::find(factory.params.begin(), factory.params.end(), key) == factory.params.end()) {
      std::string takes;
      for (const std::string& p : factory.params) takes += (takes.empty() ? "" : ", ") + p;
      throw Error(name + ": a " + kind + " layer has no attribute '" + key + "'" +
                  (takes.empty() ? "; it takes none" : "; it takes " + takes));
    }
  }
  return factory.make(name, inputs, args);
}

}  // namespace pz
