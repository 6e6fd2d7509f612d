"""The enumerated attributes of layer kinds, with their C++ and SDK spellings.

Each is written once, here: the shape functions validate against it, the frontend and the
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


ACTIVE = CppEnum("Active", "cnmlActiveFunction_t", "activation", (
    Member("relu", "kRelu", "CNML_ACTIVE_RELU"),
    Member("sigmoid", "kSigmoid", "CNML_ACTIVE_SIGMOID"),
    Member("tanh", "kTanh", "CNML_ACTIVE_TANH"),
    Member("relu6", "kRelu6", "CNML_ACTIVE_RELU6"),
    Member("relu1", "kRelu1", "CNML_ACTIVE_RELU1"),   # min(max(x, 0), 1)
))

# Binary has no SDK enum: pz::BinaryLayer picks an SDK op from it and the operands' shapes.
BINARY = CppEnum("Binary", "", "Binary op", (
    Member("add", "kAdd"),
    Member("sub", "kSub"),
    Member("mul", "kMul"),
    Member("div", "kDiv"),
))

# ONNX Resize: how an output pixel maps to the input (coordinate_transformation_mode) and
# how nearest rounds (nearest_mode).
INTERP_COORDINATES = CppEnum("InterpCoordinates", "cnmlInterpCoordinateMode_t",
                             "Interp coordinates", (
    Member("half_pixel", "kHalfPixel", "CNML_INTERP_HALF_PIXEL"),
    Member("pytorch_half_pixel", "kPytorchHalfPixel", "CNML_INTERP_PYTORCH_HALF_PIXEL"),
    Member("align_corners", "kAlignCorners", "CNML_INTERP_ALIGN_CORNERS"),
    Member("asymmetric", "kAsymmetric", "CNML_INTERP_ASYMMETRIC"),
))
INTERP_ROUNDING = CppEnum("InterpRounding", "cnmlNearestNeighborRoundMode_t",
                          "Interp nearest rounding", (
    Member("round_prefer_floor", "kRoundPreferFloor", "CNML_NEAREST_ROUND_PREFER_FLOOR"),
    Member("round_prefer_ceil", "kRoundPreferCeil", "CNML_NEAREST_ROUND_PREFER_CEIL"),
    Member("floor", "kFloor", "CNML_NEAREST_FLOOR"),
    Member("ceil", "kCeil", "CNML_NEAREST_CEIL"),
))

ENUMS: tuple[CppEnum, ...] = (ACTIVE, BINARY, INTERP_COORDINATES, INTERP_ROUNDING)
