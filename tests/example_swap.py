"""One place defines the example: change it there, re-execute, and every page follows.

(The checks live here; each ``test_swap_<variant>.py`` names its variant and imports them, so
that ``pytest -n 2 --dist loadfile`` can hand the variants to different workers.)

For each variant in ``book_machinery.swap`` (other head counts and widths, other number
sizes, another accelerator), its share of the notebooks is re-executed in one reused kernel
whose example model and accelerator are the variant's. The shares cut every chapter in
three by a fixed rule (``share``): each notebook (but the measured page) runs with one other
example, each variant runs one chapter opening, and the three together cost what one whole
re-execution costs (about 45 s), which keeps make test within its three minutes.
``BOOK_SWAP_ALL=1`` runs every notebook with every variant (about 90 s more). Then:

- every notebook runs to the end (a figure whose labels leave their axes stops ``show``);
- every notebook glues the same names as before;
- every glued comparison word still agrees with the two numbers it compares;
- the numbers that have a library formula follow it for the new example (the page openings'
  tables of the example, so every variant provably reached the kernels);
- the whole book builds with the new outputs, warnings as errors (for the variant that changes
  the most: every glued name is the same in all of them, so one build shows the rest would
  pass).
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

from book_files import BOOK, glued, glued_comparisons, stored
from book_machinery import execute, swap
from book_machinery.prose import plain
from transformer_arithmetic import memory
from transformer_arithmetic.shapes import opening_table
from transformer_arithmetic.units import size_text

OPENING = {key: (lambda key: lambda m, a: opening_table(m, a)[key])(key)
           for key in ("layers", "heads", "kv_heads", "head_dim", "width", "ffn_width", "vocab",
                       "bytes_per_number", "tflops", "tbps", "acc_memory")}

FOLLOWS = {
    "training/index": OPENING,
    "why_won/index": OPENING,
    "many_chips/index": OPENING,
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


def share(variant: str, notebooks: list[Path]) -> list[Path]:
    """The notebooks ``variant`` re-executes: in each chapter (sorted, its opening first), the
    j-th notebook of the c-th chapter goes to variant (j + c) mod the chapter's variants, so
    every chapter meets every variant, and every opening (short, and the chapter's formula
    sheet) goes to every variant it is meant for; all of them under ``BOOK_SWAP_ALL=1``."""
    def meant_for(name, chapter):
        wanted = swap.VARIANTS[name].chapters
        return not wanted or chapter.name in wanted

    if os.environ.get("BOOK_SWAP_ALL") == "1":
        return [md for md in notebooks if meant_for(variant, md.parent)]
    chapters = sorted({md.parent for md in notebooks})
    mine = []
    for c, chapter in enumerate(chapters):
        names = sorted(n for n in swap.VARIANTS if meant_for(n, chapter))
        if variant not in names:
            continue
        own = sorted((md for md in notebooks if md.parent == chapter),
                     key=lambda md: (md.stem != "index", md.name))
        mine += [md for j, md in enumerate(own)   # every opening: a chapter's formula sheet
                 if md.stem == "index" or (j + c) % len(names) == names.index(variant)]
    return mine


def run_variant(variant: str, out: Path) -> dict:
    """Execute the variant's share of the notebooks in one kernel; collect outputs and
    errors."""
    copies = swap.prepare(variant, out, share(variant, execute.notebooks([])))
    errors, fresh = {}, {}
    try:
        for md in copies:
            name = str(md.relative_to(out / "book" / "chapters").with_suffix(""))
            try:
                execute.execute(md, setup=swap.setup_code(variant))
                fresh[name] = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
            except Exception:
                errors[name] = re.sub(r"\x1b\[[0-9;]*m", "", traceback.format_exc())[-2500:]
    finally:
        execute.close_kernel()
    return {"errors": errors, "fresh": fresh, "copies": copies}


@pytest.fixture(scope="module")
def variant(request, tmp_path_factory):
    """The variant the test module names (``VARIANT``), executed once for the module."""
    name = request.module.VARIANT
    out = tmp_path_factory.mktemp(f"swap-{name}")
    result = run_variant(name, out)
    result.update(name=name, out=out)
    return result


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
    assert checked or not variant["fresh"], "no glued comparison found"


def test_numbers_follow_the_library(variant):
    model, acc = swap.example_of(variant["name"])
    checked = [name for name in FOLLOWS if name in variant["fresh"]]
    if not swap.VARIANTS[variant["name"]].chapters:   # a variant of a few chapters may meet none
        assert any(name.endswith("/index") for name in checked), "no chapter opening ran"
    for name in checked:
        checks = FOLLOWS[name]
        values = glued(variant["fresh"][name])
        for key, formula in checks.items():
            assert values[key] == plain(formula(model, acc)), f"{variant['name']} {name}: {key}"


def check_the_book_builds_with_the_new_outputs(variant, tmp_path):
    """The site builds from the variant's outputs with warnings as errors (one variant runs
    it)."""
    if variant["errors"]:
        pytest.fail(f"{variant['name']}: not built, {len(variant['errors'])} notebooks did not run (see above)")
    site = tmp_path / "book"
    shutil.copytree(BOOK, site, ignore=shutil.ignore_patterns("_build", ".ipynb_checkpoints", "*.md.swp"))
    for copy in variant["copies"]:
        shutil.copy(copy.with_suffix(".ipynb"), site / copy.relative_to(variant["out"] / "book").with_suffix(".ipynb"))
    jb = Path(sys.executable).with_name("jupyter-book")
    run = subprocess.run([str(jb), "build", "-W", "-n", "--keep-going", str(site)], capture_output=True, text=True)
    assert run.returncode == 0, f"{variant['name']}: the build warned or failed:\n{run.stdout[-3000:]}\n{run.stderr[-2000:]}"
