"""The report's money and energy a million tokens: each batch row's chip-hours for a
million tokens (the chips over its tokens a second) at the price given and at the
chip's published board power, counted again here by hand from the row's own figures."""

from __future__ import annotations

import json

import pytest

import published
from transformer_calculator.command_line.cli import main
from transformer_calculator.counting.running_costs import per_million_tokens


def _report(capsys, *extra) -> dict:
    assert main(["report", "llama-3-8b", "--chip", "h100-sxm", "--context", "4096",
                 "--batch", "1,32", "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_million_tokens_by_hand():
    c = per_million_tokens(2000.0, 3.0, 700.0, 1.5)
    hours = 1e6 / 2000.0 / 3600
    assert c.dollars == pytest.approx(3.0 * hours, rel=1e-12)
    assert c.kwh == pytest.approx(hours * 0.7 * 1.5, rel=1e-12)


@pytest.mark.parametrize("split", [[], ["--tp", "2"]])
def test_each_batch_row_is_priced_from_its_own_rate(capsys, split):
    r = _report(capsys, "--price", "2.5", "--pue", "1.2", *split)
    costs, watts = r["running_costs"], published.chip("h100-sxm").board_power_w
    devices = 2 if split else 1
    assert costs["devices"] == devices and costs["board_power_w"] == watts
    for row, priced in zip(r["throughput"], costs["rows"]):
        hours = devices * 1e6 / row["tokens_per_s"] / 3600
        assert priced["dollars_at_least"] == pytest.approx(2.5 * hours, rel=1e-12)
        assert priced["kwh_at_board_power"] == pytest.approx(hours * watts / 1e3 * 1.2,
                                                             rel=1e-12)


def test_the_text_says_what_kind_of_number_each_is(capsys):
    assert main(["report", "llama-3-8b", "--chip", "h100-sxm", "--price", "2"]) == 0
    out = capsys.readouterr().out
    assert "dollars at least" in out and "as model cards count it" in out


def test_energy_alone_with_a_pue(capsys):
    r = _report(capsys, "--pue", "1.1")
    assert all(row["dollars_at_least"] is None and row["kwh_at_board_power"] > 0
               for row in r["running_costs"]["rows"])


@pytest.mark.parametrize("flag,value", [("--price", "0"), ("--pue", "0.5"),
                                        ("--price", "x")])
def test_bad_money_is_one_line_and_exit_2(capsys, flag, value):
    code = main(["report", "llama-3-8b", "--chip", "h100-sxm", flag, value])
    err = capsys.readouterr().err
    assert code == 2 and len(err.strip().splitlines()) == 1
