"""The check of measured runs: a table of runs written as the calculator's options, each
run's floor, estimate and measurement, one line for each row it cannot read, valid JSON,
and the conversions of the two shipped tables (their rows against the tables' own
columns, read here with the csv module, not the conversion's code)."""
from __future__ import annotations

import contextlib
import csv
import io
import json

import pytest

from transformer_calculator.counting import costs
from transformer_calculator.command_line.cli import main
from transformer_calculator.measured_runs import conversion, floors
from transformer_calculator.measured_runs.runs import read_runs, write_runs
from transformer_calculator.measured_runs.setup import serving_setup
from transformer_calculator.service.serving import request_times


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


HEADER = ("id,command,model,chip,weights,kv_dtype,tp,batch,prompt,answer,engine,"
          "measured_ttft_ms,measured_tpot_ms")
GOOD = "a,report,llama-3.1-8b,h100-sxm,bf16,,1,8,1024,256,vllm,80,9"


def table(tmp_path, *rows: str, header: str = HEADER):
    path = tmp_path / "runs.csv"
    path.write_text("\n".join([header, *rows]) + "\n")
    return str(path)


def test_a_run_gets_its_floor_estimate_interval_and_measurement(tmp_path):
    code, out, err = run("check", table(tmp_path, GOOD), "--json")
    assert code == 0 and err == ""
    data = json.loads(out)
    (r,) = data["runs"]
    for q, measured in (("tpot_ms", 9.0), ("ttft_ms", 80.0)):
        f = r[q]
        assert f["floor"] <= f["low"] <= f["estimate"] <= f["high"] and f["measured"] == measured
        assert f["measured_over_estimate"] == pytest.approx(measured / f["estimate"])
        assert f["runs"] > 0 and f["share"] == 0.8 and f["bound"] == "least"
    assert set(data["summary"]) >= {"runs", "expressible", "refused", "regimes"}
    text = run("check", table(tmp_path, GOOD))[1]
    assert "row 2 a tpot_ms: floor" in text and "Summary: 1 runs, 1 expressed" in text


def test_the_floor_is_the_calculators_own_count():
    (r,) = read_runs(HEADER + "\n" + GOOD + "\n")
    s = serving_setup(r)
    (st,) = s.stages
    assert floors.ttft_floor(s) == costs.prefill_time(st, s.chip, 1024, 1)
    assert floors.tpot_floor(s, 8) == request_times(st, s.chip, 1024, 256, 8).mean_step
    assert floors.running_batch(s) == 8


@pytest.mark.parametrize("row, reason", [
    ("b,report,llama-3.1-8b,h100-sxm,bf16,,1,8,1024,256,vllm,80,fast", "measured_tpot_ms must be a number"),
    ("c,serve,llama-3.1-8b,h100-sxm,bf16,,1,8,1024,256,vllm,80,9", "command must be report or train"),
    ("d,report,,h100-sxm,bf16,,1,8,1024,256,vllm,80,9", "model is empty"),
    ("e,report,llama-3.1-8b,h900,bf16,,1,8,1024,256,vllm,80,9", "no chip called 'h900'"),
    ("f,report,llama-3.1-8b,h100-sxm,bf16,,3,8,1024,256,vllm,80,9", "32 heads do not divide among 3"),
    ("g,report,llama-3.1-8b,h100-sxm,int3,,1,8,1024,256,vllm,80,9", "weights must be one of"),
    ("h,report,llama-3.1-8b,h100-sxm,bf16,,1,8,1024", "9 cells where the header has 13"),
    ("i,report,no-such-model,h100-sxm,bf16,,1,8,1024,256,vllm,80,9", "no shipped config"),
])
def test_a_bad_row_is_one_line_naming_its_cause(tmp_path, row, reason):
    code, out, err = run("check", table(tmp_path, GOOD, row), "--json")
    assert code == 0 and err == ""
    good, bad = json.loads(out)["runs"]
    assert "refused" not in good and reason in bad["refused"] and "\n" not in bad["refused"]
    text = run("check", table(tmp_path, GOOD, row))[1]
    assert f"row 3 {bad['id']}: not expressed: " in text


def test_attention_data_parallel_is_the_splits_dp_beside_its_ep():
    """A row's attention_dp is the split's dp beside its ep: each rank holds the
    splits package's own device (its share of the experts, the whole attention) and
    decodes the row's batch, as the table's concurrency a rank says."""
    from transformer_calculator.splits import Split, stage_models
    header = HEADER.replace(",tp,", ",tp,ep,attention_dp,")
    row = "m,report,gpt-oss-120b,h200,,,1,8,8,64,1024,256,trtllm,80,9"
    (r,) = read_runs(header + "\n" + row + "\n")
    s = serving_setup(r)
    assert (s.split.tp, s.split.dp, s.split.ep, s.split.devices) == (1, 8, 8, 8)
    plain = Split(tp=1, dp=8, ep=8, link=s.split.link, network=s.split.network,
                  machine=s.split.machine)
    (device,) = stage_models(s.model, plain)
    assert s.stages == (device,)
    assert floors.tpot_floor(s, 64) == request_times(device, s.chip, 1024, 256,
                                                     64).mean_step
    assert floors.running_batch(s) == 64


@pytest.mark.parametrize("header, message", [
    ("command,model,speed", "column 'speed' is not an option"),
    ("id,chip", "must name the columns command and model"),
    ("", "the file is empty"),
])
def test_a_table_that_is_not_one_stops_in_one_line(tmp_path, header, message):
    path = tmp_path / "runs.csv"
    path.write_text(header + ("\n" if header else ""))
    code, out, err = run("check", str(path))
    assert code == 1 and out == "" and message in err and err.count("\n") == 1


def test_a_missing_file_stops_in_one_line():
    code, _, err = run("check", "/no/such/runs.csv")
    assert code == 1 and "no file" in err and err.count("\n") == 1


def _serving_table() -> list[dict]:
    return list(csv.DictReader(conversion.table_text(conversion.SERVING_TABLE).splitlines()))


def test_the_serving_table_converts_run_by_run():
    rows, written = _serving_table(), conversion.serving_rows()
    assert len(rows) == len(written) == 5221
    for source, row in zip(rows, written):
        assert row["id"] == source["id"]
        if "refused" in row:
            continue
        assert row["prompt"] == source["isl"] and row["answer"] == source["osl"]
        assert row["engine"] == source["backend"]
        assert row["measured_tpot_ms"] == source["silicon_tpot_ms"]
        if source["mode"] == "agg":
            assert row["batch"] == source["batch_size"]
            assert row["tp"] == source["tp_size"]
        else:
            assert row["batch"] == source["decode_batch_size"]
            assert row["prefill_tp"] == source["prefill_tp_size"]
    first = written[0]
    assert (first["model"], first["chip"], first["weights"], first["kv_dtype"]) == (
        "minimax-m2.5", "b300", "fp8", "fp8")
    oss = next(w for s, w in zip(rows, written)
               if s["model_path"] == "openai/gpt-oss-120b" and s["precision"] == "fp4")
    assert (oss["weights"], oss["expert_weights"]) == ("bf16", "mxfp4")  # as published
    assert sum("refused" in w for w in written) < len(written)


def test_the_training_table_converts_run_by_run():
    rows = list(csv.DictReader(
        conversion.table_text(conversion.TRAINING_TABLE).splitlines()))
    written = conversion.training_rows()
    assert len(rows) == len(written) == 3287
    for source, row in zip(rows, written):
        assert row["batch"] == str(int(source["MBS"]) * int(source["GradAcc"]))
        assert (row["tp"], row["pp"], row["devices"]) == (source["TP"], source["PP"],
                                                          source["DP"])
        assert ("refused" in row) == (source["MFU"] in ("", "nan"))


def test_the_playbook_stages_are_cut_as_nanotron_cuts_them():
    from transformer_calculator.reading.inputs import load_model
    from transformer_calculator.splits.checks import cost_balanced_stage_layers
    model, _ = load_model("playbook-1b")  # 16 layers of 4h^2 + 3 d_ff h, head 4 layers
    # cost 20 layers' worth: the first stage passes its 10 at its 11th layer, keeps it
    assert cost_balanced_stage_layers(model, 2) == (11, 5)
    assert cost_balanced_stage_layers(model, 4) == (6, 5, 5, 0)  # the head alone at the end


def test_a_run_five_times_slower_than_its_twin_is_not_fitted():
    from transformer_calculator.measured_runs.failed import failed_runs
    rows = conversion.training_rows()[:40]
    runs = read_runs(write_runs(rows))
    done = [r for r in runs if not r.refused]
    zero = ("zero_stage", "ddp_buckets")  # DDP wraps the ZeRO-0 twin only
    twin = next(r for r in done if r.options["zero_stage"] == "1" and any(
        o.options["zero_stage"] == "0" and {k: v for k, v in o.options.items()
                                            if k not in zero}
        == {k: v for k, v in r.options.items() if k not in zero} for o in done))
    rate = twin.measured["tokens_per_s_per_chip"]
    slow = [r if r is not twin else type(r)(r.row, r.id, r.command, r.options,
                                            {**r.measured,
                                             "tokens_per_s_per_chip": rate / 50},
                                            r.refused) for r in runs]
    assert twin.id not in failed_runs(runs)
    assert twin.id in failed_runs(slow)


def test_the_tables_written_as_runs_read_back():
    rows = conversion.serving_rows()[:50] + conversion.training_rows()[:50]
    runs = read_runs(write_runs(rows))
    assert [r.id for r in runs] == [r["id"] for r in rows]
    assert all(r.refused is None or r.refused == w.get("refused")
               for r, w in zip(runs, rows))


def test_an_offline_run_is_held_at_the_most_conversations_that_fit(tmp_path):
    header = "id,command,model,chip,tp,batch,prompt,answer,engine,measured_tokens_per_s_per_chip"
    code, out, _ = run("check", table(tmp_path, "off,report,llama-3.1-8b,h100-sxm,1,,1024,"
                                      "256,vllm,5000", header=header), "--json")
    r = json.loads(out)["runs"][0]
    (s,) = [serving_setup(x) for x in read_runs(f"{header}\noff,report,llama-3.1-8b,"
                                                "h100-sxm,1,,1024,256,vllm,5000\n")]
    running = floors.running_batch(s)
    assert r["batch"] == running > 1  # no batch given: as many as fit
    f = r["tokens_per_s_per_chip"]
    assert f["floor"] == pytest.approx(running / floors.tpot_floor(s, running))
    assert f["low"] <= f["estimate"] <= f["high"] <= f["floor"] and f["bound"] == "most"


def test_a_repeated_measurement_is_kept_once_and_a_fitted_row_first():
    from transformer_calculator.measured_runs.repeats import repeats

    def row(i, model, ttft="80.125", tpot="9.5"):
        return {"id": i, "model": model, "measured_ttft_ms": ttft,
                "measured_tpot_ms": tpot}

    rows = [row("a", "held"), row("b", "fit"), row("c", "fit"), row("d", "fit", "80.1"),
            row("e", "fit", ""), row("f", "fit", "")]
    assert repeats(rows, frozenset({"held"})) == {"a": "b", "c": "b"}


def test_the_serving_tables_repeats_are_found_from_its_own_columns():
    """Counted with the csv module: rows sharing both measured times, beyond the
    first of each, are the repeats; none kept is a held-out model's while a fitted
    model's row carries the same times."""
    from transformer_calculator.measured_runs.fit import HELD_OUT
    from transformer_calculator.measured_runs.repeats import repeats

    source = _serving_table()
    times: dict[tuple[str, str], list[str]] = {}
    for r in source:
        times.setdefault((r["silicon_ttft_ms"], r["silicon_tpot_ms"]), []).append(r["id"])
    expected = sum(len(ids) - 1 for ids in times.values())
    rows = conversion.serving_rows()
    again = repeats(rows, frozenset(HELD_OUT))
    assert len(again) == expected > 0
    model = {r["id"]: r["model"] for r in rows}
    for kept in set(again.values()):
        group = next(ids for ids in times.values() if kept in ids)
        assert kept not in again
        if model[kept] in HELD_OUT:
            assert all(model[i] in HELD_OUT for i in group)
