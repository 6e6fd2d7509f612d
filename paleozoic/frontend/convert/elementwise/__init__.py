"""Converters of the element-wise family (ops/elementwise.py's kinds): activations and unary
math, arithmetic of two tensors or with constants, and comparisons and logic. Importing the
package registers them."""

from __future__ import annotations

from paleozoic.frontend.convert.elementwise import activation, arithmetic, compare  # noqa: F401
