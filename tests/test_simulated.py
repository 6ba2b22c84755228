"""Checks of the simulated example's table against every figure the book quotes.

The figures are recomputed here with torch (softmax, cross-entropy, entropy), not
with the module's own helpers, so the table is checked by an independent route.
Every figure must come out to exactly the quoted digits."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from transformer_arithmetic.examples import simulated as sim

pytestmark = pytest.mark.torch_kernels

W = {w: i for i, w in enumerate(sim.VOCAB)}


def fmt(x: float | torch.Tensor, digits: int) -> str:
    """A number as the text prints it."""
    return f"{float(x):.{digits}f}"


def chances(logits, temperature: float = 1.0) -> torch.Tensor:
    """Softmax of a row (or rows) of logits at a temperature, in float64."""
    return torch.softmax(torch.as_tensor(logits, dtype=torch.float64) / temperature, dim=-1)


def entropy(logits, temperature: float = 1.0) -> float:
    """Entropy in nats of the chances at a temperature."""
    z = torch.as_tensor(logits, dtype=torch.float64) / temperature
    return float(torch.distributions.Categorical(logits=z).entropy())


def top_p(p: torch.Tensor, cut: float = 0.9) -> tuple[int, torch.Tensor]:
    """How many words a top-p cut keeps, and the running totals of the sorted chances."""
    running = torch.cumsum(torch.sort(p, descending=True).values, dim=0)
    return int((running < cut).sum()) + 1, running


def quoted_figures(logits, next_logits, scores) -> dict[str, tuple[str, str]]:
    """Every quoted figure as (computed text, quoted text)."""
    L = torch.as_tensor(logits, dtype=torch.float64)
    P = chances(L)
    targets = torch.tensor([W[w] for w in sim.TARGETS])
    losses = F.cross_entropy(L, targets, reduction="none")
    guesses = [sim.VOCAB[int(i)] for i in P.argmax(dim=1)]
    f: dict[str, tuple[str, str]] = {}

    # Whole sentence.
    f["mean loss"] = (fmt(F.cross_entropy(L, targets), 2), "1.31")
    f["right guesses"] = (str([g == t for g, t in zip(guesses, sim.TARGETS)]),
                          str([False, True, False, False, True, True]))
    # Position 1.
    p1 = P[0]
    f["P1 the"] = (fmt(p1[W["the"]], 3), "0.101")
    f["P1 top"] = (fmt(p1.max(), 3), "0.189")
    f["P1 top is not 'the'"] = (str(guesses[0] != "the"), "True")
    f["P1 top-p count"] = (str(top_p(p1)[0]), "9")
    # Positions 2 and 5: correct guesses.
    f["P2 top"] = (guesses[1], "arm")
    f["P5 top"] = (guesses[4], "red")
    # Position 3.
    f["P3 lifts"] = (fmt(P[2][W["lifts"]], 3), "0.053")
    f["P3 loss"] = (fmt(losses[2], 2), "2.94")
    f["P3 top is not 'lifts'"] = (str(guesses[2] != "lifts"), "True")
    # Position 4.
    row4, p4 = L[3], P[3]
    order = torch.argsort(row4, descending=True)
    f["P4 six largest"] = (str([round(float(v), 2) for v in row4[order[:6]]]),
                           str([2.59, 1.97, 1.69, 1.37, 0.74, 0.64]))
    f["P4 largest word"] = (sim.VOCAB[int(order[0])], "lifts")
    f["P4 second word"] = (sim.VOCAB[int(order[1])], "the")
    f["P4 smallest"] = (f"{sim.VOCAB[int(order[-1])]} {fmt(row4[order[-1]], 2)}", "block -2.61")
    f["P4 lifts"] = (fmt(p4[W["lifts"]], 3), "0.352")
    f["P4 the"] = (fmt(p4[W["the"]], 3), "0.189")
    f["P4 loss"] = (fmt(losses[3], 2), "1.67")
    cold, hot = chances(row4, 0.5), chances(row4, 1.5)
    f["P4 T=0.5 top"] = (fmt(cold.max(), 3), "0.620")
    f["P4 T=1.5 top"] = (fmt(hot.max(), 3), "0.253")
    f["P4 T=0.5 entropy"] = (fmt(entropy(row4, 0.5), 2), "1.20")
    f["P4 T=1.5 entropy"] = (fmt(entropy(row4, 1.5), 2), "2.14")
    f["P4 T=1.5 least"] = (fmt(hot.min(), 4), "0.0079")
    f["P4 T=1.5 least, 1 in"] = (str(round(1 / float(hot.min()))), "127")
    f["P4 T=0.5 least is almost nothing"] = (str(float(cold.min()) < 1e-4), "True")
    kept, running = top_p(p4)
    f["P4 top-p count"] = (str(kept), "7")
    f["P4 running total after 6 below 0.9"] = (str(float(running[5]) < 0.9), "True")
    f["P4 running total after 7"] = (fmt(running[6], 3), "0.936")
    f["P4 renormalised favourite"] = (fmt(p4.max() / running[6], 3), "0.376")
    # Position 6.
    f["P6 block"] = (fmt(P[5][W["block"]], 3), "0.933")
    f["P6 loss"] = (fmt(losses[5], 2), "0.07")
    f["P6 top-p count"] = (str(top_p(P[5])[0]), "1")
    # Greedy two-step tree from position 4.
    q_lifts, q_the = chances(next_logits["lifts"]), chances(next_logits["the"])
    f["tree via lifts"] = (fmt(p4[W["lifts"]] * q_lifts.max(), 4), "0.0647")
    f["tree via the"] = (fmt(p4[W["the"]] * q_the.max(), 4), "0.1141")
    f["tree via the ends in red"] = (sim.VOCAB[int(q_the.argmax())], "red")
    # Attention scores.
    S = torch.as_tensor(scores, dtype=torch.float64)
    causal = torch.softmax(S[2, :3], dim=0)
    f["row 3 causal"] = (" ".join(fmt(w, 3) for w in causal), "0.398 0.253 0.349")
    zeroed = torch.softmax(torch.cat([S[2, :3], torch.zeros(3, dtype=torch.float64)]), dim=0)
    f["row 3 zeroed, blocked share"] = (fmt(zeroed[3:].sum(), 3), "0.452")
    unmasked = torch.softmax(S[2], dim=0)
    f["row 3 unmasked, column 4"] = (fmt(unmasked[3], 3), "0.197")
    f["row 3 unmasked, columns 4-6"] = (fmt(unmasked[3:].sum(), 3), "0.503")
    w6 = torch.softmax(S[5], dim=0)
    f["row 6 column 1"] = (fmt(w6[0], 3), "0.094")
    f["row 6 column 6"] = (fmt(w6[5], 3), "0.412")
    f["row 6 others strictly between"] = (str(bool(((w6[1:5] > w6[0]) & (w6[1:5] < w6[5])).all())), "True")
    return f


FIGURES = quoted_figures(sim.LOGITS, sim.NEXT_LOGITS, sim.SCORES)


@pytest.mark.parametrize("name", list(FIGURES))
def test_quoted_figure(name: str) -> None:
    computed, quoted = FIGURES[name]
    assert computed == quoted, name


def test_the_example_fits_together() -> None:
    assert len(sim.VOCAB) == 12 and len(set(sim.VOCAB)) == 12
    assert set(sim.SENTENCE) <= set(sim.VOCAB) and "<start>" not in sim.VOCAB
    assert sim.INPUTS == ("<start>",) + sim.SENTENCE[:-1]
    assert [len(r) for r in sim.LOGITS] == [12] * 6
    assert [len(r) for r in sim.SCORES] == [6] * 6
    assert all(len(r) == 12 for r in sim.NEXT_LOGITS.values())
    assert {"lifts", "the"} <= set(sim.NEXT_LOGITS)
    # After choosing "the" at position 4 the model has read exactly what it reads at position 5.
    assert sim.NEXT_LOGITS["the"] == sim.LOGITS[4]


def test_tables_are_plain_rounded_numbers() -> None:
    for row in (*sim.LOGITS, *sim.NEXT_LOGITS.values()):
        assert all(type(v) is float and round(v, 2) == v for v in row)
    for i, row in enumerate(sim.SCORES):
        assert all(type(v) is float and round(v, 3 if i == 2 else 2) == v and abs(v) < 2 for v in row)
    assert any(v < 0 for v in sim.SCORES[0]) and any(v > 0 for v in sim.SCORES[0])


def test_arrays() -> None:
    a, s = sim.logits_array(), sim.scores_array()
    assert a.dtype == np.float64 and a.shape == (6, 12) and a.tolist() == [list(r) for r in sim.LOGITS]
    assert s.dtype == np.float64 and s.shape == (6, 6) and s.tolist() == [list(r) for r in sim.SCORES]
    assert sim.next_logits_array("lifts").tolist() == list(sim.NEXT_LOGITS["lifts"])


def test_the_derivation_rebuilds_the_stored_tables() -> None:
    from transformer_arithmetic.examples import simulated_derivation as derive_simulated

    assert derive_simulated.derive_logits() == sim.LOGITS
    assert derive_simulated.derive_next_logits() == sim.NEXT_LOGITS
    assert derive_simulated.derive_scores() == sim.SCORES


def _changed(table, row: int, col: int, step: float):
    """A copy of a table with one entry moved by ``step``."""
    rows = [list(r) for r in table]
    rows[row][col] = round(rows[row][col] + step, 3)
    return tuple(tuple(r) for r in rows)


@pytest.mark.parametrize(
    ("table", "row", "col"),
    [("logits", 0, W["the"]), ("logits", 2, W["lifts"]), ("logits", 3, W["lifts"]), ("logits", 3, W["the"]),
     ("logits", 5, W["block"]), ("scores", 2, 0), ("scores", 2, 3), ("scores", 5, 5)],
)
def test_figures_notice_a_changed_entry(table: str, row: int, col: int) -> None:
    """Moving a quoted entry by 0.02 either way breaks at least one quoted figure."""
    for step in (0.02, -0.02):
        logits, scores = sim.LOGITS, sim.SCORES
        if table == "logits":
            logits = _changed(logits, row, col, step)
        else:
            scores = _changed(scores, row, col, step)
        figures = quoted_figures(logits, {**sim.NEXT_LOGITS, "the": logits[4]}, scores)
        assert any(c != q for c, q in figures.values()), (table, row, col, step)


def test_report_values_are_what_the_book_will_print() -> None:
    """Figures the book computes but the original did not pin down (recorded here so a
    change to the table shows up): entropy at T=1, other top-p counts and losses."""
    P = chances(sim.LOGITS)
    assert fmt(entropy(sim.LOGITS[3]), 2) == "1.89"
    assert [top_p(P[k])[0] for k in (1, 2, 4)] == [5, 9, 5]
    losses = [-math.log(float(P[k][W[t]])) for k, t in ((1, "arm"), (4, "red"))]
    assert [fmt(x, 2) for x in losses] == ["0.39", "0.51"]
    six = torch.sort(torch.tensor(sim.LOGITS[3], dtype=torch.float64), descending=True).values[:6]
    q = torch.softmax(six, dim=0)
    assert " ".join(fmt(x, 3) for x in q) == "0.394 0.212 0.160 0.116 0.062 0.056"
    assert top_p(q)[0] == 5
