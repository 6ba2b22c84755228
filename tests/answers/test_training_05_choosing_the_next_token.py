"""Answers of training section 5 (choosing the next token), recomputed with torch from the
simulated raw outputs: torch's softmax and Categorical, a torch top-p, and a beam search
written out with torch.topk over every path of the simulated tree."""
import pytest
import torch

from checking import check
from transformer_arithmetic import simulated

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


def in_words(items):
    return ", ".join(items[:-1]) + " and " + items[-1]


CHECKS = {
    "ans_sample_cut_kept": lambda g: int((torch_top_p(torch.softmax(ROW4, -1), g["ex_sample_cut"]) > 0).sum()),
    "ans_sample_cut_top": lambda g: float(torch_top_p(torch.softmax(ROW4, -1), g["ex_sample_cut"]).max()),
    "ans_sample_cold_entropy": lambda g: float(torch.distributions.Categorical(
        logits=torch.tensor(simulated.LOGITS[0], dtype=torch.float64) / g["ex_sample_temp"]).entropy()),
    "ans_sample_cold_kept": lambda g: int((torch_top_p(torch.softmax(
        torch.tensor(simulated.LOGITS[0], dtype=torch.float64) / g["ex_sample_temp"], -1), g["cut"]) > 0).sum()),
    "ans_sample_beam_pairs": lambda g: in_words([f'"{w}"' for w, _ in torch_beam(g["ex_sample_width"])]),
    "ans_sample_beam_last": lambda g: torch_beam(g["ex_sample_width"])[-1][1],
    "ans_sample_mean_cold": lambda g: float((torch.softmax(ROW4, -1)
                                             * torch.softmax(ROW4 / g["ex_sample_mean_temp"], -1)).sum()),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
