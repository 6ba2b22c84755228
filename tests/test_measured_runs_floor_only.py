"""A disaggregated run that does not say its workers' counts: ``check`` gives it its
floors (a decode step of one conversation on one decode worker, the prompt's own pass
on one prompt worker), refuses its estimate in one line, and counts it apart from the
estimated runs; its floors are at most those of the same run with any counts given."""
from __future__ import annotations

import contextlib
import io
import json

import pytest

from transformer_calculator.command_line.cli import main
from transformer_calculator.measured_runs import conversion, floors
from transformer_calculator.measured_runs.check import check_runs
from transformer_calculator.measured_runs.runs import read_runs, write_runs
from transformer_calculator.measured_runs.setup import serving_setup
from transformer_calculator.measured_runs.summary import summary
from transformer_calculator.service.serving import request_times

HEADER = ("id,command,model,chip,tp,prefill_tp,batch,prefill_workers,decode_workers,"
          "prompt,answer,engine,measured_ttft_ms,measured_tpot_ms")
ALONE = "alone,report,llama-3.1-8b,h100-sxm,2,1,,,,4096,512,sglang,900,12"
COUNTED = "counted,report,llama-3.1-8b,h100-sxm,2,1,32,2,1,4096,512,sglang,900,12"
AGG = "agg,report,llama-3.1-8b,h100-sxm,1,,8,,,1024,256,vllm,80,9"


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def table(tmp_path, *rows: str) -> str:
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return str(path)


def test_a_floor_only_run_has_its_floor_measurement_and_why_no_estimate(tmp_path):
    code, out, err = run("check", table(tmp_path, ALONE), "--json")
    assert code == 0 and err == ""
    (r,) = json.loads(out)["runs"]  # valid JSON: allow_nan=False in the command
    assert "refused" not in r and r["batch"] == 1
    for q, measured in (("tpot_ms", 12.0), ("ttft_ms", 900.0)):
        f = r[q]
        assert {"floor", "measured", "estimate_refused"} <= set(f)
        assert not {"estimate", "low", "high"} & set(f)
        assert f["measured"] == measured and f["floor"] > 0 and f["bound"] == "least"
        assert "worker counts are not recorded" in f["estimate_refused"]
        assert "\n" not in f["estimate_refused"] and not f["below_floor"]
    (s,) = [serving_setup(x) for x in read_runs(f"{HEADER}\n{ALONE}\n")]
    assert s.unknown == ("batch", "prefill_workers", "decode_workers")
    (st,) = s.stages
    assert r["tpot_ms"]["floor"] == pytest.approx(
        request_times(st, s.chip, 4096, 512, 1).mean_step * 1e3)
    assert r["ttft_ms"]["floor"] == pytest.approx(floors.ttft_floor(s) * 1e3)
    text = run("check", table(tmp_path, ALONE))[1]
    assert "row 2 alone tpot_ms: floor only: floor" in text
    assert "row 2 alone: floor only, no estimate: the worker counts" in text


@pytest.mark.parametrize("batch, prefill, decode", [
    (1, 1, 1), (8, 1, 4), (64, 3, 2), (256, 8, 1), ("", 2, 2), (16, "", ""),
])
def test_the_floor_holds_whatever_the_workers(tmp_path, batch, prefill, decode):
    given = (f"given,report,llama-3.1-8b,h100-sxm,2,1,{batch},{prefill},{decode},"
             "4096,512,sglang,900,12")
    _, out, _ = run("check", table(tmp_path, ALONE, given), "--json")
    alone, other = json.loads(out)["runs"]
    for q in ("tpot_ms", "ttft_ms"):
        assert alone[q]["floor"] <= other[q]["floor"] * (1 + 1e-12)


def test_the_summary_counts_floor_only_runs_apart(tmp_path):
    _, out, _ = run("check", table(tmp_path, AGG, ALONE, COUNTED), "--json")
    s = json.loads(out)["summary"]
    assert (s["runs"], s["expressible"], s["estimated"], s["floor_only"]) == (3, 3, 2, 1)
    assert sum(s["estimate_refused"].values()) == 1 and not s["refused"]
    estimated = [g for g in s["regimes"] if g["regime"].endswith("every engine")]
    assert all(g["runs"] == 2 for g in estimated)  # the floor-only run is not among them
    alone = {g["regime"]: g for g in s["floor_only_regimes"]}
    assert alone["time between tokens, disaggregated"]["runs"] == 1
    assert alone["time to the first token, disaggregated"]["below_floor"] == 0
    text = run("check", table(tmp_path, AGG, ALONE, COUNTED))[1]
    assert "3 runs, 3 expressed: 2 with floor and estimate, 1 floor only" in text


def test_the_tables_runs_without_counts_are_written_for_their_floors():
    rows = [r for r in conversion.serving_rows() if r.get("prefill_tp")]
    alone = [r for r in rows if r["batch"] == ""]
    assert len(alone) == 1328 and all(r["decode_workers"] == r["prefill_workers"] == ""
                                      for r in alone)
    runs = read_runs(write_runs(alone[:40]))
    checked = check_runs(runs)
    assert all("estimate_refused" in c for c in checked if "refused" not in c)
    assert sum("refused" not in c for c in checked) > 20
