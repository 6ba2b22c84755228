"""Money and energy of a training run: the chip-hours at a price, the boards' published
power for those hours, the JSON valid, bad prices and PUEs refused in one line."""

from __future__ import annotations

import contextlib
import io
import json

import pytest

import published
from transformer_calculator.command_line.cli import main
from transformer_calculator.counting.running_costs import running_costs


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def test_costs_are_chip_hours_times_price_and_board_power():
    c = running_costs(1000.0, 2.5, 700.0, 1.2)
    assert c.dollars == 2500.0 and c.kwh == 1000 * 0.7 * 1.2
    assert running_costs(10.0, None, None).as_dict() == {
        "dollars_at_least": None, "kwh_at_board_power": None, "board_power_w": None,
        "pue": 1.0}


def test_train_prints_cost_and_energy_from_its_own_chip_hours():
    argv = ("train", "llama-3-8b", "--chip", "h100-sxm", "--price", "2.5", "--pue", "1.1")
    code, out, _ = run(*argv, "--json")
    r = json.loads(out)
    power = published.chip("h100-sxm").board_power_w
    assert code == 0 and r["running_costs"]["board_power_w"] == power
    assert r["running_costs"]["dollars_at_least"] == pytest.approx(r["chip_hours"] * 2.5)
    assert r["running_costs"]["kwh_at_board_power"] == pytest.approx(
        r["chip_hours"] * power / 1e3 * 1.1)
    _, text, _ = run(*argv)
    assert "Cost                        at least $" in text
    assert "as model cards count it (not a bound" in text


@pytest.mark.parametrize("flag,value", [("--price", "-1"), ("--price", "x"),
                                        ("--pue", "0.9"), ("--pue", "4")])
def test_a_bad_price_or_pue_is_one_line_and_exit_code_2(flag, value):
    code, out, err = run("train", "llama-3-8b", "--chip", "h100-sxm", flag, value)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert flag in err
