"""One place defines the example: change it there, re-execute, and every dependent number follows.

The test copies the library to a scratch folder, changes only the definition of
EXAMPLE_MODEL (32 layers, 8 key-value heads instead of 24 and 16), re-executes a sample of
notebooks against that copy, and checks that the numbers glued into the prose changed
exactly as the library says they should, and that no glued number is left stale.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import nbformat
import pytest

import transformer_arithmetic as ta
from transformer_arithmetic import memory
from book_files import CHAPTERS, ROOT

SAMPLE = ["training/04_kv_cache", "training/06_context_window", "why_won/04_cutting_the_cost"]


def glued(nb) -> dict[str, str]:
    """Every value a notebook glues for the prose, as its stored text."""
    out = {}
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            meta = o.get("metadata", {}).get("scrapbook")
            text = o.get("data", {}).get("application/papermill.record/text/plain")
            if meta and text is not None:
                out[meta["name"]] = text
    return out


@pytest.fixture(scope="module")
def swapped(tmp_path_factory):
    """(new example model, {notebook: (stored glue, re-executed glue)}) for the sample."""
    scratch = tmp_path_factory.mktemp("swap")
    shutil.copytree(ROOT / "lib", scratch / "lib", ignore=shutil.ignore_patterns("__pycache__"))
    shapes = scratch / "lib" / "transformer_arithmetic" / "shapes.py"
    text = shapes.read_text()
    new_text, n = re.subn(r"(EXAMPLE_MODEL = ModelShape\(\s*)layers=24,", r"\1layers=32, kv_heads=8,", text)
    assert n == 1, "could not find the definition of EXAMPLE_MODEL in shapes.py"
    shapes.write_text(new_text)
    new_model = replace(ta.EXAMPLE_MODEL, layers=32, kv_heads=8)

    env = dict(os.environ, PYTHONPATH=str(scratch / "lib"))
    results = {}
    todo = [name for name in SAMPLE if (CHAPTERS / f"{name}.md").exists()]
    assert todo, "none of the sampled notebooks exist"
    for name in todo:
        dest = scratch / "book" / "chapters" / name
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CHAPTERS / f"{name}.md", dest.with_suffix(".md"))
    run = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "execute.py"), *[str(scratch / "book" / "chapters" / f"{n}.md") for n in todo]],
        env=env, capture_output=True, text=True, cwd=scratch,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    for name in todo:
        stored = glued(nbformat.read(CHAPTERS / f"{name}.ipynb", as_version=4))
        fresh = glued(nbformat.read(scratch / "book" / "chapters" / f"{name}.ipynb", as_version=4))
        results[name] = (stored, fresh)
    return new_model, results


def test_the_kernel_used_the_changed_example(swapped):
    new_model, results = swapped
    stored, fresh = results["training/04_kv_cache"]
    assert fresh["layers"] == str(new_model.layers) and stored["layers"] == str(ta.EXAMPLE_MODEL.layers)


def test_numbers_follow_the_library(swapped):
    new_model, results = swapped
    _, fresh = results["training/04_kv_cache"]
    assert int(fresh["per_token"]) == memory.kv_bytes_per_token(new_model)
    assert float(fresh["weights_mib"]) == pytest.approx(memory.weight_bytes(new_model) / ta.MIB)
    assert float(fresh["mid_cache_mib"]) == pytest.approx(memory.kv_cache_bytes(new_model, 8192) / ta.MIB)
    assert float(fresh["most_total_gib"]) == pytest.approx(memory.serving_bytes(new_model, 2048, 64) / ta.GIB)


def test_model_dependent_numbers_changed_in_every_sampled_notebook(swapped):
    _, results = swapped
    for name, (stored, fresh) in results.items():
        assert set(stored) == set(fresh), f"{name}: a different set of glued numbers after the change"
        changed = [k for k in stored if stored[k] != fresh[k]]
        assert changed, f"{name}: no glued number changed when the example model changed"
