"""Putting computed numbers into the prose: every number on a page is glued from code.

A notebook states each number once. ``record(name=value, ...)`` glues every value under
its name, for ``{glue:text}`name:format``` in the text and the captions, and prints the
same values in one fixed format, so the cell's output shows what the page will say.

Words that depend on numbers are computed too: ``compare(a, b)`` gives "more" or "less"
(or any pair of words) from the two values, and carries them along so a test can check
that the word still fits the numbers when the example model changes. (Sizes in bytes are
written by ``transformer_arithmetic.units.size_text``.)
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

__all__ = [
    "plain",
    "record",
    "compare",
    "Comparison",
    "listing",
    "plural",
    "glue",
    "SIGNIFICANT_DIGITS",
]

SIGNIFICANT_DIGITS = 12
"""Glued floats keep this many significant digits: far more than any page shows, and few
enough that rounding differences between processors (in the last of about 16) never
reach the stored text."""


GLUE_PREFIX = "application/papermill.record/"
"""The mime-type prefix under which myst-nb finds a glued value in a notebook's
outputs."""


def glue(name: str, value, display: bool = False) -> None:
    """Store ``value`` in the notebook's outputs under ``name`` for ``{glue:...}`` on
    the page.

    This is myst-nb's documented glue format (a display output whose metadata carries
    ``scrapbook: {name, mime_prefix}``), written with IPython alone: importing myst_nb's
    own ``glue`` pulls in nbformat and jsonschema, which cost seconds in every kernel.
    With ``display=True`` the value is also shown in the notebook (figures use this)."""
    from IPython.core.formatters import format_display_data
    from IPython.display import display as show_output

    bundle, metadata = format_display_data(value)
    prefix = "" if display else GLUE_PREFIX
    metadata["scrapbook"] = {"name": name, "mime_prefix": prefix}
    show_output(
        {prefix + mime: data for mime, data in bundle.items()},
        raw=True,
        metadata=metadata,
    )


def plain(value):
    """``value`` as plain Python (int, float rounded to ``SIGNIFICANT_DIGITS``, str,
    bool or a list of those): glue stores numpy scalars badly, and a float's last digits
    depend on the processor that computed it."""
    if isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        v = float(value)
        if not math.isfinite(v):
            raise ValueError(f"cannot glue a number that is not finite: {value!r}")
        return float(f"{v:.{SIGNIFICANT_DIGITS}g}")
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist"):  # a numpy array
        return plain(value.tolist())
    raise TypeError(
        f"can only glue numbers, strings and lists of them, got {type(value).__name__}"
    )


class Comparison(str):
    """A word chosen by comparing two numbers (``compare``); the numbers travel with
    it."""

    first: float
    second: float

    def __new__(
        cls,
        word: str,
        first: float,
        second: float,
        more: str,
        less: str,
        same: str | None,
    ) -> "Comparison":
        obj = super().__new__(cls, word)
        obj.first, obj.second = plain(first), plain(second)
        obj.more, obj.less, obj.same = more, less, same
        return obj

    def _repr_mimebundle_(self, include=None, exclude=None):
        """Shown (and glued) as the word; the two numbers ride in the output's
        metadata."""
        return {"text/plain": repr(str(self))}, {
            "comparison": {
                "first": self.first,
                "second": self.second,
                "more": self.more,
                "less": self.less,
                "same": self.same,
            }
        }


def compare(
    first: float,
    second: float,
    more: str = "more",
    less: str = "less",
    same: str | None = None,
) -> Comparison:
    """The word that says how ``first`` stands to ``second``: ``more`` if larger,
    ``less`` if smaller, ``same`` if equal (an equal pair is an error when no ``same``
    word is given)."""
    a, b = plain(first), plain(second)
    if a == b and same is None:
        raise ValueError(
            f"compare({a!r}, {b!r}): the two values are equal and no word for 'same' "
            "was given"
        )
    word = more if a > b else less if a < b else same
    return Comparison(word, a, b, more, less, same)


def _shown(value) -> str:
    """How ``record`` prints a value: whole numbers with thousands separators, other
    numbers to six significant digits, words as they are."""
    if isinstance(value, str):
        return str(value)
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return "[" + ", ".join(_shown(v) for v in value) + "]"


def record(**values) -> None:
    """Glue each keyword's value under its name (for ``{glue:text}`name:format``` in the
    prose) and print every value, one per line, in a fixed format."""
    if not values:
        raise ValueError("record() needs at least one name=value")
    width = max(len(k) for k in values)
    lines = []
    for key, value in values.items():
        kept = value if isinstance(value, Comparison) else plain(value)
        glue(key, kept, display=False)
        lines.append(f"{key:<{width}}  {_shown(kept)}")
    print("\n".join(lines))


def listing(items: Sequence[str], last: str = "and") -> str:
    """Words joined as in a sentence: 'a', 'a and b', 'a, b and c'."""
    items = [str(i) for i in items]
    if not items:
        raise ValueError("listing() needs at least one item")
    return (
        items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {last} " + items[-1]
    )


def plural(n: int, word: str, many: str | None = None) -> str:
    """A count with its noun: '1 head', '12 heads', '1,024 tokens' (``many`` for
    irregular plurals)."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
