"""Enumerated knobs with their C++ and SDK spellings: layer kinds' attributes, and the
session's own (precision, element type, data-preprocess strategy).

Each is written once, as a CppEnum: a layer attribute's in its kind's family module (listed
in the module's ENUMS, collected by paleozoic.ops), a plan knob's in paleozoic/ir/plan.py
(its ENUMS). The shape functions and plan validation check against it, the frontend, the
CLI and the templates spell it from it, and runtime_cpp/include/paleozoic/enums.h is
generated from it (paleozoic.codegen.cpp_enums; tests/codegen/test_cpp_enums.py fails if
the checked-in header differs), so the wrapper's enums, their names and parsing in C++ and
the mapping to SDK values cannot drift from Python.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    value: str      # the IR attribute value (ONNX's spelling)
    cpp: str = ""   # the pz:: enumerator; by default k + the value in CamelCase
    sdk: str = ""   # the SDK enumerator it stands for ("" where there is none)

    def __post_init__(self) -> None:
        if not self.cpp:
            object.__setattr__(self, "cpp", "k" + "".join(
                part.capitalize() for part in self.value.split("_")))


@dataclass(frozen=True)
class CppEnum:
    """An IR attribute or session knob with a fixed set of values, each with its C++
    spellings."""

    cpp_name: str          # pz::<cpp_name>
    sdk_type: str          # the SDK enum type the wrapper maps it to ("" where none)
    what: str              # for messages, in C++'s too: "unknown <what> 'x'; use ..."
    members: tuple[Member, ...]
    # Named C++ functions besides the generic pz::toString / pz::parseEnum<E> (enum_table.h),
    # for the knobs whose names C++ code already spells: "precisionName", "parsePrecision".
    name_function: str = ""
    parse_function: str = ""

    @classmethod
    def of(cls, cpp_name: str, what: str, *values: str) -> CppEnum:
        """An enum the SDK does not take, its enumerators named by the default rule."""
        return cls(cpp_name, "", what, tuple(Member(v) for v in values))

    @classmethod
    def sdk_prefixed(cls, cpp_name: str, sdk_type: str, what: str, sdk_prefix: str,
                     *values: str) -> CppEnum:
        """An enum whose SDK enumerators follow cnml.h's rule: `sdk_prefix` + the value in
        upper case (CNML_ACTIVE_ + relu6 is CNML_ACTIVE_RELU6)."""
        return cls(cpp_name, sdk_type, what,
                   tuple(Member(v, sdk=sdk_prefix + v.upper()) for v in values))

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(m.value for m in self.members)

    def __contains__(self, value: object) -> bool:
        return value in self.values

    def member(self, value: str) -> Member:
        found = next((m for m in self.members if m.value == value), None)
        if found is None:
            raise KeyError(f"{self.what} {value!r} is not one of {', '.join(self.values)}")
        return found

    def cpp(self, value: str) -> str:
        return self.member(value).cpp


# Comparisons and logic, in Binary (the device's, on floats) and HostArith (the host's, on
# integers) alike: 1 where true, 0 where not; the logic ops take any nonzero value (nan
# included) as true.
TRUTH_OPS = (
    Member("equal"),
    Member("not_equal"),
    Member("less"),
    Member("less_equal"),
    Member("greater"),
    Member("greater_equal"),
    Member("and"),
    Member("or"),
    Member("xor"),
)
