"""The plan search against an enumeration of every choice (a small model on a chip cut
down so that memory binds), against a published plan (Llama 3 405B's TP 8 x PP 16
fits and ranks among the plans), and through the command line (exit codes, JSON)."""

from __future__ import annotations

import dataclasses
import itertools
import json

import pytest

from transformer_calculator.counting.activations import RECOMPUTE
from transformer_calculator.counting.chips import chip
from transformer_calculator.command_line.cli import load_model, main
from transformer_calculator.planning import Space, TrainingGoal, training_plans
from transformer_calculator.planning.space import divisors
from transformer_calculator.planning.training_search import micro_batch_choices
from transformer_calculator.splits import (Split, chip_link, chip_machine, chip_network,
                                           training_split)
from transformer_calculator.counting.training import Training

H100 = chip("h100-sxm")
LINKS = {"link": chip_link(H100), "network": chip_network(H100),
         "machine": chip_machine(H100)}


def _every_plan(model, acc, chips, goal):
    """Every (split, training) the search's room holds, priced by training_split alone:
    every ZeRO stage and every recomputation, no pruning."""
    found = []
    for tp, cp, pp in itertools.product(divisors(chips), repeat=3):
        if chips % (tp * cp * pp) or tp > 8 or cp > 8:
            continue
        dp = chips // (tp * cp * pp)
        if goal.global_batch % dp or (cp > 1 and goal.seq_len % (2 * cp)):
            continue
        batch = goal.global_batch // dp
        for v, mb, zero, r in itertools.product(
                (1, 2) if pp > 1 else (1,), micro_batch_choices(batch, pp),
                (0, 1, 2, 3) if dp > 1 else (0,), RECOMPUTE):
            if v > 1 and mb % pp:
                continue
            s = Split(tp=tp, cp=cp, pp=pp, dp=dp, virtual_stages=v, micro_batches=mb,
                      **LINKS)
            t = Training(batch=batch, seq_len=goal.seq_len, recompute=r,
                         zero_stage=zero, devices=dp, micro_batches=mb)
            try:
                f = training_split(model, acc, s, t, goal.tokens)
            except ValueError:
                continue
            found.append((f["fits"], f["tokens_per_s"] / chips, (tp, cp, pp, dp, v, mb,
                                                                 zero, r)))
    return found


def test_the_search_finds_the_best_plan_an_enumeration_finds():
    model, _ = load_model("gated-gqa-1b")
    acc = dataclasses.replace(H100, memory_bytes=6 * 2**30)
    goal = TrainingGoal(tokens=10**9, seq_len=2048, global_batch=16)
    every = _every_plan(model, acc, 8, goal)
    fitting = [e for e in every if e[0]]
    assert fitting and len(fitting) < len(every)  # memory binds, and some fit
    best = max(e[1] for e in fitting)
    plans = training_plans(acc, Space(chips=8, machine=8, formats={"bf16": model},
                                      links=LINKS), goal)["plans"]
    assert plans[0]["tokens_per_s_per_chip"] == pytest.approx(best, rel=1e-12)
    rates = {e[2]: e[1] for e in fitting}
    for p in plans:  # every plan the search gives fits and is priced the same
        key = (p["tp"], p["cp"], p["pp"], p["dp"], p["virtual_stages"],
               p["micro_batches"], p["zero_stage"], p["recompute"])
        assert rates[key] == pytest.approx(p["tokens_per_s_per_chip"], rel=1e-12)
    ranked = [p["tokens_per_s_per_chip"] for p in plans]
    assert ranked == sorted(ranked, reverse=True)


@pytest.mark.slow(5)
def test_llama_3_405b_published_plan_fits_and_ranks():
    model, _ = load_model("llama-3.1-405b")
    chips = 8 * 16 * 2  # Llama 3's TP 8 x PP 16, two copies of the model
    goal = TrainingGoal(tokens=15 * 10**12, seq_len=8192, global_batch=32)
    plans = training_plans(H100, Space(chips=chips, machine=8,
                                       formats={"bf16": model}, links=LINKS),
                           goal)["plans"]
    published = [i for i, p in enumerate(plans)
                 if (p["tp"], p["pp"], p["cp"], p["dp"]) == (8, 16, 1, 2)]
    assert published, "Llama 3's TP 8 x PP 16 should fit"
    assert all(plans[i]["memory_bytes"] <= H100.memory_bytes for i in published)
    assert published[0] < len(plans) / 4  # and ranks in the top quarter of them


@pytest.mark.slow(3)
def test_the_command_ranks_a_training_run_and_a_service(capsys):
    base = ["plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8"]
    assert main(base + ["--tokens", "1000000000", "--seq-len", "4096",
                        "--global-batch", "64", "--price", "2", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["plans"] and r["ranked_by"].startswith("dollars a million tokens")
    dollars = [p["per_million_tokens"]["dollars_at_least"] for p in r["plans"]]
    assert dollars == sorted(dollars)
    assert main(base + ["--prompt", "1000", "--answer", "200", "--rate", "5",
                        "--ttft-ms", "500", "--tpot-ms", "30"]) == 0
    out = capsys.readouterr().out
    assert "#1" in out and "floor" in out and "requests a second a chip" in out
    assert main(base + ["--prompt", "1000", "--answer", "200", "--rate", "5",
                        "--ttft-ms", "500", "--tpot-ms", "30", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert {p["kind"] for p in r["plans"]} == {"aggregated", "disaggregated"}


@pytest.mark.parametrize("extra", [
    [], ["--tokens", "5"], ["--tokens", "5", "--seq-len", "8", "--global-batch", "8",
                            "--prompt", "3"],
    ["--prompt", "10", "--answer", "10", "--rate", "-1", "--ttft-ms", "1",
     "--tpot-ms", "1"],
    ["--formats", "int3", "--tokens", "5", "--seq-len", "8", "--global-batch", "8"]])
def test_bad_input_is_one_line_and_exit_2(extra, capsys):
    code = main(["plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8", *extra])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1


def test_the_service_search_takes_the_best_batch_of_every_unit():
    from transformer_calculator.planning import ServingGoal, serving_plans
    from transformer_calculator.planning.serving_search import BATCHES, units
    from transformer_calculator.service.serving import Request
    from transformer_calculator.service.serving import Serving
    from transformer_calculator.splits import serving_split

    model, _ = load_model("llama-3-8b")
    space = Space(chips=4, machine=8, formats={"bf16": model}, links=LINKS)
    goal = ServingGoal(prompt=1000, answer=100, rate=1.0, ttft_s=0.5, tpot_s=0.02)
    best = 0.0
    for u in units(model, space):  # every unit, every batch, by hand
        s = Split(**u, **LINKS)
        f = serving_split(model, H100, s, Serving(), (1000,), BATCHES, (1100,),
                          (Request(1000, 100),))
        for r in f["requests"]:
            if (f["weights_fit"] and r["fits"] and r["first_token_seconds"] <= 0.5
                    and r["mean_step_seconds"] <= 0.02):
                best = max(best, u["dp"] * r["batch"] / r["whole_seconds"]
                           / s.devices)
    plans = serving_plans(H100, space, goal, disaggregate=False)["plans"]
    assert best > 0 and plans[0]["requests_per_s_per_chip"] == pytest.approx(best)
    for p in plans:  # every plan within the targets, its units filling the chips
        assert p["ttft_seconds_floor"] <= 0.5 and p["tpot_seconds_floor"] <= 0.02
        assert p["units"] * p["devices"] <= 4


def test_disaggregated_chips_are_split_where_the_fewer_requests_is_most():
    from transformer_calculator.planning.serving_search import _pair

    goal = type("G", (), {"rate": 10.0, "answer": 100})()
    unit = {"weights": "bf16", "weight_bytes_per_device": 10,
            "prompt_cache_bytes_per_device": 1}
    prefill = ({**unit, "devices": 2},
               (3.0, {"batch": 4, "first_token_seconds": 0.1,
                      "step_by_cause_seconds": {}}))
    decode = ({**unit, "devices": 3},
              (1.0, {"batch": 64, "mean_step_seconds": 0.01,
                     "step_by_cause_seconds": {}, "memory_bytes_per_device": 12}))
    got = _pair(prefill, decode, goal, 17)
    hand = max((min(a * 2 * 3.0, b * 3 * 1.0), a, b) for a in range(1, 9)
               for b in range(1, 6) if 2 * a + 3 * b <= 17)
    assert got["requests_per_s"] == hand[0]
    assert got["prefill_to_decode_chips"] == pytest.approx(1 / 3)
    assert got["requests_per_s_per_chip"] == pytest.approx(1 / (1 / 3.0 + 1 / 1.0))
    assert got["memory_bytes_per_device"] == max(10 + 4 * 1, 12)


def test_each_training_plans_estimate_is_trains_for_the_same_step(capsys):
    """Beside a plan's floors stands the estimate ``train`` prints for the same step (its
    split, micro-batches, ZeRO stage, recomputation and format), labelled as one; the
    ranking stays the floor's."""
    goal = ["--tokens", "1000000000", "--seq-len", "4096", "--global-batch", "64"]
    assert main(["plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8",
                 "--formats", "bf16,fp8", *goal, "--json"]) == 0
    plans = json.loads(capsys.readouterr().out)["plans"]
    floors = [p["tokens_per_s_per_chip"] for p in plans]
    assert floors == sorted(floors, reverse=True)
    for p in plans[:3] + plans[-2:]:
        step = ["train", "llama-3-8b", "--chip", "h100-sxm", "--tp", str(p["tp"]),
                "--cp", str(p["cp"]), "--pp", str(p["pp"]), "--devices", str(p["dp"]),
                "--batch", str(p["batch_per_copy"]), "--micro-batches",
                str(p["micro_batches"]), "--virtual-stages", str(p["virtual_stages"]),
                "--zero-stage", str(p["zero_stage"]), "--recompute", p["recompute"],
                "--seq-len", "4096", "--tokens", "1000000000", "--json"]
        if p["weights"] != "bf16":
            step += ["--weights", p["weights"]]
        assert main(step) == 0
        trained = json.loads(capsys.readouterr().out)
        assert trained["split"]["split"]["devices"] == 8
        assert trained["tokens_per_s"] / 8 == pytest.approx(p["tokens_per_s_per_chip"],
                                                            rel=1e-12)
        e = p["tokens_per_s_per_chip_estimate"]
        assert e == trained["estimate"] and e["floor"] == pytest.approx(
            p["tokens_per_s_per_chip"], rel=1e-12)
        assert e["low"] <= e["estimate"] <= e["high"] <= e["floor"]
    assert main(["plan", "llama-3-8b", "--chip", "h100-sxm", "--chips", "8", *goal]) == 0
    text = capsys.readouterr().out
    assert text.count("tokens a second a chip, estimated: floor ") == 5
    assert "measured runs like this one" in text
