"""How the calculator writes a size, a time and a table (the report, the splits and
the plans alike)."""

from __future__ import annotations

from collections.abc import Sequence

from transformer_arithmetic.units import KIB, size_text

__all__ = ["bytes_text", "seconds_text", "table"]


def bytes_text(n: float) -> str:
    """A byte count as the tables write it: '1.50 GiB', '512 B'."""
    return size_text(n, ",.2f", "B") if n >= KIB else f"{n:,.0f} B"


def seconds_text(s: float) -> str:
    """Seconds as the tables write them: '1.20 s', '3.40 ms', '56.0 us'."""
    if s >= 1:
        return f"{s:,.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:,.2f} ms"
    return f"{s * 1e6:,.1f} us"


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """Right-aligned columns under their headers, indented by two spaces."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = ["  " + line, "  " + "  ".join("-" * w for w in widths)]
    out += ["  " + "  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in rows]
    return out
