"""The many-chips page against real collectives: torch.distributed with the gloo backend in
two, three and four CPU processes on the loopback (transformer_arithmetic.runs.gloo).

For each collective and each split the tests require
- the sharded result to equal the same computation done whole in this process (eight-byte
  numbers: they differ only by the order of the sums), against PyTorch's own modules, its
  scaled_dot_product_attention and its torch.optim.Adam;
- the bytes each process handed to the collectives to equal the page's formula;
- the bytes each process wrote to its sockets while they ran (Linux's /proc/self/io) to be
  exactly the formula's payload plus three 48-byte gloo headers for each transfer gloo's own
  algorithms make (gloo.gloo_transfers, read from gloo's source): a formula off by
  a single byte fails, whatever the size of the payload.

One forkserver is started for the module (about a second: it imports torch once); each run
then forks its processes in milliseconds. Times are this CPU's and are never asserted.
"""
import random

import pytest
import torch
from torch.nn import functional as F

import transformer_arithmetic as ta
from transformer_arithmetic import collectives as co
from transformer_arithmetic import context_parallel as cp
from transformer_arithmetic import data_parallel as dp
from transformer_arithmetic import experts as ex
from transformer_arithmetic import tensor_parallel as tp
from transformer_arithmetic.runs.gloo import (HEADER_BYTES, HEADERS_A_TRANSFER,
                                              gloo_transfers, run)
from transformer_arithmetic.runs import sharded_runs as sr
from transformer_arithmetic.runs import sharded_steps as ss
from transformer_arithmetic.runs.reference_model import Block, Decoder

pytestmark = [pytest.mark.torch_kernels, pytest.mark.slow(seconds=20)]

WORLDS = (2, 3, 4)
EIGHT = 8   # every run computes in eight-byte numbers, so the shapes say b = 8
PLAIN = ta.ModelShape(layers=2, heads=8, head_dim=16, ffn_width=256, vocab=128, bytes_per_number=EIGHT)
GROUPED = ta.ModelShape(layers=2, heads=8, kv_heads=2, head_dim=16, ffn_width=192, vocab=96,
                        gated_ffn=True, bytes_per_number=EIGHT)


def agrees_with_the_transport(wrote: int, payload: float, transfers: int) -> bool:
    """What a process wrote is exactly the payload and the headers of its transfers."""
    return wrote == payload + transfers * HEADERS_A_TRANSFER * HEADER_BYTES


def test_a_formula_one_byte_off_fails():
    assert agrees_with_the_transport(1000 + 3 * 48, 1000, 1)
    assert not agrees_with_the_transport(1000 + 3 * 48, 1001, 1)
    assert not agrees_with_the_transport(1000 + 3 * 48, 1000 - 48, 1)   # one header's worth


@pytest.fixture(scope="module")
def sizes():
    return {n: run(sr.collective_sizes, n, 3 * 4096) for n in WORLDS}


@pytest.mark.parametrize("n", WORLDS)
def test_the_four_collectives_write_what_the_ring_formulas_say(sizes, n):
    x = 3 * 4096 * EIGHT
    for rank, got in enumerate(sizes[n]):
        assert all(got["right"].values()), got["right"]
        for name in ("all-reduce", "all-gather", "all-to-all"):
            assert agrees_with_the_transport(got["written"][name], co.ring_bytes_sent(name, x, n),
                                             gloo_transfers(name, x, n)), name
        assert agrees_with_the_transport(got["written"]["ring reduce-scatter"],
                                         co.ring_bytes_sent("reduce-scatter", x, n), n - 1)
        assert got["handed"]["all-reduce"] == got["handed"]["all-to-all"] == x
        assert got["handed"]["all-gather"] == x // n
        assert got["handed"]["ring reduce-scatter"] == co.ring_bytes_sent("reduce-scatter", x, n)


@pytest.mark.parametrize("n", WORLDS)
def test_gloo_reduce_scatter_writes_as_much_as_an_all_reduce(sizes, n):
    """gloo implements reduce_scatter as an all-reduce and keeps one slice: twice the
    (N - 1)/N X a ring reduce-scatter needs (the page says so; the ZeRO run writes its own)."""
    x = 3 * 4096 * EIGHT
    for got in sizes[n]:
        assert agrees_with_the_transport(got["written"]["reduce-scatter"], co.ring_bytes_sent("all-reduce", x, n),
                                         gloo_transfers("all-reduce", x, n))


@pytest.mark.parametrize("n", WORLDS)
def test_gloo_broadcast_is_a_binomial_tree(sizes, n):
    x = 3 * 4096 * EIGHT
    wrote = [got["written"]["broadcast"] for got in sizes[n]]
    steps = co.tree_steps(n)
    assert wrote[0] == steps * x + steps * 2 * HEADER_BYTES      # the root: log2 N copies, sender's headers
    assert agrees_with_the_transport(sum(wrote), (n - 1) * x, n - 1)   # every other gets one


@pytest.mark.parametrize("m", [PLAIN, GROUPED], ids=["plain", "grouped"])
@pytest.mark.parametrize("n", [2, 4])
def test_a_tensor_parallel_block_is_the_whole_block_with_two_all_reduces(m, n):
    tokens, seed = 12, 3
    results = run(sr.tensor_parallel_block, n, m, tokens, seed)
    torch.manual_seed(seed)
    block = Block(m).to(torch.float64)
    x = torch.randn(1, tokens, m.width, dtype=torch.float64)
    with torch.no_grad():
        whole, _ = block(x)
    for got in results:
        torch.testing.assert_close(got["output"], whole, rtol=0, atol=1e-12)
        assert got["handed"]["all-reduce"] == tp.tp_handed_bytes(m, tokens)
        one = tokens * m.width * EIGHT
        assert agrees_with_the_transport(got["written"], tp.tp_layer_bytes(m, tokens, n),
                                         2 * gloo_transfers("all-reduce", one, n))


@pytest.mark.parametrize("m", [PLAIN, GROUPED], ids=["plain", "grouped"])
@pytest.mark.parametrize("n", [2, 4])
def test_a_tensor_parallel_block_trains_as_the_whole_block_and_its_backward_pass_sends_two_all_reduces(m, n):
    """Forward and backward under Megatron-LM's conjugate operators: the output, the input's
    gradient and each rank's share of every weight gradient equal the whole block's, and the
    backward pass writes exactly what its two all-reduces of T d numbers carry."""
    tokens, seed = 12, 3
    results = run(ss.tensor_parallel_training, n, m, tokens, seed)
    torch.manual_seed(seed)
    block = Block(m).to(torch.float64)
    x = torch.randn(1, tokens, m.width, dtype=torch.float64, requires_grad=True)
    y, _ = block(x)
    y.sum().backward()
    whole = dict(block.named_parameters())
    one = tokens * m.width * EIGHT
    forward = tp.tp_layer_bytes(m, tokens, n)
    backward = tp.tp_layer_bytes(m, tokens, n, backward=True) - forward
    copied = m.kv_heads < n    # each key-value head on n / h_kv ranks: their gradients add up
    for got in results:
        torch.testing.assert_close(got["output"], y.detach()[0], rtol=0, atol=1e-12)
        torch.testing.assert_close(got["input gradient"], x.grad[0], rtol=0, atol=1e-12)
        for name, grad in got["gradients"].items():
            cut, dim = got["cuts"][name]
            if copied and name in ("attn.k.weight", "attn.v.weight"):
                grad = sum(r["gradients"][name] for r in results if r["cuts"][name] == (cut, dim))
            expected = whole[name].grad[cut] if dim == 0 else whole[name].grad[:, cut]
            torch.testing.assert_close(grad, expected, rtol=0, atol=1e-12)
        assert got["handed"]["all-reduce, backward"] == tp.tp_handed_bytes(m, tokens)
        for way, payload in (("forward", forward), ("backward", backward)):
            assert agrees_with_the_transport(got["written"][way], payload,
                                             2 * gloo_transfers("all-reduce", one, n)), way


@pytest.mark.parametrize("n", [2, 4])
def test_a_zero_step_is_the_whole_adam_step_and_sends_what_the_formula_says(n):
    m, sequences, tokens, seed = PLAIN, 8, 16, 5
    p = ta.memory.parameter_count(m)
    assert p % 4 == 0     # no padding, so the formula's P is the array the ring cuts
    results = run(sr.zero_step, n, m, sequences, tokens, seed)
    torch.manual_seed(seed)
    model = Decoder(m).to(torch.float64)
    rows = sr._batch(m, sequences, tokens, seed)
    logits, _ = model(rows[:, :-1])
    F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten()).backward()
    torch.optim.Adam(model.parameters(), lr=1e-2).step()
    whole = torch.cat([q.detach().flatten() for q in model.parameters()])
    x = p * EIGHT
    for got in results:
        torch.testing.assert_close(got["weights"], whole, rtol=0, atol=1e-10)
        assert got["handed"]["ring reduce-scatter"] == co.ring_bytes_sent("reduce-scatter", x, n)
        assert got["handed"]["all-gather"] == x // n
        assert agrees_with_the_transport(got["written"], sum(dp.zero_step_bytes(m, 1, n).values()),
                                         (n - 1) + gloo_transfers("all-gather", x, n))
        assert got["optimiser bytes"] == 2 * dp.share(p, n) * EIGHT   # only its share's averages


@pytest.mark.parametrize("n", [2, 4])
def test_a_fully_sharded_step_is_the_whole_adam_step_and_sends_what_zero_3_says(n):
    """PyTorch's own fully_shard (ZeRO stage 3): each block a unit and the rest the root, all
    resharded after the forward pass. Forward: every unit gathered; backward: gathered again
    and its gradients reduce-scattered, which gloo runs as an all-reduce (twice the ring's
    bytes, as test_gloo_reduce_scatter_writes_as_much_as_an_all_reduce finds)."""
    m, sequences, tokens, seed = PLAIN, 8, 16, 5
    p = ta.memory.parameter_count(m)
    results = run(ss.fsdp_step, n, m, sequences, tokens, seed)
    torch.manual_seed(seed)
    model = Decoder(m).to(torch.float64)
    rows = sr._batch(m, sequences, tokens, seed)
    logits, _ = model(rows[:, :-1])
    F.cross_entropy(logits.flatten(0, 1), rows[:, 1:].flatten()).backward()
    torch.optim.Adam(model.parameters(), lr=1e-2).step()
    whole = torch.cat([q.detach().flatten() for q in model.parameters()])
    units = [sum(q.numel() for q in b.parameters()) for b in model.blocks]
    units.append(p - sum(units))                              # the root: tables, final norm
    assert all(u % n == 0 for u in units)                     # no padding in these shapes
    sent = dp.zero_step_bytes(m, 3, n)
    gathers = sent["all-gather of the weights"] + sent["all-gather of the weights again"]
    assert gathers == sum(2 * co.ring_bytes_sent("all-gather", u * EIGHT, n) for u in units)
    for got in results:
        torch.testing.assert_close(got["weights"], whole, rtol=0, atol=1e-10)
        assert got["numbers held"] == p // n
        assert agrees_with_the_transport(got["written"]["forward"], sent["all-gather of the weights"],
                                         sum(gloo_transfers("all-gather", u * EIGHT, n) for u in units))
        assert agrees_with_the_transport(
            got["written"]["backward"],
            sent["all-gather of the weights again"] + 2 * sent["reduce-scatter of the gradients"],
            sum(gloo_transfers("all-gather", u * EIGHT, n) + gloo_transfers("all-reduce", u * EIGHT, n)
                for u in units))


def even_routes(n: int, tokens: int, experts: int, chosen: int) -> list:
    """Copy j of token t goes to expert (t k + j) mod E: every expert, so every device, gets
    the same number of copies from every device."""
    return [[[(t * chosen + j) % experts for j in range(chosen)] for t in range(tokens)] for _ in range(n)]


def random_routes(n: int, tokens: int, experts: int, chosen: int) -> list:
    rnd = random.Random(11)
    return [[sorted(rnd.sample(range(experts), chosen)) for _ in range(tokens)] for _ in range(n)]


def dense_mixture(n, width, experts, routes, seed):
    """The same layer in one process: every expert on every token it was routed to."""
    torch.manual_seed(seed)
    ffns = [torch.nn.Sequential(torch.nn.Linear(width, 2 * width, bias=False), torch.nn.GELU(),
                                torch.nn.Linear(2 * width, width, bias=False)).to(torch.float64)
            for _ in range(experts)]
    x = torch.randn(n, len(routes[0]), width, dtype=torch.float64)
    with torch.no_grad():
        return [torch.stack([sum(ffns[e](x[r, t]) for e in chosen) / len(chosen)
                             for t, chosen in enumerate(routes[r])]) for r in range(n)]


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("routing", ["even", "random"])
def test_an_expert_layer_is_the_dense_mixture_and_its_all_to_alls_send_the_formula(n, routing):
    width, experts, chosen, tokens, seed = 16, 8, 2, 16, 2
    routes = (even_routes if routing == "even" else random_routes)(n, tokens, experts, chosen)
    results = run(sr.expert_layer, n, width, experts, routes, seed)
    m = ta.ModelShape(layers=1, heads=1, head_dim=width, ffn_width=2 * width, vocab=8, bytes_per_number=EIGHT)
    local = experts // n
    for rank, (got, whole) in enumerate(zip(results, dense_mixture(n, width, experts, routes, seed))):
        torch.testing.assert_close(got["output"], whole, rtol=0, atol=1e-12)
        assert got["handed"]["dispatch"] == ex.dispatch_bytes(m, tokens, chosen)
        out = sum(e // local != rank for picked in routes[rank] for e in picked)   # dispatched away
        back = sum(e // local == rank for r in range(n) if r != rank for picked in routes[r] for e in picked)
        two = 2 * gloo_transfers("all-to-all", 0, n)        # dispatch and combine, one slice a peer
        assert agrees_with_the_transport(got["written"], (out + back) * width * EIGHT, two)
        if routing == "even":
            assert agrees_with_the_transport(got["written"], ex.layer_all_to_all_bytes(m, tokens, chosen, n), two)


@pytest.mark.parametrize("m", [PLAIN, GROUPED], ids=["plain", "grouped"])
@pytest.mark.parametrize("n", [2, 4])
def test_ring_attention_is_causal_attention_and_passes_the_formula(m, n):
    tokens, seed = 32, 4
    results = run(sr.ring_attention, n, m, tokens, seed)
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(1, h, tokens, m.head_dim, dtype=torch.float64, generator=g)
               for h in (m.heads, m.kv_heads, m.kv_heads))
    whole = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=m.kv_heads != m.heads)
    torch.testing.assert_close(torch.cat([got["output"] for got in results], dim=2), whole,
                               rtol=0, atol=1e-12)
    for got in results:
        assert got["handed"]["keys and values"] == cp.ring_attention_bytes(m, tokens, n)
        assert agrees_with_the_transport(got["written"], cp.ring_attention_bytes(m, tokens, n), n - 1)


def test_the_written_out_adam_step_is_torch_adam():
    torch.manual_seed(0)
    w, g = torch.randn(50, dtype=torch.float64), torch.randn(50, dtype=torch.float64)
    p = torch.nn.Parameter(w.clone())
    p.grad = g.clone()
    optimiser = torch.optim.Adam([p], lr=1e-2)
    optimiser.step()
    new, (first, second) = sr.adam_step(w, g)
    torch.testing.assert_close(new, p.detach(), rtol=0, atol=1e-15)
    torch.testing.assert_close(first, optimiser.state[p]["exp_avg"], rtol=0, atol=0)
    torch.testing.assert_close(second, optimiser.state[p]["exp_avg_sq"], rtol=0, atol=0)
