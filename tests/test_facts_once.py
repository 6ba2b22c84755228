"""Each fact once: no real chip's, link's or published model's figure is typed in the book's
code or in the library outside ``published``, which states each with its source.

The figures are read from ``published`` itself: every chip's and link's rate (operations or
bytes a second, at least 10^9), a memory typed in decimal gigabytes (``80 * 10**9``), and the
sizes of every published config that no round number explains (widths, feed-forward widths and
vocabularies that are not powers of two: 14,336 and 128,256 are Llama 3's, 4,096 is anyone's).
A page or a module that needs one reads it (``published.chip("h100-sxm")``,
``shipped_shape("llama-3-8b")``).
"""
import re
from functools import lru_cache
from pathlib import Path

import pytest

import published

ROOT = Path(__file__).resolve().parent.parent
CODE_CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)
DECIMAL_GB = re.compile(r"\b\d+(?:\.\d+)?\s*\*\s*10\s*\*\*\s*9\b")
SHAPE_FIELDS = ("hidden_size", "intermediate_size", "moe_intermediate_size", "vocab_size")


@lru_cache(maxsize=1)
def rates() -> frozenset[float]:
    """Every published rate a chip or link has, in operations or bytes a second."""
    out = set()
    for c in published.chips():
        out |= {c.bf16_flops_per_s, c.bytes_per_s} | ({c.fp8_flops_per_s} - {None})
    for f in published.links():
        out |= {f.bytes_per_s_each_way, f.both_ways_bytes_per_s}
    return frozenset(out)


@lru_cache(maxsize=1)
def shape_numbers() -> frozenset[int]:
    """Sizes of published configs that are not powers of two (so no round number)."""
    out = set()
    for name in published.model_names():
        cfg = published.model_config(name)
        for key in SHAPE_FIELDS:
            v = cfg.get(key)
            if isinstance(v, int) and v >= 1000 and v & (v - 1):
                out.add(v)
    return frozenset(out)


NUMBER = re.compile(r"(?<![\w.])\d[\d_]*(?:\.\d+)?(?:[eE][+-]?\d+)?(?![\w.])")


def literals(code: str) -> list[tuple[int, float]]:
    """(line, value) of every number written in ``code``, comments and strings included
    (a figure typed in a docstring is typed too)."""
    return [(code.count("\n", 0, m.start()) + 1, float(m.group().replace("_", "")))
            for m in NUMBER.finditer(code)]


def typed_facts(code: str) -> list[str]:
    """What ``code`` types of the published world: each line and the figure it holds."""
    found = [f"line {code[:m.start()].count(chr(10)) + 1}: {m.group()} (memory in decimal GB)"
             for m in DECIMAL_GB.finditer(code)]
    known, sizes = rates(), shape_numbers()
    for line, v in literals(code):
        if v >= 1e9 and any(abs(v - r) <= 1e-9 * r for r in known):
            found.append(f"line {line}: {v:g} (a published chip's or link's rate)")
        elif v == int(v) and int(v) in sizes:
            found.append(f"line {line}: {int(v):,} (a published model's size)")
    return found


def test_the_scan_finds_what_it_is_for():
    assert typed_facts("h100 = Accelerator(989.4e12, 3.35e12, 80 * 10**9)") == [
        "line 1: 80 * 10**9 (memory in decimal GB)",
        "line 1: 9.894e+14 (a published chip's or link's rate)",
        "line 1: 3.35e+12 (a published chip's or link's rate)"]
    assert typed_facts("m = ModelShape(ffn_width=14336, vocab=128256, width=4096)") == [
        "line 1: 14,336 (a published model's size)", "line 1: 128,256 (a published model's size)"]
    assert typed_facts("B, n = 8, 4096\nrate = 100e12") == []


CHAPTER_TEXTS = sorted((ROOT / "book" / "chapters").glob("*/*.md"))
MODULES = sorted(p for p in (ROOT / "lib").rglob("*.py") if "published" not in p.parts)


@pytest.mark.parametrize("md", CHAPTER_TEXTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_no_chapter_types_a_published_figure(md):
    text = md.read_text(encoding="utf-8")
    found = [f"cell {i}, {fact}" for i, cell in enumerate(CODE_CELL.findall(text))
             for fact in typed_facts(cell)]
    assert not found, f"{md.name} types published figures (read them from published): {found}"


def test_no_module_outside_published_types_a_published_figure():
    found = [f"{p.relative_to(ROOT)} {fact}" for p in MODULES
             for fact in typed_facts(p.read_text(encoding="utf-8"))]
    assert not found, found
