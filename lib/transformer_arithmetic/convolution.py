"""How far a stack of convolutions can see: plain filters and filters with doubling gaps."""
from __future__ import annotations

from ._checks import count

__all__ = ["receptive_field", "layers_to_span", "dilated_receptive_field", "dilated_layers_to_span"]


def _kernel(kernel: int) -> int:
    k = count("kernel", kernel, minimum=1)
    if k < 2:
        raise ValueError(f"a filter of width {k} never widens what a position sees; use kernel >= 2")
    return k


def receptive_field(kernel: int, layers: int) -> int:
    """Positions one output sees after ``layers`` filters of width ``kernel``: 1 + L(k - 1)."""
    return 1 + count("layers", layers) * (_kernel(kernel) - 1)


def layers_to_span(kernel: int, span: int) -> int:
    """Fewest plain layers whose receptive field covers ``span`` positions."""
    k, s = _kernel(kernel), count("span", span, minimum=1)
    return -(-(s - 1) // (k - 1))


def dilated_receptive_field(kernel: int, layers: int) -> int:
    """Positions seen after ``layers`` filters whose gaps double each layer (1, 2, 4, ...)."""
    return 1 + (_kernel(kernel) - 1) * (2 ** count("layers", layers) - 1)


def dilated_layers_to_span(kernel: int, span: int) -> int:
    """Fewest doubling-gap layers whose receptive field covers ``span`` positions."""
    k, s = _kernel(kernel), count("span", span, minimum=1)
    layers = 0
    while dilated_receptive_field(k, layers) < s:
        layers += 1
    return layers
