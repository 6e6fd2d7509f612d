"""Errors with documented exit codes; each message names the file, node or layer and the fix."""

from __future__ import annotations


class PaleozoicError(Exception):
    exit_code = 2


class ModelLoadError(PaleozoicError):
    """The file is missing, not ONNX, truncated, or fails the ONNX checker."""

    exit_code = 2


class UnsupportedModelError(PaleozoicError):
    """Operators, attributes or patterns Paleozoic cannot map to the SDK."""

    exit_code = 3


class PlanMismatchError(PaleozoicError):
    """A plan that does not fit the model."""

    exit_code = 4


class BuildError(PaleozoicError):
    """cmake or g++ failed on an emitted session."""

    exit_code = 5


class OutputExistsError(PaleozoicError):
    """Refusing to overwrite a non-empty output folder without --force."""

    exit_code = 6


class VerifyError(PaleozoicError):
    """The session ran but its outputs differ from onnxruntime's."""

    exit_code = 1


class OptimizerError(PaleozoicError):
    """An optimizer that cannot be loaded, fails, modifies the model, or returns a plan
    that does not fit."""

    exit_code = 7


class SessionRunError(PaleozoicError):
    """An emitted session exited with an error (its message names the layer or file)."""

    exit_code = 8


class PrecisionUnavailableError(PaleozoicError):
    """A plan computes a layer in int8 but the session folder has no quantisation
    parameters for it (compiled without --calibration); names the block and layer."""

    exit_code = 9


class BudgetError(PaleozoicError):
    """`debug --fix` cannot meet the accuracy budget with any plan it may write."""

    exit_code = 10


class DeviceMemoryError(PaleozoicError):
    """A plan whose weights and activation arena do not fit the device profile's memory;
    says how many bytes it needs and has."""

    exit_code = 11
