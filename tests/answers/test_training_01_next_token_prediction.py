"""Answers of training section 1 (next-token prediction), computed with PyTorch's own loss."""
import math

import pytest
import torch
from torch.nn import functional as F

import transformer_arithmetic as ta
from checking import check
from transformer_arithmetic.examples import simulated

pytestmark = [pytest.mark.torch_kernels, pytest.mark.notebooks]

NOTEBOOK = "training/01_next_token_prediction"


def even_guess_loss(vocab: int) -> float:
    """PyTorch's cross-entropy of a guess that gives every word the same raw output."""
    return F.cross_entropy(torch.zeros(1, vocab, dtype=torch.float64), torch.tensor([0])).item()


def sentence_nats() -> float:
    """The simulated model's summed loss over the sentence, by PyTorch."""
    targets = torch.tensor([simulated.VOCAB.index(w) for w in simulated.TARGETS])
    logits = torch.tensor(simulated.LOGITS, dtype=torch.float64)
    return F.cross_entropy(logits, targets, reduction="sum").item()


def per_position() -> torch.Tensor:
    """The simulated model's loss at each position, by PyTorch."""
    targets = torch.tensor([simulated.VOCAB.index(w) for w in simulated.TARGETS])
    logits = torch.tensor(simulated.LOGITS, dtype=torch.float64)
    return F.cross_entropy(logits, targets, reduction="none")


def chance_for_mean(pos: int, mean: float) -> float:
    """The chance position `pos` must give its right word for the sentence's mean loss to be
    `mean`, the other positions unchanged: solve n * mean = others + (-ln x) for x."""
    losses = per_position()
    others = losses.sum().item() - losses[pos - 1].item()
    return math.exp(-(len(losses) * mean - others))


CHECKS = {
    "ans_ntp_uniform_nats": lambda g: even_guess_loss(g["ex_ntp_real_vocab"]),
    "ans_ntp_uniform_bits": lambda g: even_guess_loss(g["ex_ntp_real_vocab"]) / math.log(2),
    "ans_ntp_uniform_gap": lambda g: even_guess_loss(g["ex_ntp_real_vocab"])
    - even_guess_loss(ta.EXAMPLE_MODEL.vocab),
    "ans_ntp_bits_model": lambda g: sentence_nats() / math.log(2),
    "ans_ntp_bits_even": lambda g: len(simulated.TARGETS) * math.log2(len(simulated.VOCAB)),
    "ans_ntp_needed": lambda g: chance_for_mean(g["pos_a"], per_position().mean().item() - g["ex_ntp_drop"]),
    "ans_ntp_most": lambda g: per_position()[g["pos_a"] - 1].item() / len(per_position()),
}


@pytest.mark.parametrize("key", CHECKS)
def test_answer(key):
    check(NOTEBOOK, key, CHECKS[key])
