"""The many-chips formulas added for real machines, each against a reference of its own: a
brute-force tally of the bytes every link carries, the published measurements the formulas
are meant to meet (nccl-tests figures and NCCL's maintainers'), tick-by-tick simulations, the
papers' own statements of their schedules' bubbles, and exhaustive counts of causal pairs."""
import itertools
import math
import random

import pytest

import published
import transformer_arithmetic as ta
from transformer_arithmetic import collectives as co
from transformer_arithmetic import context_parallel as cp
from transformer_arithmetic import data_parallel as dp
from transformer_arithmetic import experts as ex
from transformer_arithmetic import memory, pipeline
from transformer_arithmetic import tensor_parallel as tp
from transformer_arithmetic.examples.many_chips import (IN_SWITCH, NETWORK, NVLINK,
                                                        NVLINK_ACHIEVED,
                                                        NVLS_EFFICIENCY, PROTOCOLS,
                                                        REAL_CHIP, SMALL_ALL_REDUCE,
                                                        grown)

GIB = 2**30


def test_the_published_fabrics_name_their_sources_and_links():
    for m in published.machines():
        assert m.source.startswith("https://") and m.devices >= 2
        assert m.link is None or published.link(m.link).key == m.link
    for a in published.achieved_rows():
        assert a.source.startswith("https://") and a.note
    assert [p.name for p in published.protocols()] == ["LL", "LL128", "Simple"]
    for r in published.by_nodes_rows():
        assert r.source.startswith("https://") and r.note
        assert published.machine(r.machine).key == r.machine
        for figures in r.bus_bytes_per_s.values():
            assert len(figures) == len(r.nodes)
            # read at a measured count, the figure itself; between two, between them
            assert math.isclose(r.bus("all-reduce", r.nodes[0]),
                                r.bus_bytes_per_s["all-reduce"][0])
        lo, hi = sorted(r.bus_bytes_per_s["all-gather"][:2])
        assert lo <= r.bus("all-gather", (r.nodes[0] * r.nodes[1]) ** 0.5) <= hi


def in_switch_bytes(n: int, x: float) -> tuple[float, float]:
    """Bytes one device sends and receives in an in-switch all-reduce, tallied slice by
    slice: every device's part of every slice goes up to be added, the sum of its own slice
    comes down, it stores that slice once into the switch, every finished slice comes down."""
    piece = x / n
    sent = received = 0.0
    for _ in range(n):          # each slice
        sent += piece           # this device's part of it, into the switch's adder
    received += piece           # the sum of its own slice
    sent += piece               # stored once, multicast by the switch
    received += n * piece       # every finished slice arrives
    return sent, received


@pytest.mark.parametrize("n", [2, 4, 8])
def test_an_in_switch_all_reduce_moves_its_tallied_bytes(n):
    x, link = 2**30, NVLINK
    sent, received = in_switch_bytes(n, x)
    assert sent == received
    assert co.in_switch_all_reduce_time(x, n, link) == pytest.approx(
        2 * link.step_latency_s + sent / link.bytes_per_s, rel=1e-12)


def test_the_in_switch_model_meets_the_published_nvls_all_reduce():
    """NCCL's own share of the link for an in-switch all-reduce (0.85 on Hopper) applied to the
    rate its rings reach (370 GB/s) gives the bus and algorithm bandwidths the maintainers
    publish for 8 GPUs (about 480 and 275 GB/s) within 3 %."""
    x, n = 8 * GIB, IN_SWITCH.devices
    link = co.achieved_link(NVLINK_ACHIEVED, NVLINK_ACHIEVED.bytes_per_s * NVLS_EFFICIENCY)
    t = co.in_switch_all_reduce_time(x, n, link)
    assert co.bus_bandwidth(x, n, t) == pytest.approx(IN_SWITCH.bus_bytes_per_s, rel=0.03)
    assert x / t == pytest.approx(IN_SWITCH.alg_bytes_per_s, rel=0.03)
    ring = co.ring_time("all-reduce", x, n, NVLINK)
    assert t < ring       # faster than a ring even at the printed rate


def test_nccls_protocols_pick_ll_for_small_arrays_and_simple_for_large_ones():
    small, which = co.best_protocol_time("all-reduce", 128, 2, "nvlink", NVLINK_ACHIEVED.bytes_per_s,
                                         PROTOCOLS)
    assert which == "LL" and small == pytest.approx(6.6e-6 + 2 * 0.6e-6, rel=1e-3)
    assert small >= SMALL_ALL_REDUCE.seconds      # the model is no floor: the measured run is quicker
    large, which = co.best_protocol_time("all-reduce", 2 * GIB, 8, "nvlink",
                                         NVLINK_ACHIEVED.bytes_per_s, PROTOCOLS)
    assert which == "Simple"
    assert co.bus_bandwidth(2 * GIB, 8, large) == pytest.approx(NVLINK_ACHIEVED.bytes_per_s, rel=1e-2)


def ring_loads(n: int, x: float) -> float:
    """The busiest directed link's bytes when each of n devices on a bidirectional ring sends
    x / n to every other by the shorter way (ties split evenly)."""
    load = {}
    for a, b in itertools.permutations(range(n), 2):
        k = (b - a) % n
        ways = [1] if k < n - k else [-1] if k > n - k else [1, -1]
        for way in ways:
            hops = k if way == 1 else n - k
            for h in range(hops):
                edge = ((a + way * h) % n, way)
                load[edge] = load.get(edge, 0.0) + x / n / len(ways)
    return max(load.values())


@pytest.mark.parametrize("n", [2, 3, 4, 7, 8, 16])
def test_an_all_to_all_on_a_ring_loads_its_links_as_tallied(n):
    assert co.torus_all_to_all_link_bytes(1.0e6, n) == pytest.approx(ring_loads(n, 1.0e6), rel=1e-12)


def test_a_direct_all_to_all_waits_once():
    x, n = 2**20, 8
    t = co.direct_all_to_all_time(x, n, NETWORK)
    assert t == pytest.approx(NETWORK.step_latency_s + co.ring_bytes_sent("all-to-all", x, n)
                              / NETWORK.bytes_per_s)
    assert t < co.ring_time("all-to-all", x, n, NETWORK)


def rail_card_bytes(g: int, m: int, x: float) -> tuple[float, float]:
    """Bytes each network card and each device's fast link carry in NCCL's flat all-reduce of
    one ring a card: g rings of x / g over all g m devices, each ring leaving each machine from
    a different device (ring r leaves through device r)."""
    n = g * m
    card = fast = 0.0
    for r in range(g):
        order = [mach * g + (r + i) % g for mach in range(m) for i in range(g)]
        share = 2 * (n - 1) / n * x / g
        for i, d in enumerate(order):
            nxt = order[(i + 1) % n]
            if d == 0:
                if nxt // g != d // g:
                    card += share
                else:
                    fast += share
    return card, fast


@pytest.mark.parametrize("g,m", [(8, 4), (4, 2), (8, 1)])
def test_a_rail_ring_sends_a_cards_share_through_each_card(g, m):
    x = 2**30
    card, fast = rail_card_bytes(g, m, x)
    n = g * m
    t = co.rail_ring_all_reduce_time(x, g, m, NVLINK, NETWORK)
    latency = 2 * (n - m) * NVLINK.step_latency_s + 2 * (m - 1) * NETWORK.step_latency_s
    assert t == pytest.approx(latency + max(card / NETWORK.bytes_per_s, fast / NVLINK.bytes_per_s),
                              rel=1e-12)
    if m > 1:
        assert card == pytest.approx(co.two_level_network_bytes(x, g, m) * (n - 1) / n * m / (m - 1))


def test_fsdp_hides_from_the_fewest_tokens_a_search_finds():
    m, link, n = ta.EXAMPLE_MODEL, NVLINK, 8
    found = dp.fsdp_hidden_from(m, ta.EXAMPLE_ACCELERATOR, link, n)
    numbers = memory.parameter_count(m) // m.layers
    R = ta.EXAMPLE_ACCELERATOR.flops_per_s

    def hides(t):
        gather = (n - 1) * link.step_latency_s + (n - 1) / n * numbers * 2 / link.bytes_per_s
        return gather <= 2 * t * numbers / R and 2 * gather <= 4 * t * numbers / R

    assert hides(found) and not hides(found - 1)
    bound = dp.hidden_tokens_bound(ta.EXAMPLE_ACCELERATOR, link, n, 2)
    assert bound <= found <= bound * 1.2     # the waits add a little


def test_zero_step_bytes_with_accumulation_and_four_byte_gradients():
    m, n, k = ta.EXAMPLE_MODEL, 8, 4
    p = memory.parameter_count(m)
    one = (n - 1) / n * p
    sent = dp.zero_step_bytes(m, 3, n, gradient_bytes=4, micro_batches=k)
    assert sent["reduce-scatter of the gradients"] == pytest.approx(k * one * 4)
    assert sent["all-gather of the weights"] + sent["all-gather of the weights again"] == \
        pytest.approx(2 * k * one * 2)
    assert dp.zero_step_bytes(m, 1, n, micro_batches=k) == dp.zero_step_bytes(m, 1, n)


def korthikanti_tp(m, tokens, t, sequence_parallel):
    """Korthikanti et al.'s per-layer activations for tensor parallelism, s b h (10 + 24/t) with
    and (34/t) without... here without dropout masks: s b h (8 + 24/t), or 32 s b h / t."""
    h = m.width * tokens
    return h * (32 / t if sequence_parallel else 8 + 24 / t)


@pytest.mark.parametrize("t", [1, 2, 4, 8])
def test_tensor_parallel_activations_are_korthikantis(t):
    m = ta.ModelShape(layers=2, heads=16, head_dim=64, ffn_width=4096, vocab=512)  # f = 4d, b = 2
    for sp in (True, False):
        assert tp.tp_layer_activation_bytes(m, 4096, t, sp) == korthikanti_tp(m, 4096, t, sp)


def test_sequence_parallel_sends_what_the_all_reduces_send():
    m = grown(ta.EXAMPLE_MODEL)
    for back in (False, True):
        assert sum(tp.tp_sp_collectives(m, 8192, 8, back).values()) == \
            pytest.approx(tp.tp_layer_bytes(m, 8192, 8, back))


def test_the_overlap_pairs_hold_the_layers_arithmetic():
    m, acc = grown(ta.EXAMPLE_MODEL), REAL_CHIP
    for n in (1, 2, 8):
        pairs = tp.tp_overlap_pairs(m, acc, NVLINK, n, 4096)
        total = sum(a for a, _ in pairs.values()) * acc.flops_per_s
        assert total == pytest.approx(ta.work.layer_weight_flops(m, 4096) / n, rel=1e-12)


def test_the_vocabulary_is_padded_to_the_devices():
    m = ta.ModelShape(layers=1, heads=8, head_dim=16, ffn_width=64, vocab=50257)
    assert tp.divides(m, 8) and tp.vocab_rows(m, 8) == 6283 and 6283 * 8 >= 50257 > 6282 * 8


def tick_bubble(p, m, v):
    """Idle share of stage 0 in a tick-by-tick run of the interleaved schedule's order."""
    plan = pipeline.pipeline_schedule(p, m, pipeline.INTERLEAVED, 2.0, v)
    length = max(x.end for x in plan)
    return 1 - sum(x.end - x.start for x in plan if x.stage == 0) / length


@pytest.mark.parametrize("p,m,v", [(4, 8, 2), (4, 8, 4), (8, 16, 2), (2, 6, 3)])
def test_the_interleaved_schedule_has_narayanans_bubble_and_memory(p, m, v):
    assert tick_bubble(p, m, v) == pytest.approx(pipeline.interleaved_bubble_share(p, m, v), rel=1e-12)
    plan = pipeline.pipeline_schedule(p, m, pipeline.INTERLEAVED, 2.0, v)
    assert pipeline.peak_in_flight(plan, 0, v) == pytest.approx(p * (1 + (p - 1) / (p * v)))
    for x in plan:
        assert x.end - x.start in (pytest.approx(1 / v), pytest.approx(2 / v))


def test_the_zero_bubble_and_dualpipe_bubbles_are_their_papers():
    """Qi et al.'s README: with F = B = W, ZB-H1's bubble rate is (p-1)/(3m), a third of 1F1B's,
    and ZB-H2's zero; DeepSeek's Table 2 for DualPipe: (PP/2 - 1)(F&B + B - 3W)."""
    p = 8
    assert pipeline.bubble_time("ZB-H1", p) == pytest.approx(pipeline.bubble_time("1F1B", p) / 3)
    assert pipeline.bubble_time("ZB-H2", p) == 0
    f, b, w = 1.0, 1.0, 1.0
    full = b + w
    assert pipeline.bubble_time("DualPipe", p, f, b, w) == (p / 2 - 1) * ((f + full) + full - 3 * w)
    assert pipeline.bubble_time("1F1B", p) == (p - 1) * (f + full)
    assert pipeline.bubble_time(pipeline.INTERLEAVED, p, chunks=4) == (p - 1) * 3 / 4


def test_llama_3s_uneven_stages():
    assert pipeline.stage_layers(126, 16, 1, 1) == [7] + [8] * 14 + [7]
    assert pipeline.stage_layers(96, 8) == [12] * 8
    with pytest.raises(ValueError):
        pipeline.stage_layers(4, 4, 3)


def test_the_groups_a_token_reaches_by_enumeration():
    e, g, k = 8, 4, 3
    counts = [len({x // (e // g) for x in pick}) for pick in itertools.combinations(range(e), k)]
    assert ex.expected_groups_reached(e, g, k) == pytest.approx(sum(counts) / len(counts), rel=1e-12)


def test_redundant_copies_keep_the_load_and_the_room():
    rnd = random.Random(3)
    loads = [rnd.expovariate(1.0) for _ in range(24)]
    for r in (0, 8, 24):
        held = ex.replicated_loads(loads, 8, r)
        assert sum(held) == pytest.approx(sum(loads)) and len(held) == 8
    assert max(ex.replicated_loads(loads, 8, 24)) <= max(ex.replicated_loads(loads, 8, 0))


def causal_pairs_in_step(n_dev, device, step, piece):
    """Pairs (query, key) device ``device`` works on in ring step ``step`` under the causal
    mask with the zigzag order, counted position by position."""
    half = piece // 2

    def positions(d):
        return list(range(d * half, (d + 1) * half)) + list(
            range((2 * n_dev - 1 - d) * half, (2 * n_dev - d) * half))

    holder = (device - step) % n_dev
    return sum(1 for q in positions(device) for k in positions(holder) if k <= q)


@pytest.mark.parametrize("n_dev", [2, 4])
def test_every_zigzag_step_is_half_a_piece_pair(n_dev):
    piece = 16
    for device in range(n_dev):
        for step in range(n_dev):
            pairs = causal_pairs_in_step(n_dev, device, step, piece)
            if step:
                assert pairs == piece * piece // 2
            else:   # the diagonal: half, and the half of each own half-piece's diagonal
                assert pairs == piece * piece // 2 + piece // 2
    m = grown(ta.EXAMPLE_MODEL)
    whole = cp.ring_attention_step_times(m, REAL_CHIP, NVLINK, 4096, 1)
    zig = cp.ring_attention_step_times(m, REAL_CHIP, NVLINK, 4096, 1, zigzag=True)
    assert zig["arithmetic"] == pytest.approx(whole["arithmetic"] / 2)


def test_the_backward_ring_sends_keys_values_and_their_gradients():
    m = grown(ta.EXAMPLE_MODEL)
    fwd = cp.ring_attention_step_times(m, REAL_CHIP, NETWORK, 4096, 1)
    bwd = cp.ring_attention_step_times(m, REAL_CHIP, NETWORK, 4096, 1, backward=True, gradient_bytes=4)
    lam = NETWORK.step_latency_s
    assert bwd["sending"] - lam == pytest.approx(3 * (fwd["sending"] - lam))   # 2 + 4 bytes against 2
    assert bwd["arithmetic"] == pytest.approx(cp.BACKWARD_WORK * fwd["arithmetic"])
    assert math.isclose(cp.BACKWARD_WORK, 5 / 2)


@pytest.mark.parametrize("key", [p.key for p in published.plans()])
def test_each_published_plan_adds_up(key):
    """A plan's splits multiply to its chips, its batch to its tokens, its utilisation to its
    rate a chip over the dense 16-bit peak (within a point, as the papers round)."""
    plan = published.plan(key)
    f = plan.figures
    assert plan.source.startswith("https://") and plan.note
    assert published.model_config(plan.model)
    if {"tp", "pp", "dp"} <= set(f):
        assert f["tp"] * f.get("cp", 1) * f["pp"] * f["dp"] == f["devices"]
        assert f["seq_len"] * f["batch_per_dp"] * f["dp"] == f["tokens_per_batch"]
        peak = published.chip(plan.chip).bf16_flops_per_s
        assert abs(f["tflops_per_device"] * 1e12 / peak - f["mfu"]) <= 0.01
    if "attention_tp" in f:
        assert f["attention_tp"] * f["attention_dp"] == f["devices"]
    if "nodes" in f:
        assert f["nodes"] * 8 == f["devices"]
