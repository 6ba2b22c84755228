"""The many-chips formulas against brute force: rings and trees run step by step on numpy
arrays, pipelines simulated tick by tick, routings of tokens to experts enumerated, ring
attention's pieces counted. (The same formulas against real gloo processes:
test_many_chips_gloo.py.)"""
import itertools
import math

import numpy as np
import pytest

from transformer_arithmetic import collectives as co
from transformer_arithmetic import context_parallel as cp
from transformer_arithmetic import experts as ex
from transformer_arithmetic import pipeline as pl
from transformer_arithmetic import ModelShape
from transformer_arithmetic.examples.many_chips import LINKS, NVLINK, NETWORK

RNG = np.random.default_rng(7)


def simulate_ring(n: int, phases: tuple[str, ...]):
    """Run the library's ring schedule on real arrays: (final arrays, starting arrays,
    numbers each device sent)."""
    start = [RNG.normal(size=(n, 3)) for _ in range(n)]  # n chunks of 3 numbers
    held = [a.copy() for a in start]
    sent = [0] * n
    for phase, moves in co.ring_all_reduce_schedule(n):
        if phase not in phases:
            continue
        arriving = [(receiver, chunk, held[sender][chunk].copy()) for sender, receiver, chunk in moves]
        for sender, _, chunk in moves:
            sent[sender] += held[sender][chunk].size
        for receiver, chunk, value in arriving:
            held[receiver][chunk] = held[receiver][chunk] + value if phase == "reduce-scatter" else value
    return held, start, sent


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8])
def test_ring_all_reduce_schedule_sums_and_sends_what_the_formula_says(n):
    held, start, sent = simulate_ring(n, ("reduce-scatter", "all-gather"))
    total = sum(start)
    for a in held:
        np.testing.assert_allclose(a, total, rtol=1e-12)
    x = n * 3 * 8  # the array each device holds, in eight-byte numbers
    assert all(s * 8 == co.ring_bytes_sent("all-reduce", x, n) for s in sent)
    assert len(co.ring_all_reduce_schedule(n)) == co.ring_steps("all-reduce", n)


@pytest.mark.parametrize("n", [2, 3, 4, 7])
def test_the_first_phase_is_a_reduce_scatter_and_the_second_an_all_gather(n):
    held, start, sent = simulate_ring(n, ("reduce-scatter",))
    total = sum(start)
    for i in range(n):  # device i ends with the whole sum of chunk i + 1
        np.testing.assert_allclose(held[i][(i + 1) % n], total[(i + 1) % n], rtol=1e-12)
    assert all(s * 8 == co.ring_bytes_sent("reduce-scatter", n * 24, n) for s in sent)
    # the all-gather alone, from each device holding only chunk i + 1
    pieces = [RNG.normal(size=3) for _ in range(n)]
    held = [np.zeros((n, 3)) for _ in range(n)]
    for i in range(n):
        held[i][(i + 1) % n] = pieces[(i + 1) % n]
    sent = [0] * n
    for phase, moves in co.ring_all_reduce_schedule(n):
        if phase == "all-gather":
            for sender, receiver, chunk in moves:
                held[receiver][chunk] = held[sender][chunk].copy()
                sent[sender] += 3
    for a in held:
        np.testing.assert_array_equal(a, np.stack(pieces))
    assert all(s * 8 == co.ring_bytes_sent("all-gather", n * 24, n) for s in sent)


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_all_to_all_pairwise_sends_all_but_its_own_slice(n):
    """Step s: device i sends slice (i + s) to device i + s; nothing goes to itself."""
    slices = [[RNG.normal(size=2) for _ in range(n)] for _ in range(n)]
    got = [[None] * n for _ in range(n)]
    sent = [0] * n
    for i in range(n):
        got[i][i] = slices[i][i]
    for s in range(1, n):
        for i in range(n):
            got[(i + s) % n][i] = slices[i][(i + s) % n]
            sent[i] += 2
    for j in range(n):
        for i in range(n):
            np.testing.assert_array_equal(got[j][i], slices[i][j])
    assert all(s * 8 == co.ring_bytes_sent("all-to-all", n * 16, n) for s in sent)
    assert co.ring_steps("all-to-all", n) == max(n - 1, 0)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 9, 16])
def test_a_binomial_tree_reaches_everyone_in_tree_steps(n):
    have, rounds = {0}, 0
    while len(have) < n:
        have |= {i + len(have) for i in have if i + len(have) < n}  # every holder doubles
        rounds += 1
    assert rounds == co.tree_steps(n)
    x, link = 1e6, NVLINK
    assert co.tree_all_reduce_time(x, n, link) == pytest.approx(
        2 * rounds * (link.step_latency_s + x / link.bytes_per_s))


@pytest.mark.parametrize("n", [4, 8, 16, 64])
@pytest.mark.parametrize("name", list(LINKS))
def test_ring_and_tree_cross_where_a_search_finds_it(n, name):
    link = LINKS[name]
    sizes = np.geomspace(1, 1e12, 4000)
    ring = np.array([co.ring_time("all-reduce", x, n, link) for x in sizes])
    tree = np.array([co.tree_all_reduce_time(x, n, link) for x in sizes])
    flips = np.nonzero(np.diff(np.sign(ring - tree)))[0]
    assert len(flips) == 1
    cross = co.ring_tree_crossover(n, link)
    assert sizes[flips[0]] <= cross <= sizes[flips[0] + 1]
    assert ring[0] > tree[0] and ring[-1] < tree[-1]  # the tree wins small, the ring large


def test_rings_of_two_or_three_are_never_slower_than_the_tree():
    assert co.ring_tree_crossover(2, NVLINK) is None and co.ring_tree_crossover(3, NVLINK) is None


def test_bus_bandwidth_is_nccl_tests_definition():
    """nccl-tests (doc/PERFORMANCE.md): algbw = size / time, busbw = algbw * 2(n-1)/n."""
    size, n, t = 1 << 30, 8, 0.01
    assert co.bus_bandwidth(size, n, t) == pytest.approx(size / t * 2 * (n - 1) / n)


@pytest.mark.parametrize("per_machine, machines", [(2, 2), (4, 2), (4, 3), (8, 4)])
def test_two_level_all_reduce_sums_and_sends_a_slice_over_the_network(per_machine, machines):
    n = per_machine * machines
    arrays = [RNG.normal(size=(per_machine, 2)) for _ in range(n)]  # cut into N_node slices
    # level 1: inside each machine, device j of a machine ends with the machine's slice j
    slices = {}
    for mach in range(machines):
        group = arrays[mach * per_machine:(mach + 1) * per_machine]
        for j in range(per_machine):
            slices[mach, j] = sum(a[j] for a in group)
    # level 2: device j of every machine all-reduces slice j with its peers (a ring)
    network = 0
    for j in range(per_machine):
        total = sum(slices[mach, j] for mach in range(machines))
        network = 2 * (machines - 1) / machines * total.size  # numbers each peer sends
        for mach in range(machines):
            slices[mach, j] = total
    result = np.stack([slices[0, j] for j in range(per_machine)])
    np.testing.assert_allclose(result, sum(arrays), rtol=1e-12)
    x = per_machine * 2 * 8
    assert network * 8 == pytest.approx(co.two_level_network_bytes(x, per_machine, machines))
    inside, between = NVLINK, NETWORK
    expected = (2 * (per_machine - 1) * inside.step_latency_s
                + 2 * (per_machine - 1) / per_machine * x / inside.bytes_per_s
                + 2 * (machines - 1) * between.step_latency_s + network * 8 / between.bytes_per_s)
    assert co.two_level_all_reduce_time(x, per_machine, machines, inside, between) == pytest.approx(expected)


def tick_simulation(p: int, m: int, schedule: str, backward: int = 2):
    """Pipelines run tick by tick (one tick = a forward pass through one stage): each stage
    keeps a queue in its schedule's order and starts the next pass at the first tick at
    which its input is there. Returns (length, busy ticks, most micro-batches held per
    stage)."""
    if schedule == "GPipe":
        queues = [[("f", i) for i in range(m)] + [("b", i) for i in reversed(range(m))] for _ in range(p)]
    else:
        queues = []
        for s in range(p):
            warm = min(p - 1 - s, m)
            q = [("f", i) for i in range(warm)]
            for i in range(m - warm):
                q += [("f", warm + i), ("b", i)]
            queues.append(q + [("b", i) for i in range(m - warm, m)])
    finished, busy_until, held, most = {}, [0] * p, [0] * p, [0] * p
    tick, busy = 0, 0
    while any(queues):
        for s in range(p):
            if not queues[s] or busy_until[s] > tick:
                continue
            kind, i = queues[s][0]
            if kind == "f":
                ready = s == 0 or finished.get(("f", s - 1, i), math.inf) <= tick
            else:
                ready = finished.get(("b", s + 1, i) if s < p - 1 else ("f", s, i), math.inf) <= tick
            if ready:
                queues[s].pop(0)
                length = 1 if kind == "f" else backward
                finished[(kind, s, i)] = busy_until[s] = tick + length
                busy += length
                held[s] += 1 if kind == "f" else 0
                most[s] = max(most[s], held[s])
                if kind == "b":
                    held[s] -= 1
        tick += 1
    return max(busy_until), busy, most


@pytest.mark.parametrize("schedule", pl.SCHEDULES)
@pytest.mark.parametrize("p, m", [(1, 1), (2, 1), (2, 4), (4, 4), (4, 8), (8, 3), (8, 16)])
def test_pipeline_bubble_and_memory_match_a_tick_by_tick_simulation(schedule, p, m):
    length, busy, most = tick_simulation(p, m, schedule)
    assert length == pl.schedule_length(p, m)
    assert 1 - busy / (p * length) == pytest.approx(pl.bubble_share(p, m))
    assert most == [pl.micro_batches_held(p, m, schedule, s) for s in range(p)]
    slots = pl.pipeline_schedule(p, m, schedule)
    assert max(x.end for x in slots) == length and len(slots) == 2 * p * m


def enumerate_routings(tokens: int, experts: int, chosen: int, factor: float):
    """Every routing of every token to ``chosen`` different experts, equally likely:
    (chance expert 0 overflows, share of the choices dropped)."""
    options = list(itertools.combinations(range(experts), chosen))
    cap = math.floor(factor * tokens * chosen / experts)
    over = dropped = count = 0
    for routing in itertools.product(options, repeat=tokens):
        loads = [sum(e in pick for pick in routing) for e in range(experts)]
        over += loads[0] > cap
        dropped += sum(max(0, load - cap) for load in loads)
        count += 1
    return over / count, dropped / (count * tokens * chosen)


@pytest.mark.parametrize("tokens, experts, chosen, factor", [
    (4, 4, 1, 1.0), (5, 4, 1, 1.25), (6, 4, 2, 1.0), (5, 3, 2, 1.5), (3, 5, 1, 2.0)])
def test_dropped_tokens_match_every_routing_enumerated(tokens, experts, chosen, factor):
    over, dropped = enumerate_routings(tokens, experts, chosen, factor)
    assert ex.overflow_chance(tokens, experts, chosen, factor) == pytest.approx(over, rel=1e-12)
    assert ex.dropped_share(tokens, experts, chosen, factor) == pytest.approx(dropped, rel=1e-12)
    assert sum(ex.load_chances(tokens, experts, chosen)) == pytest.approx(1.0)


def test_load_chances_are_the_binomial_and_survive_large_counts():
    t, p = 12, 2 / 8
    expected = [math.comb(t, j) * p**j * (1 - p) ** (t - j) for j in range(t + 1)]
    np.testing.assert_allclose(ex.load_chances(t, 8, 2), expected, rtol=1e-12)
    big = ex.load_chances(65536, 64, 8)   # (7/8)**65536 underflows a naive product
    assert sum(big) == pytest.approx(1.0) and max(big) > 0


def test_even_routing_sends_all_but_the_local_share_each_way():
    m = ModelShape(layers=1, heads=2, head_dim=8, ffn_width=32, vocab=10)
    n, tokens, k = 4, 16, 2
    remote = sum(1 for t in range(tokens) for j in range(k) if ((t * k + j) % n) != 0)  # device 0
    assert 2 * remote * m.width * m.bytes_per_number == ex.layer_all_to_all_bytes(m, tokens, k, n)


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_ring_attention_passes_every_other_piece_once(n):
    m = ModelShape(layers=1, heads=8, kv_heads=2, head_dim=16, ffn_width=64, vocab=10)
    seq = 24 * n
    holder, sent = list(range(n)), [0] * n
    seen = [{i} for i in range(n)]
    for _ in range(n - 1):
        for i in range(n):
            sent[i] += 2 * (seq // n) * m.kv_heads * m.head_dim * m.bytes_per_number
        holder = [holder[(i - 1) % n] for i in range(n)]
        for i in range(n):
            seen[i].add(holder[i])
    assert all(s == set(range(n)) for s in seen)
    assert sent == [cp.ring_attention_bytes(m, seq, n)] * n


@pytest.mark.parametrize("n", [1, 2, 3, 4, 6])
@pytest.mark.parametrize("zigzag", [False, True])
def test_causal_piece_pairs_count_the_blocks_with_an_allowed_pair(n, zigzag):
    pieces = 2 * n if zigzag else n
    size = 3
    allowed = np.tril(np.ones((pieces * size, pieces * size), bool))
    owner = _zig(n) if zigzag else list(range(n))   # the device of each piece
    counts = [0] * n
    for q_piece, device in enumerate(owner):
        for k_piece in range(pieces):
            block = allowed[q_piece * size:(q_piece + 1) * size, k_piece * size:(k_piece + 1) * size]
            counts[device] += bool(block.any())
    assert counts == cp.causal_piece_pairs(n, zigzag)


def _zig(n):
    """The device of each of 2n pieces in the zigzag order: pieces i and 2n - 1 - i on device i."""
    return [min(p, 2 * n - 1 - p) for p in range(2 * n)]


@pytest.mark.parametrize("name", list(LINKS))
def test_ring_attention_hides_from_the_first_piece_a_search_finds(name):
    from transformer_arithmetic import EXAMPLE_ACCELERATOR as acc, EXAMPLE_MODEL as m
    link = LINKS[name]
    first = next(t for t in range(1, 10**6)
                 if 4 * t * t * m.heads * m.head_dim / acc.flops_per_s
                 >= link.step_latency_s + 2 * t * m.kv_heads * m.head_dim * m.bytes_per_number / link.bytes_per_s)
    assert cp.ring_attention_hidden_from(m, acc, link) == first


@pytest.mark.parametrize("call, words", [
    (lambda: co.ring_steps("all-sum", 4), "collective must be one of"),
    (lambda: co.ring_bytes_sent("all-reduce", -1, 4), "array_bytes must be a finite size"),
    (lambda: co.ring_steps("all-reduce", 0), "devices must be at least 1, got 0"),
    (lambda: co.Link(0, 1e-6), "bytes_per_s must be a positive finite number"),
    (lambda: pl.bubble_share(4, 0), "micro_batches must be at least 1, got 0"),
    (lambda: pl.pipeline_schedule(2, 2, "zigzag"), "schedule must be one of"),
    (lambda: pl.micro_batches_held(4, 8, "1F1B", 4), "stage=4 is not one of the 4 stages"),
    (lambda: ex.load_chances(4, 2, 3), "chosen=3 is more than the 2 experts"),
    (lambda: ex.expert_capacity(4, 2, 1, 0), "factor must be a positive finite number"),
    (lambda: cp.ring_attention_bytes(ModelShape(1, 2, 8, 16, 10), 10, 3), "seq_len=10 does not divide"),
])
def test_bad_inputs_name_the_bad_value(call, words):
    with pytest.raises(ValueError, match=words):
        call()
