"""One place defines the example: change it there, re-execute, and every page follows.

(The checks live here; each ``test_swap_<variant>.py`` runs them for one variant, so that
``pytest -n 2 --dist loadfile`` can hand the variants to different workers.)

For each variant in ``scripts/swap_example.py`` (other head counts and widths, other number
sizes, another accelerator), the library is copied with ``EXAMPLE_MODEL`` and
``EXAMPLE_ACCELERATOR`` replaced, every notebook (but the measured page) is re-executed
against the copy in one reused kernel, and then:

- every notebook runs to the end (a figure whose labels leave their axes stops ``show``);
- every notebook glues the same names as before;
- every glued comparison word still agrees with the two numbers it compares;
- the numbers that have a library formula follow it for the new example (the page openings'
  tables of the example, so every variant provably reached the kernels);
- the whole book builds with the new outputs, warnings as errors (for the variant that changes
  the most: every glued name is the same in all of them, so one build shows the rest would pass).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import traceback
from pathlib import Path

import nbformat
import pytest

import transformer_arithmetic as ta
from book_files import BOOK, CHAPTERS, ROOT, glued, glued_comparisons, stored
from transformer_arithmetic import memory
from transformer_arithmetic.prose import opening_table, plain, size_text

sys.path.insert(0, str(ROOT / "scripts"))
import execute  # noqa: E402
import swap_example  # noqa: E402

VARIANTS = list(swap_example.VARIANTS)


def example_of(variant: str) -> tuple[ta.ModelShape, ta.Accelerator]:
    """The variant's example model and accelerator, built here from the same text."""
    names = {"ModelShape": ta.ModelShape, "Accelerator": ta.Accelerator, "GIB": ta.GIB}
    exec(swap_example.VARIANTS[variant], names)
    return names["EXAMPLE_MODEL"], names["EXAMPLE_ACCELERATOR"]


OPENING = {key: (lambda key: lambda m, a: opening_table(m, a)[key])(key)
           for key in ("layers", "heads", "kv_heads", "head_dim", "width", "ffn_width", "vocab",
                       "bytes_per_number", "tflops", "tbps", "acc_memory")}

FOLLOWS = {
    "training/index": OPENING,
    "why_won/index": OPENING,
    "training/04_kv_cache": {
        "per_token": lambda m, a: memory.kv_bytes_per_token(m),
        "weights_size": lambda m, a: size_text(memory.weight_bytes(m)),
        "mid_cache_size": lambda m, a: size_text(memory.kv_cache_bytes(m, 8192)),
        "most_total_size": lambda m, a: size_text(memory.serving_bytes(m, 2048, 64)),
        "layers": lambda m, a: m.layers,
        "kv_heads": lambda m, a: m.kv_heads,
    },
}
"""Glued numbers with a library formula: {notebook: {key: value for (model, accelerator)}}."""


def run_variant(variant: str, out: Path) -> dict:
    """Execute every notebook against the variant in one kernel; collect outputs and errors."""
    names = [p for p in execute.notebooks([])]
    copies = swap_example.prepare(variant, out, names)
    saved = dict(os.environ)
    os.environ["PYTHONPATH"] = str(out / "lib")
    errors, fresh = {}, {}
    try:
        for md in copies:
            name = str(md.relative_to(out / "book" / "chapters").with_suffix(""))
            try:
                execute.execute(md)
                fresh[name] = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
            except Exception:
                errors[name] = re.sub(r"\x1b\[[0-9;]*m", "", traceback.format_exc())[-2500:]
    finally:
        os.environ.clear()
        os.environ.update(saved)
        execute.close_kernel()
    return {"errors": errors, "fresh": fresh, "copies": copies}


def make_tests(name: str, build: bool = False) -> dict:
    """The fixture and the tests below, bound to the variant ``name``, for a test module's globals
    (the site build, the slowest check, only where ``build`` is true)."""

    @pytest.fixture(scope="module")
    def variant(tmp_path_factory):
        out = tmp_path_factory.mktemp(f"swap-{name}")
        result = run_variant(name, out)
        result.update(name=name, out=out)
        return result

    tests = {k: v for k, v in globals().items() if k.startswith("test_")
             and (build or k != "test_the_book_builds_with_the_new_outputs")}
    return {"variant": variant, **tests}


def test_every_notebook_runs_with_the_new_example(variant):
    assert not variant["errors"], f"{variant['name']}: " + "\n\n".join(
        f"{name}:\n{text}" for name, text in variant["errors"].items())


def test_the_same_names_are_glued(variant):
    for name, nb in variant["fresh"].items():
        before, after = glued(stored(name)), glued(nb)
        assert set(before) == set(after), f"{variant['name']} {name}: glued names differ: " \
                                          f"{sorted(set(before) ^ set(after))}"


def test_comparison_words_agree_with_their_numbers(variant):
    checked = 0
    for name, nb in variant["fresh"].items():
        for key, (word, first, second, words) in glued_comparisons(nb).items():
            expected = words["more"] if first > second else words["less"] if first < second else words["same"]
            assert word == expected, f"{variant['name']} {name}: {key} says {word!r} for {first} against {second}"
            checked += 1
    assert checked, "no glued comparison found"


def test_numbers_follow_the_library(variant):
    model, acc = example_of(variant["name"])
    for name, checks in FOLLOWS.items():
        values = glued(variant["fresh"][name])
        for key, formula in checks.items():
            assert values[key] == plain(formula(model, acc)), f"{variant['name']} {name}: {key}"


def test_the_book_builds_with_the_new_outputs(variant, tmp_path):
    if variant["errors"]:
        pytest.fail(f"{variant['name']}: not built, {len(variant['errors'])} notebooks did not run (see above)")
    site = tmp_path / "book"
    shutil.copytree(BOOK, site, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints", "*.md.swp"))
    for copy in variant["copies"]:
        shutil.copy(copy.with_suffix(".ipynb"), site / copy.relative_to(variant["out"] / "book").with_suffix(".ipynb"))
    jb = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run([str(jb), "build", "-W", "-n", "--keep-going", str(site)], capture_output=True, text=True)
    assert run.returncode == 0, f"{variant['name']}: the build warned or failed:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
