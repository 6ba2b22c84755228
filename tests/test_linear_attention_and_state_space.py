"""Linear attention, the delta rule, selective and time-invariant state-space layers, the
work-efficient scan, WaveNet's repeated stack and long filters, each against an
independent reference: the sums written out in PyTorch, torch's convolutions and FFT,
the Mamba paper's gated recurrence (Theorem 1), a least-squares bound and a walk."""
import math

import numpy as np
import pytest
import torch
from torch.nn import functional as F

from transformer_arithmetic import convolution, linear_attention as la, state_space as ss
from transformer_arithmetic import summaries

pytestmark = pytest.mark.torch_kernels


def torch_linear_attention(q, k, v, rates):
    """o_t = sum over s <= t of (prod of rates s+1..t) (q_t . k_s) v_s, summed pair by pair."""
    q, k, v, g = (torch.as_tensor(x, dtype=torch.float64) for x in (q, k, v, rates))
    n = q.shape[0]
    out = torch.zeros(n, v.shape[1], dtype=torch.float64)
    for t in range(n):
        for s in range(t + 1):
            out[t] += torch.prod(g[s + 1 : t + 1]) * (q[t] @ k[s]) * v[s]
    return out.numpy()


@pytest.mark.parametrize("n, chunk", [(1, 1), (7, 3), (12, 4), (13, 5), (9, 20)])
def test_linear_attention_three_ways_and_pair_by_pair(n, chunk):
    rng = np.random.default_rng(n)
    q, k = rng.normal(size=(2, n, 4))
    v = rng.normal(size=(n, 3))
    rates = rng.uniform(0.4, 1.0, n)
    want = torch_linear_attention(q, k, v, rates)
    walk, state = la.linear_attention_walk(q, k, v, rates)
    np.testing.assert_allclose(walk, want, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(la.linear_attention_masked(q, k, v, rates), want, atol=1e-12)
    np.testing.assert_allclose(la.linear_attention_chunked(q, k, v, rates, chunk), want,
                               atol=1e-12)
    assert state.shape == (4, 3) and la.state_numbers(4, 3, heads=2) == 24
    gamma = la.decay_matrix(rates, n)
    assert np.all(np.triu(gamma, 1) == 0) and np.all(np.diag(gamma) == 1)


def test_the_delta_rule_against_its_matrix_form():
    rng = np.random.default_rng(3)
    q, k = rng.normal(size=(2, 10, 5))
    k /= np.linalg.norm(k, axis=1, keepdims=True)
    v = rng.normal(size=(10, 2))
    beta, rates = rng.uniform(0, 1, 10), rng.uniform(0.5, 1, 10)
    s = torch.zeros(5, 2, dtype=torch.float64)
    outs = []
    for t in range(10):
        kt, vt = torch.tensor(k[t]), torch.tensor(v[t])
        erase = torch.eye(5, dtype=torch.float64) - beta[t] * torch.outer(kt, kt)
        s = rates[t] * erase @ s + beta[t] * torch.outer(kt, vt)
        outs.append(s.T @ torch.tensor(q[t]))
    out, state = la.delta_rule_walk(q, k, v, beta, rates)
    np.testing.assert_allclose(out, torch.stack(outs).numpy(), atol=1e-12)
    np.testing.assert_allclose(state, s.numpy(), atol=1e-12)


def test_a_state_of_n_key_dimensions_hands_back_n_pairs_and_no_more():
    rng = np.random.default_rng(4)
    keys = np.linalg.qr(rng.normal(size=(16, 16)))[0]          # 16 orthonormal keys
    values = rng.normal(size=(16, 8))
    assert la.read_errors(keys, values).max() < 1e-12
    more = rng.normal(size=(17, 16))
    more /= np.linalg.norm(more, axis=1, keepdims=True)
    values = rng.normal(size=(17, 8))
    best = np.linalg.lstsq(more, values, rcond=None)[0]          # the best any state can do
    floor = np.linalg.norm(more @ best - values, axis=1) / np.linalg.norm(values, axis=1)
    assert floor.max() > 1e-3
    for rule in ("additive", "delta"):
        assert la.read_errors(more, values, rule).mean() >= floor.mean()
    with pytest.raises(ValueError, match="rule"):
        la.read_errors(more, values, "softmax")


def test_the_delta_rule_replaces_a_value_the_additive_state_blurs():
    keys = np.eye(4)[[0, 1, 0]]                                   # key 0 written twice
    values = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 2.0]])
    added = la.linear_attention_walk(keys, keys, values)[1]
    delta = la.delta_rule_walk(keys, keys, values, 1.0)[1]
    np.testing.assert_allclose(delta.T @ keys[0], [0.0, 2.0], atol=1e-15)
    np.testing.assert_allclose(added.T @ keys[0], [1.0, 2.0], atol=1e-15)


def torch_selective_scan(x, delta, a, b, c):
    """The selective scan as the Mamba paper writes it (zero-order hold), in torch."""
    x, delta, a, b, c = (torch.as_tensor(z, dtype=torch.float64) for z in (x, delta, a, b, c))
    h = torch.zeros(a.shape[0], dtype=torch.float64)
    out = []
    for t in range(x.shape[0]):
        abar = torch.exp(delta[t] * a)
        bbar = (abar - 1) / a * b[t]
        h = abar * h + bbar * x[t]
        out.append(c[t] @ h)
    return torch.stack(out).numpy()


def test_the_selective_walk_and_its_weight_matrix():
    rng = np.random.default_rng(5)
    n, states = 11, 6
    x, delta = rng.normal(size=n), rng.uniform(0, 2, n)
    a = -rng.uniform(0.1, 3, states)
    b, c = rng.normal(size=(2, n, states))
    want = torch_selective_scan(x, delta, a, b, c)
    np.testing.assert_allclose(ss.selective_walk(x, delta, a, b, c), want, atol=1e-12)
    weights = ss.selective_weights(delta, a, b, c)
    np.testing.assert_allclose(weights @ x, want, atol=1e-12)
    assert np.all(np.triu(weights, 1) == 0)
    # the weight on token s read at t is C_t . (Abar_(s+1) ... Abar_t) Bbar_s
    t, s = 9, 3
    kept = np.prod(np.exp(delta[s + 1 : t + 1, None] * a), axis=0)
    assert weights[t, s] == pytest.approx(c[t] @ (kept * np.expm1(delta[s] * a) / a * b[s]))


def test_one_state_number_is_the_papers_gated_recurrence():
    """Theorem 1 of the Mamba paper: N = 1, A = -1, B = C = 1 and delta = softplus(z) give
    h_t = (1 - g_t) h_(t-1) + g_t x_t with g_t = sigmoid(z_t)."""
    rng = np.random.default_rng(6)
    z, x = rng.normal(size=(2, 15)) * 2
    delta = F.softplus(torch.tensor(z)).numpy()
    ones = np.ones((15, 1))
    ours = ss.selective_walk(x, delta, [-1.0], ones, ones)
    g, h, gated = torch.sigmoid(torch.tensor(z)), 0.0, []
    for t in range(15):
        h = (1 - g[t]) * h + g[t] * x[t]
        gated.append(float(h))
    np.testing.assert_allclose(ours, gated, atol=1e-12)


def test_a_bank_of_rates_is_one_long_filter():
    rng = np.random.default_rng(7)
    rates = 0.9 * np.exp(1j * rng.uniform(0, 1, 4)) * rng.uniform(0.5, 1, 4)
    b, c = rng.normal(size=(2, 4)) + 1j * rng.normal(size=(2, 4))
    x = rng.normal(size=40)
    kernel = ss.bank_kernel(rates, b, c, 40)
    reference = F.conv1d(F.pad(torch.tensor(x)[None, None], (39, 0)),
                         torch.tensor(kernel[::-1].copy())[None, None])[0, 0].numpy()
    np.testing.assert_allclose(ss.bank_walk(x, rates, b, c), reference, atol=1e-12)
    np.testing.assert_allclose(convolution.causal_filter(x, kernel), reference, atol=1e-12)
    np.testing.assert_allclose(convolution.causal_filter_fft(x, kernel), reference, atol=1e-12)
    with pytest.raises(ValueError, match="rates"):
        ss.bank_kernel([1.0], [1.0], [1.0], 4)
    with pytest.raises(ValueError, match="a must"):
        ss.zoh(1.0, 0.5)


def test_state_sizes_by_counting_a_real_tensor():
    state = torch.zeros(48, 2 * 1024, 16, dtype=torch.float32)
    assert ss.mamba_state_bytes(48, 1024, 2, 16) == state.numel() * state.element_size()
    assert ss.mamba2_filter_channels(2048, 1, 128) == 2048 + 256
    assert ss.mamba_filter_bytes(2, 64, 4, 4) == torch.zeros(2, 64, 4).numel() * 4


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13, 64, 100])
def test_the_tree_scan_reproduces_the_walk(n):
    rng = np.random.default_rng(n)
    rates, inputs = rng.uniform(0.3, 1, n), rng.normal(size=n)
    a, b = torch.tensor(rates), torch.tensor(inputs)
    for pairs in summaries.tree_scan_pairs(n):
        old_a, old_b = a.clone(), b.clone()
        for earlier, later in pairs:
            a[later] = old_a[earlier] * old_a[later]
            b[later] = old_a[later] * old_b[earlier] + old_b[later]
    h, walk = 0.0, []
    for t in range(n):
        h = rates[t] * h + inputs[t]
        walk.append(h)
    np.testing.assert_allclose(b.numpy(), walk, rtol=1e-12, atol=1e-12)
    written = [later for pairs in summaries.tree_scan_pairs(n) for _, later in pairs]
    assert all(len(set(later for _, later in p)) == len(p) for p in summaries.tree_scan_pairs(n))
    assert summaries.tree_scan_combines(n) == len(written)
    assert summaries.tree_scan_rounds(n) == len(summaries.tree_scan_pairs(n))


def test_the_tree_scan_does_about_two_combines_a_step():
    for n in (2**k for k in range(1, 17)):
        assert summaries.tree_scan_combines(n) == 2 * n - 2 - int(math.log2(n))
    assert len(summaries.tree_scan_pairs(1024)) == 2 * 10 - 1


def test_wavenets_repeated_stack_against_real_convolutions():
    """Width 2, gaps 1 to 2**(L-1), repeated: count the inputs whose gradient reaches the
    last output of a real stack of causal torch convolutions."""
    for layers, blocks in ((3, 1), (3, 3), (4, 2), (10, 3)):
        reach = convolution.repeated_dilated_receptive_field(2, layers, blocks)
        x = torch.zeros(1, 1, reach + 5, dtype=torch.float64, requires_grad=True)
        h = x
        for _ in range(blocks):
            for layer in range(layers):
                gap = 2**layer
                h = F.conv1d(F.pad(h, (gap, 0)), torch.ones(1, 1, 2, dtype=torch.float64),
                             dilation=gap)
        h[0, 0, -1].backward()
        assert int((x.grad != 0).sum()) == reach
