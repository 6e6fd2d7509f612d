// The factories of the host layer kinds (layers_host.h), by kind name: their arguments and
// inputs.
#include "detail.h"

namespace pz {

namespace detail {

namespace {

ElementType elementTypeOf(const std::string& layer, const std::string& name) {
  return parseEnum<ElementType>(name, layer);
}

// A value written as the text `text`, not a number.
bool isTextValue(const LayerArgs& a, const char* key, const char* text) {
  try {
    return a.text(key) == text;
  } catch (const Error&) {
    return false;
  }
}

// A value written as the text "input" (the next tensor input), not a number.
bool isInputValue(const LayerArgs& a, const char* key) { return isTextValue(a, key, "input"); }

}  // namespace

void addHostFactories(std::vector<LayerFactory>& factories) {
  using Inputs = std::vector<Tensor*>;
  factories.push_back({"host_cast", 1, {"to", "shape", "wrap"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const std::vector<int> shape =
                             a.has("shape") ? a.ints("shape") : std::vector<int>{};
                         return std::make_unique<HostCastLayer>(
                             name, *in[0], elementTypeOf(name, a.text("to")), shape,
                             a.integer("wrap", 0));
                       }});
  factories.push_back({"host_select", 1, {"test", "shape", "then", "otherwise"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const std::string test = a.text("test");
                         if (test != "nonzero" && test != "isnan") {
                           throw Error(name + ": test '" + test + "' is not nonzero or isnan");
                         }
                         // A number, or "x": the input value itself.
                         auto value = [&](const char* key) -> std::optional<float> {
                           try {
                             if (a.text(key) == "x") return std::nullopt;
                           } catch (const Error&) {
                           }
                           return static_cast<float>(a.real(key, 0.0));
                         };
                         return std::make_unique<HostSelectLayer>(
                             name, *in[0], test == "isnan" ? HostTest::kIsNan : HostTest::kNonZero,
                             a.ints("shape"), value("then"), value("otherwise"));
                       }});
  factories.push_back({"host_where", LayerFactory::kAnyInputs, {"shape", "then", "otherwise"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         // A number, or "input": the next tensor input.
                         std::size_t next = 1;
                         auto value = [&](const char* key) -> HostOperand {
                           if (!isInputValue(a, key)) return a.real(key, 0.0);
                           if (next >= in.size()) {
                             throw Error(name + ": " + key + " reads a tensor input, and " +
                                         "there is none left");
                           }
                           return *in[next++];
                         };
                         if (in.empty()) throw Error(name + ": no condition input");
                         const HostOperand then = value("then"), otherwise = value("otherwise");
                         if (next != in.size()) {
                           throw Error(name + ": " + std::to_string(in.size()) + " inputs, " +
                                       "but the values read " + std::to_string(next - 1));
                         }
                         return std::make_unique<HostWhereLayer>(name, *in[0], then, otherwise,
                                                                 a.ints("shape"));
                       }});
  factories.push_back({"host_arith", LayerFactory::kAnyInputs,
                       {"op", "to", "shape", "a", "b", "constant_shape"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const auto op = parseEnum<HostArith>(a.text("op"), name);
                         std::size_t next = 0;
                         auto operand = [&](const char* key) -> HostOperand {
                           if (isTextValue(a, key, "constant")) {
                             return HostConstant{a.ints("constant_shape")};
                           }
                           if (!isInputValue(a, key)) return a.real(key, 0.0);
                           if (next >= in.size()) {
                             throw Error(name + ": " + key + " reads a tensor input, and " +
                                         "there is none left");
                           }
                           return *in[next++];
                         };
                         const HostOperand x = operand("a"), y = operand("b");
                         if (next != in.size()) {
                           throw Error(name + ": " + std::to_string(in.size()) + " inputs, " +
                                       "but the operands read " + std::to_string(next));
                         }
                         return std::make_unique<HostArithLayer>(
                             name, x, y, op, a.ints("shape"), elementTypeOf(name, a.text("to")));
                       }});
  factories.push_back({"host_topk", 1, {"axis", "k", "output", "largest"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostTopKLayer>(
                             name, *in[0], a.integer("axis"), a.integer("k"),
                             parseEnum<TopKOutput>(a.text("output"), name),
                             a.flag("largest", true));
                       }});
  factories.push_back({"host_gather_elements", 2, {"axis"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostGatherElementsLayer>(
                             name, *in[0], *in[1], a.integer("axis"));
                       }});
  factories.push_back({"host_grid_sample", LayerFactory::kAnyInputs,
                       {"mode", "padding_mode", "align_corners", "grid", "grid_shape"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         const auto mode = parseEnum<GridSampleMode>(a.text("mode"), name);
                         const auto padding =
                             parseEnum<GridSamplePadding>(a.text("padding_mode"), name);
                         const bool align = a.flag("align_corners", false);
                         if (isTextValue(a, "grid", "constant")) {
                           return std::make_unique<HostGridSampleLayer>(
                               name, *in.at(0), HostConstant{a.ints("grid_shape")}, mode,
                               padding, align);
                         }
                         if (in.size() != 2) throw Error(name + ": takes data and a grid");
                         return std::make_unique<HostGridSampleLayer>(name, *in[0], *in[1],
                                                                      mode, padding, align);
                       }});
  factories.push_back({"host_gather", 2, {"axis"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostGatherLayer>(name, *in[0], *in[1],
                                                                  a.integer("axis"));
                       }});
  factories.push_back({"host_argmax", 1, {"axis", "keepdims", "select_last_index"},
                       [](const std::string& name, const Inputs& in,
                          const LayerArgs& a) -> std::unique_ptr<Layer> {
                         return std::make_unique<HostArgMaxLayer>(
                             name, *in[0], a.integer("axis"), a.flag("keepdims", true),
                             a.flag("select_last_index", false));
                       }});
}

}  // namespace detail

}  // namespace pz
