"""Units: binary sizes of memory (KiB, MiB, GiB) and the rates of a chip, as written in
the book."""

from __future__ import annotations

__all__ = [
    "KIB", "MIB", "GIB", "size_unit", "size_text", "rates_text", "power_text"
]

KIB = 1024
MIB = 1024**2
GIB = 1024**3


def size_unit(nbytes: float) -> tuple[str, int]:
    """The binary unit ``size_text`` writes ``nbytes`` in, and its size in bytes:
    ('MiB', 1048576) for 768 MiB. An axis that shows several sizes takes its one unit
    from the largest of them."""
    if nbytes < 0:
        raise ValueError(f"nbytes must not be negative, got {nbytes!r}")
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if nbytes >= scale:
            return unit, scale
    return "bytes", 1


def size_text(nbytes: float, spec: str = ",.4g", byte_unit: str = "bytes") -> str:
    """A byte count in the largest binary unit that keeps it at 1 or more: '48 MiB',
    '1.5 KiB', '12 GiB'. ``spec`` formats the number (the calculator's tables use
    ',.2f'); counts under 1 KiB use ``byte_unit``."""
    unit, scale = size_unit(nbytes)
    return (
        f"{nbytes / scale:{spec}} {unit}"
        if scale > 1
        else f"{nbytes:{spec}} {byte_unit}"
    )


def rates_text(flops_per_s: float, bytes_per_s: float) -> str:
    """A chip's two rates in the units engineers read: '100 TFLOP/s, 1 TB/s'."""
    return f"{flops_per_s / 1e12:.4g} TFLOP/s, {bytes_per_s / 1e12:.4g} TB/s"


_SUPERSCRIPTS = str.maketrans(
    "-0123456789",
    "\u207b\u2070\u00b9\u00b2\u00b3\u2074\u2075\u2076\u2077\u2078\u2079",
)


def power_text(value: float, digits: int = 3) -> str:
    """A large count as the book writes it, ``digits`` significant: '1.40 × 10¹⁹'."""
    if not value > 0:
        raise ValueError(f"value must be positive, got {value!r}")
    mantissa, exponent = f"{value:.{digits - 1}e}".split("e")
    return f"{mantissa} \u00d7 10" + str(int(exponent)).translate(_SUPERSCRIPTS)
