// What is done with an enumerated knob's table, once for every enum: its names, the choices
// a message lists, parsing a name and the SDK value. The tables themselves, one per enum,
// are generated into enums.h (paleozoic.codegen.cpp_enums), which includes this header.
#ifndef PALEOZOIC_ENUM_TABLE_H_
#define PALEOZOIC_ENUM_TABLE_H_

#include <cstddef>
#include <iterator>
#include <string>
#include <string_view>

namespace pz {

// Specialised for each enum E in enums.h: `what` E is (for messages: "activation"), its
// `names` in member order (member i is the enumerator of value i; the IR's and plan's
// spelling, what the Python side writes) and, for the enums the SDK takes, the `sdk` value
// of each member. Other types have no members, so the functions below do not apply to them.
template <typename E>
struct EnumTable {};

template <typename E>
using NamesOf = decltype(EnumTable<E>::names);

// The name of `v`: "" for a value outside the enum.
template <typename E, typename = NamesOf<E>>
const char* toString(E v) {
  const auto i = static_cast<std::size_t>(v);
  return i < std::size(EnumTable<E>::names) ? EnumTable<E>::names[i] : "";
}

// The names as a message lists them: "fp32, fp16 or int8".
template <typename E>
std::string enumChoices() {
  const std::size_t n = std::size(EnumTable<E>::names);
  std::string out = EnumTable<E>::names[0];
  for (std::size_t i = 1; i < n; ++i) {
    out += i + 1 < n ? ", " : " or ";
    out += EnumTable<E>::names[i];
  }
  return out;
}

namespace detail {
// Throws pz::Error "<where>: unknown <what> '<text>'; use <choices>" (without "<where>: "
// when `where` is empty).
[[noreturn]] void throwUnknownName(std::string_view where, const char* what,
                                   std::string_view text, const std::string& choices);
}  // namespace detail

// The member named `text`; pz::Error naming the choices where there is none, after `where`
// (the layer's name, say) when given.
template <typename E>
E parseEnum(std::string_view text, std::string_view where = {}) {
  for (std::size_t i = 0; i < std::size(EnumTable<E>::names); ++i) {
    if (text == EnumTable<E>::names[i]) return static_cast<E>(i);
  }
  detail::throwUnknownName(where, EnumTable<E>::what, text, enumChoices<E>());
}

// The SDK value the wrapper passes on for `v`; a value outside the enum maps as its last
// member does.
template <typename E, typename = decltype(EnumTable<E>::sdk)>
auto sdkValue(E v) {
  const auto i = static_cast<std::size_t>(v);
  const std::size_t last = std::size(EnumTable<E>::sdk) - 1;
  return EnumTable<E>::sdk[i < last ? i : last];
}

}  // namespace pz

#endif  // PALEOZOIC_ENUM_TABLE_H_
