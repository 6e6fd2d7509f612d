"""What Paleozoic knows about one layer kind, in one place.

Each kind names its wrapper class (runtime_cpp), its template snippet (templates/layers/),
its weight roles, its shape function and its cost counters. The frontend's converters
produce layers of these kinds; the registry test checks each kind has a template, a
wrapper class, a pybind binding and a kernel test.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from dataclasses import dataclass
from typing import Any, Callable

Shape = tuple[int, ...]
Attrs = dict[str, Any]
ShapeFn = Callable[[Attrs, list[Shape]], Shape]
CountFn = Callable[[Attrs, list[Shape], Shape], int]


class ShapeError(ValueError):
    """Inputs a layer kind cannot take; raised by shape functions."""


def _elements(shape: Shape) -> int:
    count = 1
    for dim in shape:
        count *= dim
    return count


def elementwise_ops(attrs: Attrs, inputs: list[Shape], output: Shape) -> int:
    return _elements(output)


@dataclass(frozen=True)
class NoAttrs:
    """The attributes of a kind that has none."""


def snake_case(name: str) -> str:
    """"BatchNorm" -> "batch_norm"."""
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


@dataclass(frozen=True, kw_only=True)
class LayerKind:
    name: str                       # the IR's op_type, e.g. "Conv"
    shape: ShapeFn
    # Where the kind lives in the wrapper, by default named after it (BatchNorm:
    # pz::BatchNormLayer, templates/layers/batch_norm.cpp.j2, registry name "batch_norm");
    # given only where a name differs.
    cpp_class: str = ""             # wrapper class in runtime_cpp
    template: str = ""              # templates/layers/<template>.cpp.j2
    binding: str = ""               # the wrapper's registry name (pz::LayerFactory::kind)
    macs: CountFn = elementwise_ops
    weight_roles: tuple[str, ...] = ()
    # An optional "bias" holds one value per output channel (axis 1): the passes fold a
    # following Scale into it.
    optional_roles: tuple[str, ...] = ()
    arity: int | None = 1           # None: any number of inputs
    # The axis of the "weight" role that indexes output channels (per-channel quantisation).
    weight_channel_axis: int = 0
    fusible: bool = True            # may join a fusion op with other layers
    # The SDK op has an int8 compute mode (int8 input and filter, int32 accumulation); in an
    # int8 block the other kinds compute in fp16.
    int8_mode: bool = False
    # The SDK has a sparse mode for the op (cnmlSparseMode_t: convolution and MLP), which
    # skips pairs of zero output-channel weights along weight_channel_axis (one group only).
    sparse_mode: bool = False
    # Why a layer of these (complete) attributes cannot use the sparse mode after all; None
    # when it can. The wrapper's layer refuses the same ones (Layer::setSparse).
    sparse_refusal: Callable[[Attrs], str | None] | None = None
    # The kind's attributes as a dataclass: names, types and defaults, written once.
    attrs: type = NoAttrs
    # Computed on the host CPU inside the session (paleozoic.ops.host), never in an F-Block
    # with other layers; such kinds are also not fusible.
    host: bool = False
    # The output's element type from the attributes and the inputs' types; None: float32.
    output_dtype: Callable[[Attrs, list[str]], str] | None = None
    # Inputs that are integer indices (GatherV2's), which a device kind may read.
    index_inputs: tuple[int, ...] = ()
    # The roles a layer of these attributes declares, when not all of config_roles (a host
    # layer's constant operand exists only when an operand is constant); None: all.
    roles_for: Callable[[Attrs], tuple[str, ...]] | None = None
    # A one-input layer's attributes on a reshape's input (shape `before`) that compute the
    # numbers it computes on the reshape's output (shape `after`), or None where no such
    # attributes exist; None here: the kind never moves before a reshape (passes/reshape.py).
    through_reshape: Callable[[Attrs, tuple[int, ...], tuple[int, ...]], Attrs | None] | None \
        = None

    def __post_init__(self) -> None:
        for field_name, derived in (("cpp_class", f"pz::{self.name}Layer"),
                                    ("template", snake_case(self.name)),
                                    ("binding", snake_case(self.name))):
            if not getattr(self, field_name):
                object.__setattr__(self, field_name, derived)

    def dtype_of(self, attrs: Attrs, inputs: list[str]) -> str:
        if self.output_dtype is None:
            return "float32"
        return self.output_dtype(self.complete_attrs(attrs), inputs)

    def sparse_refused(self, attrs: Attrs) -> str | None:
        """Why a layer of this kind with `attrs` has no sparse mode; None when it has one."""
        if not self.sparse_mode:
            return "it has no sparse mode (convolutions and fully connected layers do)"
        if self.sparse_refusal is None:
            return None
        return self.sparse_refusal(self.complete_attrs(attrs))

    def complete_attrs(self, attrs: Attrs) -> Attrs:
        """`attrs` with every default filled in (after the given ones, whose order is
        kept); an unknown or a missing required attribute is a ShapeError."""
        if self._complete(attrs):
            return dict(attrs)
        fields = self._fields
        unknown = sorted(set(attrs).difference(self._field_names))
        if unknown:
            raise ShapeError(f"{self.name} has no attribute(s) {unknown}; its attributes "
                             f"are {[f.name for f in fields]}")
        complete = dict(attrs)
        for f in fields:
            if f.name in complete:
                continue
            if f.default is dataclasses.MISSING:
                raise ShapeError(f"{self.name} needs attribute {f.name!r}")
            complete[f.name] = list(f.default) if isinstance(f.default, tuple) else f.default
        return complete

    def _complete(self, attrs: Attrs) -> bool:
        # An Operator's attributes are completed when it is made, and a measured search
        # builds hundreds of thousands of layers from them: those are not filled in again.
        names = self._field_names
        return len(attrs) == len(names) and names.issuperset(attrs)

    def output_shape(self, attrs: Attrs, inputs: list[Shape]) -> Shape:
        if self.arity is not None and len(inputs) != self.arity:
            raise ShapeError(f"{self.name} takes {self.arity} input(s), got {len(inputs)}")
        return tuple(int(d) for d in self.shape(self.complete_attrs(attrs), inputs))

    @property
    def config_roles(self) -> tuple[str, ...]:
        """The weight roles in the order the runtime layer's config() takes them."""
        return self.weight_roles + self.optional_roles

    def declared_roles(self, attrs: Attrs) -> tuple[str, ...]:
        """The weight roles a layer of these attributes declares, in config() order."""
        if self.roles_for is None:
            return self.config_roles
        wanted = self.roles_for(self.complete_attrs(attrs))
        return tuple(role for role in self.config_roles if role in wanted)

    def runtime_attrs(self, attrs: Attrs) -> Attrs:
        """The complete attributes the wrapper's factory takes: all but the fields marked
        `field(metadata={"runtime": False})` (values the frontend already folded away)."""
        complete = attrs if self._complete(attrs) else self.complete_attrs(attrs)
        return {name: complete[name] for name in self._runtime_names}

    # A measured search builds hundreds of thousands of layers: what the attribute
    # dataclass says is read once per kind.
    @functools.cached_property
    def _fields(self) -> tuple[dataclasses.Field, ...]:
        return dataclasses.fields(self.attrs)

    @functools.cached_property
    def _field_names(self) -> frozenset[str]:
        return frozenset(f.name for f in self._fields)

    @functools.cached_property
    def _runtime_names(self) -> tuple[str, ...]:
        return tuple(f.name for f in self._fields if f.metadata.get("runtime", True))

    def build_runtime(self, session: Any, name: str, attrs: Attrs, inputs: list[Any]) -> Any:
        """This layer in a paleozoic._runtime.Session (without its weights), built by the
        wrapper's layer registry from the attributes by name (Session.<binding>)."""
        build = getattr(session, self.binding)
        given = [list(inputs)] if self.arity is None else list(inputs)
        return build(name, *given, **self.runtime_attrs(attrs))


def nchw_input(inputs: list[Shape], kind: str) -> tuple[int, int, int, int]:
    """The one input of a kind that takes NCHW, or ShapeError."""
    (x,) = inputs
    if len(x) != 4:
        raise ShapeError(f"{kind} needs an NCHW input, got shape {x}")
    n, c, h, w = x
    return n, c, h, w


def elements(shape: Shape) -> int:
    return _elements(shape)


def reshaped(kind: str, x: Shape, shape: Shape) -> Shape:
    """`shape`, if it holds as many elements as `x`, or ShapeError."""
    if elements(shape) != elements(x):
        raise ShapeError(f"{kind} from {x} to {shape} changes the element count")
    return shape
