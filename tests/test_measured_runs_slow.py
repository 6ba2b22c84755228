"""Both shipped tables of measured runs, every run: no run the calculator expresses is
faster than its floor unless the check names why, the stored results the appendix
draws (``measured_runs/data/results.json``) are what the check gives now, and the
stored fractions (``estimate/data/fractions.json``) are what the fit gives now."""
from __future__ import annotations

import json

import pytest

from transformer_calculator.estimate.fractions import FRACTIONS_FILE
from transformer_calculator.measured_runs import fit, results

pytestmark = pytest.mark.slow(seconds=90)


@pytest.fixture(scope="module")
def fresh() -> dict:
    return results.results()


def test_the_stored_results_are_the_checks(fresh):
    assert results.text(fresh) == results.RESULTS_FILE.read_text(encoding="utf-8")


def test_a_run_faster_than_its_floor_is_named_with_its_cause(fresh):
    for table in ("serving", "training"):
        for run in fresh[table]["below_floor"]:
            assert run["why"] and run["measured"] < run["floor"] or table == "training"
    serving = fresh["serving"]["summary"]
    assert serving["expressible"] >= 3000
    below = sum(g["below_floor"] for g in serving["regimes"]
                if g["regime"].endswith("every engine"))
    assert below == len(fresh["serving"]["below_floor"]) <= 10


def test_the_stored_fractions_are_the_fits():
    data, _, _ = fit.fitted()
    assert data == json.loads(FRACTIONS_FILE.read_text(encoding="utf-8"))


def test_no_run_that_finished_is_counted_as_not_fitting(fresh):
    """A run that finished held its step: a count that says its busiest device could
    not is wrong. The share within the stated distance is the rows' own."""
    memory = fresh["training"]["memory"]
    assert memory["outcomes"]["finished"]["count says it does not fit"] == 0
    columns = memory["columns"]
    ratios = [r[columns.index("measured")] / r[columns.index("counted")]
              for r in memory["runs"]]
    assert len(ratios) == memory["summary"]["runs"] > 1000
    near = sum(abs(q - 1) <= memory["near"] for q in ratios) / len(ratios)
    assert memory["summary"]["within"] == pytest.approx(near, abs=1e-6)
