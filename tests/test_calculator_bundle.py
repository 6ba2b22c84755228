"""What the page's calculator loads: the command line's own modules, without numpy.

``calculator_page.bundle`` traces the command line in a Python that has only
the standard library and the library's packages, and zips what it loaded; the page runs
that zip under Pyodide (tests/test_calculator_page.py runs it in the browser). Checked
here, quickly, for ``make check``:

- the calculator imports nothing outside the standard library: importing numpy (or any
  other installed package) fails in the traced Python, yet every shipped config gives a
  report, exactly the one the command line prints in this process;
- the trace is not fooled: a module that imports numpy makes it fail, naming numpy;
- the zip holds exactly the traced modules' sources and the shipped configs, byte for
  byte, and is the same on every build;
- every other question the form asks (the chips, a report with every serving option,
  train) runs there too, and the form's lists and named defaults are the command line's;
- the page's colours are the book's palette.
"""
from __future__ import annotations

import contextlib
import html
import io
import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from calculator_page import bundle as calculator_bundle
from calculator_page.bundle import EXTRA_RUNS, LIB, bundle, trace
from calculator_page.sphinx_page import (TRAIN_DEFAULTS, chip_options, draft_options,
                                        shipped_chips)
from book_machinery.figures import PALETTE
from transformer_calculator.command_line.cli import main as command_line
from transformer_calculator.reading.config import example_configs
from transformer_calculator.anatomy.formats import CACHE_FORMATS, WEIGHT_FORMATS

CSS = LIB / "calculator_page" / "assets" / "calculator.css"


@pytest.fixture(scope="module")
def traced():
    return trace()


def test_the_calculator_runs_on_the_standard_library_alone(traced):
    assert "transformer_calculator.command_line.cli" in traced.modules
    assert not [m for m in traced.modules if m.startswith("book_machinery")]
    assert traced.configs == [p.stem for p in example_configs()]
    for name in traced.configs:
        for kind, extra in (("json", ["--json"]), ("text", [])):
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                assert command_line(["report", name, *extra]) == 0
            run = traced.runs[name][kind]
            assert (run["code"], run["out"], run["err"]) == (0, out.getvalue(), ""), name


def test_numpy_is_not_in_the_traced_python():
    """The same guard the trace runs under refuses numpy, as the page's Python would."""
    script = f"PACKAGES = {calculator_bundle.PACKAGES!r}\n{calculator_bundle.GUARD}"
    run = subprocess.run([sys.executable, "-c", script + "import numpy\n"],
                         capture_output=True, text=True)
    assert run.returncode == 1
    assert "numpy is not in the page's Python" in run.stderr


def test_the_zip_holds_what_the_command_line_loaded(traced):
    data, names = bundle(traced.modules)
    assert bundle(traced.modules)[0] == data       # the same bytes on every build
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert zf.namelist() == names
        for name in names:
            assert zf.read(name) == (LIB / name).read_bytes(), name
    sources = sorted(Path(f).relative_to(LIB).as_posix() for f in traced.modules.values())
    data_files = {*example_configs(), *(LIB / "transformer_calculator" / "data").glob("*.json"),
                  *(LIB / "published" / "data").glob("*.json"), LIB / "published" / "models" / "SOURCES.json",
                  LIB / "transformer_calculator" / "estimate" / "data" / "fractions.json"}
    # the measured runs and their stored check stay out: the page never runs check
    assert not any(n.startswith(("published/measured/", "transformer_calculator/measured_runs/data/"))
                   for n in names)
    assert names == sorted(sources + [p.relative_to(LIB).as_posix() for p in data_files])
    assert "transformer_arithmetic/masks.py" in names     # pair counts, without numpy
    assert "transformer_arithmetic/sampling.py" not in names   # taught, not counted


def test_the_pages_colours_are_the_books_palette():
    css = CSS.read_text()
    colours = dict(re.findall(r"--calc-([a-z]+):\s*(#[0-9A-Fa-f]{6})", css))
    for concept in ("weights", "cache", "reading", "arithmetic", "given", "new",
                    "gradients", "master", "optimiser", "activations", "logits"):
        assert colours.get(concept, "").upper() == PALETTE[concept].upper(), concept


def test_every_question_the_form_asks_is_traced(traced):
    """The chips listed, a report with every serving option, and train: each ran in the
    traced Python, so the zip holds what each loads, and said what this process says."""
    assert set(traced.extra_runs) == {" ".join(argv) for argv in EXTRA_RUNS}
    for argv in EXTRA_RUNS:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = command_line(list(argv))
        run = traced.extra_runs[" ".join(argv)]
        assert (run["code"], run["out"], run["err"]) == (code, out.getvalue(), ""), argv
        assert code == 0, argv
    assert "published/data/chips.json" in bundle(traced.modules)[1]
    assert "transformer_calculator.counting.training" in traced.modules


def test_the_forms_lists_are_the_command_lines(traced, tmp_path):
    """The form's choices are the command line's, and the defaults it names are the
    ones ``train`` takes when the option is not given."""
    assert traced.choices["--weights"] == ["bf16", "fp16", *WEIGHT_FORMATS]
    assert traced.choices["--kv-dtype"] == list(CACHE_FORMATS)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command_line(["train", "plain-small", "--json"]) == 0
    step = json.loads(out.getvalue())["training"]
    for flag, default in TRAIN_DEFAULTS.items():
        assert step[flag.removeprefix("--")] == default, flag
        assert default in traced.choices[flag]
    with contextlib.redirect_stderr(io.StringIO()) as err:
        assert command_line(["train", "plain-small", "--optimizer", "nadam"]) == 2
    assert "--optimizer" in err.getvalue()


def test_the_chip_list_is_the_chips_table(traced):
    """Each chip in the form's list shows the figures the ``chips`` command prints, and
    its source."""
    options = chip_options(shipped_chips(traced))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert command_line(["chips", "--json"]) == 0
    rows = json.loads(out.getvalue())
    assert options.count("<option ") == len(rows)
    for row in rows:
        assert f'data-source="{html.escape(row["source"])}"' in options, row["key"]
        assert f'<option value="{row["key"]}"' in options
    assert 'value="h100-sxm" ' in options and " selected>" in options


def test_plan_price_and_draft_are_traced_and_listed(traced):
    """The form's third mode and its new fields ran in the traced Python (plan for a
    training run and for a service, a report with a price, a PUE and a draft, train with a
    price), the plan's formats are the command line's, and the draft list is the shipped
    configs, each a name ``--draft`` takes."""
    asked = {argv[0]: set() for argv in EXTRA_RUNS}
    for argv in EXTRA_RUNS:
        asked[argv[0]].update(a for a in argv if a.startswith("--"))
    assert {"--tokens", "--prompt", "--rate", "--price", "--pue", "--formats",
            "--no-disaggregated", "--overlap"} <= asked["plan"]
    assert {"--price", "--pue", "--draft", "--draft-tokens", "--acceptance"} <= asked["report"]
    assert {"--price", "--pue"} <= asked["train"]
    assert "transformer_calculator.planning.training_search" in traced.modules
    assert "transformer_calculator.planning.serving_search" in traced.modules
    assert "transformer_calculator.service.speculative" in traced.modules
    assert traced.choices["--formats"] == traced.choices["--weights"]
    options = draft_options(traced.configs)
    assert re.findall(r'<option value="([^"]+)">', options) == traced.configs
    with contextlib.redirect_stdout(io.StringIO()):
        assert command_line(["report", "plain-small", "--draft", traced.configs[0],
                             "--json"]) == 0


def test_every_field_names_modes_the_form_has():
    """A field belongs to the modes its data-calc-mode lists: each is the form's command
    (report, train, plan) or a plan's goal (plan-training, plan-serving), and every
    command and goal has a choice that selects it."""
    form = re.sub(r"<!--.*?-->", "", (LIB / "calculator_page" / "assets" / "form.html")
                  .read_text(), flags=re.S)
    named = {m for v in re.findall(r'data-calc-mode="([^"]+)"', form) for m in v.split()}
    commands = set(re.findall(r'name="calc-command" id="[^"]+" value="([^"]+)"', form))
    goals = set(re.findall(r'name="calc-goal" id="[^"]+" value="([^"]+)"', form))
    assert commands == {"report", "train", "plan"} and goals == {"training", "serving"}
    assert named == commands | {f"plan-{g}" for g in goals}, named
