"""Enumerated attributes of layer kinds, with their C++ and SDK spellings.

Each is written once, as a CppEnum in its kind's family module (listed in the module's
ENUMS, collected by paleozoic.ops): the shape functions validate against it, the frontend and the
templates spell it from it, and runtime_cpp/include/paleozoic/enums.h is generated from it
(paleozoic.codegen.cpp_enums; tests/codegen/test_cpp_enums.py fails if the checked-in
header differs), so the wrapper's enums, the pybind module's name lookup and the mapping to
SDK values cannot drift from Python.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Member:
    value: str      # the IR attribute value (ONNX's spelling)
    cpp: str        # the pz:: enumerator
    sdk: str = ""   # the SDK enumerator it stands for ("" where there is none)


@dataclass(frozen=True)
class CppEnum:
    """An IR attribute with a fixed set of values, each with its C++ spellings."""

    cpp_name: str          # pz::<cpp_name>
    sdk_type: str          # the SDK enum type the wrapper maps it to ("" where none)
    what: str              # for messages: "activation", ...
    members: tuple[Member, ...]

    @property
    def values(self) -> tuple[str, ...]:
        return tuple(m.value for m in self.members)

    def __contains__(self, value: object) -> bool:
        return value in self.values

    def member(self, value: str) -> Member:
        for m in self.members:
            if m.value == value:
                return m
        raise KeyError(f"{self.what} {value!r} is not one of {', '.join(self.values)}")

    def cpp(self, value: str) -> str:
        return self.member(value).cpp


# Comparisons and logic, in Binary (the device's, on floats) and HostArith (the host's, on
# integers) alike: 1 where true, 0 where not; the logic ops take any nonzero value (nan
# included) as true.
TRUTH_OPS = (
    Member("equal", "kEqual"),
    Member("not_equal", "kNotEqual"),
    Member("less", "kLess"),
    Member("less_equal", "kLessEqual"),
    Member("greater", "kGreater"),
    Member("greater_equal", "kGreaterEqual"),
    Member("and", "kAnd"),
    Member("or", "kOr"),
    Member("xor", "kXor"),
)
