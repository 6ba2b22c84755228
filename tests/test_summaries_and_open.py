"""The parallel scan and the prefill limits, checked against independent references."""
import numpy as np
import pytest
import torch

import decoder_reference as R
from decoder_reference import CHIP_24GIB, PLAIN_335M
import transformer_arithmetic as ta
from transformer_arithmetic import summaries, timing

pytestmark = pytest.mark.torch_kernels

M, A = PLAIN_335M, CHIP_24GIB


def reference_summaries(inputs, rates):
    """h_t = sum over s <= t of input_s times the product of rates s+1..t, written out with torch."""
    x = torch.tensor(inputs, dtype=torch.float64)
    a = torch.tensor(rates, dtype=torch.float64)
    out = []
    for t in range(len(x)):
        out.append(sum(float(x[s] * torch.prod(a[s + 1 : t + 1])) for s in range(t + 1)))
    return np.array(out)


@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 21, 100])
def test_parallel_scan_matches_the_walk_and_a_reference(n):
    rng = np.random.default_rng(n)
    x, a = rng.normal(size=n), rng.uniform(0.5, 1.0, size=n)
    scanned, rounds = summaries.parallel_scan(x, a)
    np.testing.assert_allclose(scanned, summaries.run_summary(x, a), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(scanned, reference_summaries(x, a), rtol=1e-12, atol=1e-12)
    assert rounds == int(np.ceil(np.log2(n))) if n > 1 else rounds == 0


def test_parallel_scan_with_one_fixed_rate_matches_token_weight():
    impulse = np.zeros(21)
    impulse[2] = 1.0
    scanned, rounds = summaries.parallel_scan(impulse, 0.9)
    np.testing.assert_allclose(scanned, summaries.token_weight(0.9, 2, 21))
    assert rounds == 5 and scanned[20] == pytest.approx(0.9**18)


@pytest.mark.parametrize("rate", [0.0, 1.5, -0.1, float("nan")])
def test_parallel_scan_rejects_bad_rates(rate):
    with pytest.raises(ValueError, match="rate"):
        summaries.parallel_scan([1.0, 2.0], rate)


def test_prefill_limits_against_a_real_decoder():
    """One pass over a prompt: every position through every matrix of a real decoder (and a
    multiply-add per normalisation number), 4 operations per query channel per causal pair
    (counted one position at a time); the real weights read once, and the real cache written."""
    for tokens in (1, 512, 8192):
        flops, nbytes = R.prefill_work(M, tokens)
        arithmetic, reading = flops / A.flops_per_s, nbytes / A.bytes_per_s
        assert timing.prefill_limits(M, A, tokens) == (arithmetic, reading)
        assert timing.prefill_time(M, A, tokens) == max(arithmetic, reading)
    assert arithmetic > reading  # a long prompt is limited by its arithmetic
    assert reading == pytest.approx((671_188_992 + 8192 * 98304) / 1e12)


def test_prefill_limits_reject_bad_lengths():
    with pytest.raises(ValueError, match="tokens"):
        timing.prefill_limits(M, A, -1)
