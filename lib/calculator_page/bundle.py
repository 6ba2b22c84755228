"""The calculator's own code, packed for the reader's browser: traced, then zipped.

The page "Do the arithmetic for your own model" runs the library's command-line
calculator in the browser, under Pyodide (CPython compiled to WebAssembly, with the
standard library and nothing else). What it loads is found by running, not by a list:

1. ``trace()`` starts a fresh Python that can import only the standard library and the
   library's own packages (an import of numpy or any other installed package fails
   there, as it would in the page), runs the command line
   (``python -m transformer_calculator report NAME [--json]``) on every shipped config,
   lists the shipped chips (``chips``, as text and JSON) and asks one question of each
   other kind the page's form asks (``EXTRA_RUNS``: a named chip, formats, lengths,
   batches, a request, the serving options, ``train``, ``plan`` for a
   training run and a service, money and energy, a draft), and reports every module of
   ``lib/`` that was loaded, the shipped configs' names and each run's exit code,
   output and error line.
2. ``bundle(modules)`` zips those modules' source files, with the package data that
   ``pyproject.toml`` declares for their packages (the shipped configs), byte for byte
   the same on every build (fixed dates and order).

The machinery never imports the calculator: the trace is a separate process, as a
reader's terminal would be.
"""

from __future__ import annotations

import hashlib
import io
import json
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "LIB", "PACKAGES", "GUARD", "EXTRA_RUNS", "Trace", "trace", "bundle", "digest"
]

LIB = Path(__file__).resolve().parents[1]
PACKAGES = ("transformer_calculator", "transformer_arithmetic", "published")
"""The library's packages the page may load (the machinery stays out of the page)."""

GUARD = r"""
import sys

ALLOWED = set(sys.stdlib_module_names) | set(PACKAGES)

class PageImports:
    '''The page's Python has the standard library and the library's packages only.'''

    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] not in ALLOWED:
            raise ImportError(
                f"{name} is not in the page's Python: the calculator must not import it"
            )
        return None

sys.meta_path.insert(0, PageImports())
"""
"""The opening of a script that then imports as the page does: the standard library and
``PACKAGES`` (which the script defines before it), and nothing else."""

EXTRA_RUNS = (
    ("chips", "--json"),
    ("chips",),
    ("report", "mixtral-8x7b", "--chip", "l40s", "--weights", "int4", "--kv-dtype",
     "fp8", "--context", "1024,8192", "--batch", "1,8", "--prompt", "100", "--answer",
     "10", "--flops-efficiency", "0.5", "--hbm-memory-efficiency", "0.8",
     "--gpu-memory-utilization", "0.85", "--block-size", "32"),
    ("train", "llama-3-8b", "--lora-rank", "8", "--weights", "nf4", "--zero-stage", "3",
     "--devices", "4", "--optimizer", "adam8bit", "--recompute", "full", "--json"),
    ("report", "mixtral-8x7b", "--chip", "h100-sxm", "--tp", "2", "--ep", "4", "--dp",
     "2", "--overlap", "--context", "2048", "--batch", "1", "--json"),
    ("train", "llama-3-8b", "--chip", "h100-sxm", "--tp", "2", "--pp", "2", "--cp", "2",
     "--devices", "2", "--batch", "4", "--micro-batches", "4", "--virtual-stages", "2",
     "--gradients", "fp32", "--fused-glu", "--json"),
    ("report", "llama-3-8b", "--chip", "h100-sxm", "--price", "2.5", "--pue", "1.2",
     "--draft", "gated-gqa-1b", "--draft-tokens", "4", "--acceptance", "0.7", "--json"),
    ("train", "llama-3-8b", "--chip", "h100-sxm", "--price", "2.5", "--pue", "1.2",
     "--json"),
    ("plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8", "--tokens",
     "1000000000000", "--seq-len", "8192", "--global-batch", "512", "--price", "2.5",
     "--formats", "bf16,fp8", "--json"),
    ("plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8", "--prompt", "2000",
     "--answer", "500", "--rate", "20", "--ttft-ms", "1000", "--tpot-ms", "50",
     "--kv-dtype", "fp8", "--no-disaggregated", "--overlap", "--pue", "1.2"),
)
"""Runs besides each config's report: the chips table the form lists (as JSON and as
text) and one run of each other kind of question the form asks, so that the trace
loads every module those need."""

_RUNS = r"""
import contextlib, io, json

from transformer_arithmetic import EXAMPLE_ACCELERATOR as acc
from transformer_arithmetic.units import GIB
from transformer_calculator.command_line.cli import main
from transformer_calculator.reading.config import MAX_FILE_BYTES, example_configs

runs = {}
for path in example_configs():
    for kind, extra in (("json", ["--json"]), ("text", [])):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["report", path.stem, *extra])
        runs.setdefault(path.stem, {})[kind] = {
            "code": code, "out": out.getvalue(), "err": err.getvalue()}
extra = {}
for argv in EXTRA_RUNS:  # each question the form asks, so the zip holds what it loads
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    extra[" ".join(argv)] = {"code": code, "out": out.getvalue(), "err": err.getvalue()}
modules = {
    name: module.__file__ for name, module in sorted(sys.modules.items())
    if name.partition(".")[0] in PACKAGES and getattr(module, "__file__", None)}
from transformer_calculator.counting.activations import RECOMPUTE
from transformer_calculator.command_line.cli_options import WEIGHT_CHOICES
from transformer_calculator.anatomy.formats import CACHE_FORMATS
from transformer_calculator.splits import CP_KINDS
from transformer_calculator.counting.training import GRADIENTS, OPTIMIZERS
choices = {"--weights": list(WEIGHT_CHOICES), "--kv-dtype": list(CACHE_FORMATS),
           "--optimizer": list(OPTIMIZERS), "--recompute": list(RECOMPUTE),
           "--gradients": list(GRADIENTS), "--cp-kind": list(CP_KINDS),
           "--formats": list(WEIGHT_CHOICES)}
chip = {"text": str(acc), "numbers": [
    f"{acc.flops_per_s:g}", f"{acc.bytes_per_s:g}", f"{acc.memory_bytes / GIB:g}"]}
print(json.dumps({"modules": modules, "configs": sorted(runs), "runs": runs,
                  "extra_runs": extra, "max_file_bytes": MAX_FILE_BYTES,
                  "example_chip": chip, "choices": choices}))
"""


@dataclass(frozen=True)
class Trace:
    """What the command line loaded and printed, run as the page runs it."""

    modules: dict[str, str]
    """Every module of the library the runs loaded: its name and its file."""
    configs: list[str]
    """The shipped configs' names, as the command line takes them."""
    runs: dict[str, dict[str, dict]]
    """For each config, the ``json`` and ``text`` run: exit code, output, error."""
    extra_runs: dict[str, dict]
    """For each of ``EXTRA_RUNS`` (its words joined by spaces): exit code, output,
    error."""
    max_file_bytes: int
    """The largest config file the calculator reads, in bytes."""
    example_chip: dict
    """The book's example accelerator: as the library writes it (``text``) and as the
    three numbers ``--accelerator`` takes (``numbers``)."""
    choices: dict[str, list[str]]
    """The values the command line takes for each option that has a fixed list."""


def trace() -> Trace:
    """Run the command line on every shipped config in a Python that has only the
    standard library and the library's packages; raise RuntimeError, with the
    traceback's last lines, if the calculator imports anything else."""
    script = f"PACKAGES = {PACKAGES!r}\nEXTRA_RUNS = {EXTRA_RUNS!r}\n{GUARD}{_RUNS}"
    with tempfile.TemporaryDirectory() as empty:  # no file shadows a config's name
        run = subprocess.run(
            [sys.executable, "-c", script],
            cwd=empty,
            capture_output=True,
            text=True,
            timeout=120,
        )
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-6:])
        raise RuntimeError(
            "the calculator cannot run in the page's Python (standard library "
            f"only):\n{tail}"
        )
    found = json.loads(run.stdout)
    outside = [f for f in found["modules"].values() if not Path(f).is_relative_to(LIB)]
    if outside:
        raise RuntimeError(f"the traced modules are not this library's: {outside}")
    return Trace(**found)


def _package_data(package: str) -> list[Path]:
    """The data files ``pyproject.toml`` declares for ``package`` (as the wheel has)."""
    pyproject = tomllib.loads((LIB.parent / "pyproject.toml").read_text())
    globs = pyproject["tool"]["setuptools"].get("package-data", {}).get(package, [])
    found = (p for g in globs for p in (LIB / package).glob(g) if p.is_file())
    return sorted(p for p in found
                  if p.parent.relative_to(LIB).as_posix() not in PAGE_LEAVES_OUT)


PAGE_LEAVES_OUT = ("published/measured", "transformer_calculator/measured_runs/data")
"""Data folders the page's zip leaves out: the tables of measured runs and their stored
check, which only the ``check`` command and the appendix read (the page never runs
them)."""


def bundle(modules: dict[str, str]) -> tuple[bytes, list[str]]:
    """A zip of the traced modules' sources and their packages' data, with paths
    relative to ``lib/``, identical on every build; and the list of its files."""
    files = {Path(f).resolve() for f in modules.values()}
    packages = {name.partition(".")[0] for name in modules}
    for package in sorted(packages):
        files.update(_package_data(package))
    names = sorted(f.relative_to(LIB).as_posix() for f in files)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        for name in names:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, (LIB / name).read_bytes())
    return buffer.getvalue(), names


def digest(data: bytes) -> str:
    """A short content hash, for the URL that makes browsers fetch a changed file."""
    return hashlib.sha256(data).hexdigest()[:12]
