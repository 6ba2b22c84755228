"""PyTorch on any processor: the tests that run its kernels pass at every narrower level this
processor supports, and a narrowed run narrows every layer that picks code from the processor.

Several layers choose their code from the processor: PyTorch's own vector kernels
(``ATEN_CPU_CAPABILITY``), oneDNN (matrix products and attention in bfloat16 and float16),
MKL (float32 matrix products) and numpy. PyTorch also asks oneDNN which paths exist. Narrowing
PyTorch's kernels alone once sent bfloat16 attention on an AMX processor down oneDNN's AMX
packing path, into a packing kernel that PyTorch's narrowed build lacks ("pack_vnni2 is only
supported when avx512 is supported"); on a processor without AMX the same test passed.

- ``check_torch_tests_pass_at`` (run by ``test_processor_level_1.py`` to ``_3.py``, one
  file per level so the two workers take them side by side) runs every test marked
  ``torch_kernels`` again in a fresh process at each level PyTorch reports this processor
  has (``default``, ``avx2``, ``avx512`` on x86-64; ``default`` and ``sve256`` on Arm),
  each with its matching oneDNN and MKL level
  (``book_machinery.processor.narrowed_env``). The tests' own process is the unnarrowed
  run, so the widest level is skipped where narrowing to it changes nothing but the
  thread count (PyTorch already at it, oneDNN on nothing wider: no AMX). A file marked ``torch_counts`` runs PyTorch but asserts only counts, shapes and
  bytes, which no choice of kernel changes: it runs once, unnarrowed.
- ``test_a_narrowed_run_narrows_every_layer`` catches the mismatch itself on any processor,
  AMX or not: with a level's settings, the instruction set oneDNN reports using (its own
  verbose log) is no wider than that level.
- ``test_every_torch_test_says_what_it_runs`` keeps the first test complete: a test file that
  imports PyTorch or the torch references is marked ``torch_kernels`` (re-run here) or
  ``meta_device`` (shapes only, nothing runs) or ``torch_counts`` (counts only).
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from book_machinery import processor
from book_files import ROOT


pytestmark = pytest.mark.slow(seconds=8)

TESTS = ROOT / "tests"
TORCH_MODULES = {"torch", "decoder_reference", "hf_reference", "transformer_arithmetic.runs.reference_model"}
"""Imports that put PyTorch to work in a test file."""

ONEDNN_RANK = [("AMX", 4), ("AVX-512", 3), ("AVX2", 2), ("AVX", 1.5), ("SSE4.1", 1)]
"""How wide an instruction set oneDNN's verbose log names, first match wins."""
LEVEL_RANK = {"default": 1, "avx2": 2, "avx512": 3}

WORKLOAD = """
import torch, torch.nn.functional as F
print("aten", torch.backends.cpu.get_cpu_capability())
torch.manual_seed(0)
for dtype in (torch.bfloat16, torch.float16, torch.float32):
    x = torch.randn(1, 4, 128, 64, dtype=dtype)       # a 128-token prompt: packing territory
    F.scaled_dot_product_attention(x, x, x, is_causal=True)
    F.linear(x, torch.randn(64, 64, dtype=dtype))
"""
"""Attention over a long prompt and a matrix product in each format the book uses."""


def supported_levels() -> list[str]:
    """PyTorch's vector-kernel levels this processor has, narrowest first (PyTorch's answer)."""
    levels = processor.CAPABILITIES.get(processor.ARCH, ["default"])
    widest = torch.backends.cpu.get_cpu_capability().lower()
    return levels[: levels.index(widest) + 1] if widest in levels else ["default"]


def _env(level: str) -> dict[str, str]:
    return {**os.environ, **processor.narrowed_env(level)}


def marked(mark: str) -> list[Path]:
    """The test files whose ``pytestmark`` carries ``mark`` (collecting only these is quick)."""
    return [path for path in sorted(TESTS.rglob("test_*.py")) if mark in _marks(ast.parse(path.read_text()))]


def check_torch_tests_pass_at(rank: int) -> None:
    """Every ``torch_kernels`` test file passes again in a fresh process at this
    processor's ``rank``-th narrowest level (one file per rank, ``test_processor_level_N.py``,
    so that make test's two workers take the levels side by side)."""
    levels = supported_levels()
    if rank >= len(levels):
        pytest.skip(f"this processor has {len(levels)} level(s): {', '.join(levels)}")
    level = levels[rank]
    if rank == len(levels) - 1 and unnarrowed_is(level):
        pytest.skip(f"{level} is what this processor runs unnarrowed, oneDNN included: the "
                    "tests' own run is this level's (on more threads)")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:nbval",
                          "-p", "no:cacheprovider", *map(str, marked("torch_kernels"))],
                         cwd=ROOT, env=_env(level), capture_output=True, text=True)
    assert run.returncode == 0, f"at ATEN_CPU_CAPABILITY={level}:\n{run.stdout[-4000:]}{run.stderr[-2000:]}"
    assert " passed" in run.stdout.splitlines()[-1], run.stdout[-2000:]


def _onednn_ranks(env: dict[str, str]) -> list[float]:
    """How wide each instruction set oneDNN's verbose log names is, running ``WORKLOAD``."""
    run = subprocess.run([sys.executable, "-c", WORKLOAD], env={**env, "ONEDNN_VERBOSE": "1"},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    used = [line.split("isa:", 1)[1] for line in run.stdout.splitlines() if ",isa:" in line]
    return [next(r for name, r in ONEDNN_RANK if name in isa) for isa in used]


def unnarrowed_is(level: str) -> bool:
    """Whether this processor, unnarrowed, already runs every layer at ``level``: PyTorch's
    own kernels at it and oneDNN on nothing wider (an x86 processor without AMX, say)."""
    if processor.ARCH != "x86_64" or torch.backends.cpu.get_cpu_capability().lower() != level:
        return False
    ranks = _onednn_ranks({**os.environ, **processor.PINNED_ENV})
    return bool(ranks) and max(ranks) <= LEVEL_RANK[level]


def test_a_level_file_for_every_level():
    """The per-level files cover every level PyTorch knows on this architecture."""
    widest = max(len(v) for v in processor.CAPABILITIES.values())
    files = sorted(p.name for p in TESTS.glob("test_processor_level_*.py"))
    assert files == [f"test_processor_level_{i}.py" for i in range(1, widest + 1)], files


@pytest.mark.parametrize("level", supported_levels())
def test_a_narrowed_run_narrows_every_layer(level):
    run = subprocess.run([sys.executable, "-c", WORKLOAD], env={**_env(level), "ONEDNN_VERBOSE": "1"},
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert f"aten {level.upper()}" in lines, lines[:3]
    if processor.ARCH != "x86_64":
        return
    used = [line.split("isa:", 1)[1] for line in lines if ",isa:" in line]
    for isa in used:
        rank = next(r for name, r in ONEDNN_RANK if name in isa)
        assert rank <= LEVEL_RANK[level], (
            f"with PyTorch's kernels at {level}, oneDNN still used {isa!r}: a path it picks can "
            f"call a kernel the narrowed PyTorch lacks (narrowed_env must hold oneDNN too)")


def _imports(tree: ast.Module) -> set[str]:
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, node.module.split(".")[0]}
    return names


def _marks(tree: ast.Module) -> set[str]:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in node.targets):
            return {n.attr for n in ast.walk(node.value) if isinstance(n, ast.Attribute)} - {"mark"}
    return set()


def test_every_torch_test_says_what_it_runs():
    unmarked = []
    for path in sorted(set(TESTS.rglob("test_*.py")) - {Path(__file__)}):   # not the sweep itself
        tree = ast.parse(path.read_text())
        if _imports(tree) & TORCH_MODULES and not _marks(tree) & {"torch_kernels", "meta_device", "torch_counts"}:
            unmarked.append(str(path.relative_to(ROOT)))
    assert not unmarked, ("these test files use PyTorch but carry neither `pytestmark = "
                          f"pytest.mark.torch_kernels`, `meta_device` nor `torch_counts`: {unmarked}")
