"""Answers of training section 5 (choosing the next token), recomputed with torch from the
simulated raw outputs (torch's softmax and autograd, a torch top-p), and the beam's cost from a
real decoder's parameters and cache."""
import pytest
import torch

import published
import transformer_arithmetic as ta
from transformer_calculator.reading.plain import shipped_shape
from checking import check
from decoder_reference import cache_bytes_per_token, parameters, weight_bytes
from transformer_arithmetic.examples import simulated
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/05_choosing_the_next_token"
VOCAB = simulated.VOCAB
ROW4 = torch.tensor(simulated.LOGITS[3], dtype=torch.float64)


def torch_top_p(probs: torch.Tensor, cut: float) -> torch.Tensor:
    """The chances after a top-p cut, the usual torch way: a word survives while the words
    ranked above it hold less than ``cut``."""
    sorted_p, order = torch.sort(probs, descending=True, stable=True)
    keep = (torch.cumsum(sorted_p, 0) - sorted_p) < cut
    kept = torch.zeros_like(probs).scatter(0, order, sorted_p * keep)
    return kept / kept.sum()


def torch_beam(width: int) -> list[tuple[str, float]]:
    """The pairs a beam of ``width`` keeps on the simulated tree, best first, with their chances."""
    first = torch.softmax(ROW4, -1)
    kept_first = torch.topk(first, width).indices.tolist()
    pairs = []
    for a in kept_first:
        nxt = torch.softmax(torch.tensor(simulated.NEXT_LOGITS[VOCAB[a]], dtype=torch.float64), -1)
        pairs += [(f"{VOCAB[a]} {VOCAB[b]}", float(first[a] * nxt[b])) for b in range(len(VOCAB))]
    return sorted(pairs, key=lambda p: -p[1])[:width]


def peak_temperature(word: str) -> float:
    """The temperature at which `word` has its highest chance at position 4: where the
    derivative of its chance with respect to T, by autograd, changes sign (bisection)."""
    i = VOCAB.index(word)

    def rising(t: float) -> bool:                   # its chance still grows with T
        temp = torch.tensor(t, dtype=torch.float64, requires_grad=True)
        torch.softmax(ROW4 / temp, -1)[i].backward()
        return temp.grad.item() > 0

    low, high = 0.05, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if rising(mid) else (low, mid)
    return (low + high) / 2


def through(word: str) -> float:
    """The running total of position 4's sorted chances up to and including `word`."""
    probs = torch.softmax(ROW4, -1)
    sorted_p, order = torch.sort(probs, descending=True, stable=True)
    rank = order.tolist().index(VOCAB.index(word))
    return float(sorted_p[: rank + 1].sum())


LLAMA = shipped_shape("llama-3-8b")   # the sizes of its published config.json
H100 = ta.accelerator_of(published.chip("h100-sxm"))


def widest_beam(m: ta.ModelShape, chip: ta.Accelerator, n: int, budget: float) -> int:
    """The widest beam by the formula k <= budget + (budget - 1) D_w / (n C), with D_w the bytes
    the real decoder's matrices move for one token (each matrix read once, its input and output
    of one token each) and C the bytes of its real cache a token."""
    with torch.device("meta"):
        decoder = Decoder(m)
    b = m.bytes_per_number
    moved = sum(b * (mod.in_features + mod.in_features * mod.out_features + mod.out_features)
                for mod in decoder.modules() if isinstance(mod, torch.nn.Linear))
    return int(budget + (budget - 1) * moved / (n * cache_bytes_per_token(m)))


CHECKS = {
    "ans_sample_peak_t": lambda g: peak_temperature(g["second_word"]),
    "ans_sample_peak_p": lambda g: float(torch.softmax(ROW4 / peak_temperature(g["second_word"]), -1)
                                         [VOCAB.index(g["second_word"])]),
    "ans_sample_cut_smallest": lambda g: through(g["right_word"]),
    "ans_sample_cut_shared": lambda g: float(torch_top_p(torch.softmax(ROW4, -1), through(g["right_word"]))
                                             [VOCAB.index(g["right_word"])]),
    "ans_sample_beam_toy": lambda g: widest_beam(ta.EXAMPLE_MODEL, ta.EXAMPLE_ACCELERATOR,
                                                 g["answer_len"], g["ex_sample_budget"]),
    "ans_sample_beam_real": lambda g: widest_beam(LLAMA, H100, g["answer_len"], g["ex_sample_budget"]),
    "ans_sample_mean_cold": lambda g: float((torch.softmax(ROW4, -1)
                                             * torch.softmax(ROW4 / g["ex_sample_mean_temp"], -1)).sum()),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
