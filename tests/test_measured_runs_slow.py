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


def test_each_measurement_is_checked_once(fresh):
    """No repeat left out is among the checked runs; every repeat's kept row is
    checked, is no repeat itself, and the checked runs and the repeats add up to the
    table's rows."""
    serving = fresh["serving"]
    checked = {row[0] for part in (serving["runs"], serving["floor_only"]["runs"])
               for rows in part.values() for row in rows}
    repeats = serving["repeats"]
    left_out = {row[0] for row in repeats["runs"]}
    kept = {row[2] for row in repeats["runs"]}
    assert len(left_out) == repeats["rows"] > 0 and not left_out & checked
    assert not kept & left_out
    assert serving["summary"]["runs"] + repeats["rows"] == 5221


def test_a_run_faster_than_its_floor_is_named_with_its_cause(fresh):
    for table in ("serving", "training"):
        for run in fresh[table]["below_floor"]:
            assert run["why"] and run["measured"] < run["floor"] or table == "training"
    serving = fresh["serving"]["summary"]
    assert serving["expressible"] > 0.9 * serving["runs"]
    assert serving["estimated"] >= 2900  # distinct runs: repeats counted once
    assert serving["estimated"] + serving["floor_only"] == serving["expressible"]
    below = sum(g["below_floor"] for g in serving["regimes"]
                + serving["floor_only_regimes"] if g["regime"].endswith("every engine"))
    assert below == len(fresh["serving"]["below_floor"]) <= 10


def test_floor_only_runs_are_stored_apart_and_none_beats_its_floor(fresh):
    """The appendix's figures of estimate against measured draw ``runs``: no run
    without an estimate is among them; its table of runs below the floor draws
    ``below_floor``, where a floor-only run would be listed."""
    serving = fresh["serving"]
    alone = serving["floor_only"]
    ids = {row[0] for rows in alone["runs"].values() for row in rows}
    estimated = {row[0] for rows in serving["runs"].values() for row in rows}
    assert len(ids) == serving["summary"]["floor_only"] > 800 and not ids & estimated
    column = alone["columns"].index
    for rows in alone["runs"].values():
        assert all(r[column("measured")] >= r[column("floor")] for r in rows)
    assert not [b for b in serving["below_floor"] if b["floor_only"]]


@pytest.fixture(scope="module")
def refit() -> tuple:
    return fit.fitted()


def test_the_stored_fractions_are_the_fits(refit):
    data, _, _ = refit
    assert data == json.loads(FRACTIONS_FILE.read_text(encoding="utf-8"))


def test_floor_only_runs_are_not_fitted(refit):
    """A disaggregated run without its workers' counts has no estimate to fit."""
    from transformer_calculator.measured_runs import conversion
    alone = {r["id"] for r in conversion.serving_rows()
             if r.get("prefill_tp") and r["batch"] == ""}
    _, cases, _ = refit
    assert len(alone) > 1000 and not alone & {c.run for c in cases}


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
