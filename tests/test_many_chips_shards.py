"""What each device holds, against real PyTorch modules cut into shares: a decoder built on
PyTorch's meta device (shapes, no numbers), its matrices cut by columns and rows the way
Megatron-LM cuts them, its parameters flattened and chunked the way FSDP shards them, its
layers dealt out to pipeline stages; and the split search against brute force."""
import dataclasses
import itertools

import pytest
import torch

import transformer_arithmetic as ta
from transformer_arithmetic import data_parallel as dp
from transformer_arithmetic import memory, splits, tensor_parallel as tp, timing
from transformer_arithmetic.examples.many_chips import NETWORK, NVLINK, REAL_CHIP, grown
from transformer_arithmetic.runs.reference_model import Decoder

pytestmark = pytest.mark.meta_device

SHAPES = [
    ta.ModelShape(layers=2, heads=8, head_dim=16, ffn_width=256, vocab=512),
    ta.ModelShape(layers=3, heads=8, kv_heads=2, head_dim=8, ffn_width=96, vocab=64,
                  gated_ffn=True, tied_embeddings=False, norm_bias=True),
    ta.ModelShape(layers=2, heads=4, kv_heads=1, head_dim=8, ffn_width=64, vocab=32, bytes_per_number=4),
]


def meta_decoder(m):
    with torch.device("meta"):
        return Decoder(m)


def megatron_share(m, n: int, rank: int = 0) -> int:
    """Numbers one rank holds when a real decoder's matrices are cut as Megatron-LM cuts
    them: query/key/value and up/gate matrices by output rows (heads, inner width), output
    and down matrices by input columns, embeddings by vocabulary rows; key-value heads are
    kept whole (one a rank) when there are fewer than ranks; norms whole."""
    model, total = meta_decoder(m), 0
    seen = set()
    for name, p in model.named_parameters():
        if id(p) in seen:
            continue
        seen.add(id(p))
        leaf = name.split(".")[-2]
        if leaf in ("q", "up", "gate", "embed", "head"):
            total += p.chunk(n, dim=0)[rank].numel()
        elif leaf in ("k", "v"):
            if m.kv_heads >= n:
                total += p.chunk(n, dim=0)[rank].numel()
            else:
                total += p.shape[1] * m.head_dim          # one whole key-value head
        elif leaf in ("out", "down"):
            total += p.chunk(n, dim=1)[rank].numel()
        else:                                             # a normalisation
            total += p.numel()
    return total


@pytest.mark.parametrize("m", SHAPES, ids=lambda m: f"{m.heads}h{m.kv_heads}kv")
@pytest.mark.parametrize("n", [1, 2, 4, 8])
def test_tensor_parallel_weights_match_a_real_decoder_cut_into_shares(m, n):
    try:
        tp.check_split(m, n)
    except ValueError:
        pytest.skip("the layer does not divide among n devices")
    for rank in range(n):
        assert tp.tp_weight_bytes(m, n) == megatron_share(m, n, rank) * m.bytes_per_number
    kv = max(m.kv_heads // n, 1)
    assert tp.tp_cache_bytes_per_token(m, n) == 2 * m.layers * kv * m.head_dim * m.bytes_per_number
    if n == 1:
        assert tp.tp_weight_bytes(m, 1) == memory.weight_bytes(m)


def test_tensor_parallel_refuses_splits_the_layer_does_not_allow():
    m = SHAPES[1]   # 8 heads, 2 key-value heads, inner width 96
    with pytest.raises(ValueError, match="heads=8 does not divide among 3 devices"):
        tp.check_split(m, 3)
    with pytest.raises(ValueError, match="ffn_width=96 does not divide among 64 devices"):
        tp.check_split(dataclasses.replace(m, heads=64, kv_heads=2), 64)


@pytest.mark.parametrize("m", SHAPES[:2], ids=["plain", "gated"])
def test_one_device_decode_is_the_book_roofline(m):
    acc, n, batch = ta.EXAMPLE_ACCELERATOR, 300, 3
    parts = tp.tp_decode_parts(m, acc, NVLINK, 1, n, batch)
    assert parts["all-reduces"] == 0.0
    assert max(parts["reading"], parts["arithmetic"]) == pytest.approx(
        timing.decode_step_time(m, acc, n, batch), rel=1e-12)


@pytest.mark.parametrize("m", SHAPES, ids=lambda m: f"{m.heads}h{m.kv_heads}kv")
@pytest.mark.parametrize("n", [1, 2, 3, 8])
@pytest.mark.parametrize("stage", dp.ZERO_STAGES)
def test_zero_shares_are_the_flattened_parameters_chunked(m, n, stage):
    model = meta_decoder(m)
    flat = torch.cat([p.flatten() for p in model.parameters()])   # tied tables once
    numbers = -(-flat.numel() // n) * n            # padded to a multiple of N, as FSDP pads
    largest = torch.empty(numbers, device="meta").chunk(n)[0].numel()
    held = dp.zero_state_bytes(m, stage, n)
    b = m.bytes_per_number
    assert held["weights"] == (largest if stage == 3 else flat.numel()) * b
    assert held["gradients"] == (largest if stage >= 2 else flat.numel()) * b
    assert held["optimiser"] == (largest if stage >= 1 else flat.numel()) * 2 * 4   # Adam: two fp32
    assert held["master copy"] == ((largest if stage >= 1 else flat.numel()) * 4 if b < 4 else 0)


@pytest.mark.parametrize("stage", dp.ZERO_STAGES)
def test_the_smallest_zero_group_is_the_first_that_fits(stage):
    m, chip = grown(ta.EXAMPLE_MODEL), REAL_CHIP
    found = dp.smallest_zero_group(m, stage, chip.memory_bytes)
    first = next((n for n in range(1, 4097)
                  if sum(dp.zero_state_bytes(m, stage, n).values()) <= chip.memory_bytes), None)
    assert found == first


def test_zero_traffic_follows_the_paper():
    """Rajbhandari et al. (2020), section 7: stages 1 and 2 move what data parallelism moves
    (2 Psi), stage 3 half as much again (3 Psi), for large N."""
    m, n = SHAPES[0], 1024
    x = memory.weight_bytes(m)
    plain = sum(dp.zero_step_bytes(m, 0, n).values())
    assert plain == pytest.approx(2 * x * (n - 1) / n)
    for stage, factor in ((1, 1.0), (2, 1.0), (3, 1.5)):
        assert sum(dp.zero_step_bytes(m, stage, n).values()) == pytest.approx(factor * plain)


def test_the_grown_model_counts_as_a_real_decoder_of_its_shape():
    big = grown(ta.EXAMPLE_MODEL)
    model = meta_decoder(dataclasses.replace(big, layers=1))   # one block, the rest multiplied
    one = sum(p.numel() for p in model.parameters())
    block = sum(p.numel() for p in model.blocks[0].parameters())
    assert memory.parameter_count(big) == one + (big.layers - 1) * block
    assert big.width == 8 * ta.EXAMPLE_MODEL.width and big.layers == 4 * ta.EXAMPLE_MODEL.layers


def brute_force_splits(m, devices, batch):
    found = []
    for a, b, c in itertools.product(range(1, devices + 1), repeat=3):
        if a * b * c != devices or batch % a or m.layers % c:
            continue
        if m.heads % b or m.ffn_width % b or (m.kv_heads % b and b % m.kv_heads):   # vocab padded
            continue
        found.append((a, b, c))
    return sorted(found)


@pytest.mark.parametrize("devices", [1, 6, 16, 64])
def test_the_split_search_lists_every_allowed_split(devices):
    m = grown(ta.EXAMPLE_MODEL)
    listed = sorted((s.dp, s.tp, s.pp) for s in splits.splits_of(m, devices, 256))
    assert listed == brute_force_splits(m, devices, 256)


@pytest.mark.parametrize("m", SHAPES[:2], ids=["tied", "untied"])
@pytest.mark.parametrize("tp_n, pp_n", [(1, 1), (2, 1), (1, 3), (2, 3), (4, 3)])
def test_the_fullest_stage_holds_what_a_real_decoder_cut_that_way_holds(m, tp_n, pp_n):
    if m.layers % pp_n:
        pytest.skip("the layers do not divide among the stages")
    model = meta_decoder(m)
    per_layer = megatron_share(dataclasses.replace(m, layers=2), tp_n) - megatron_share(
        dataclasses.replace(m, layers=1), tp_n)
    table = model.embed.weight.chunk(tp_n, dim=0)[0].numel()
    final = model.norm.weight.numel() * (2 if m.norm_bias else 1)
    stages = [m.layers // pp_n * per_layer for _ in range(pp_n)]
    stages[0] += table                        # the input table
    stages[-1] += final + (table if pp_n > 1 or not m.tied_embeddings else 0)   # output table
    assert splits.stage_numbers(m, splits.Split(1, tp_n, pp_n)) == max(stages)


def test_step_times_add_the_page_parts_by_hand():
    m, chip = grown(ta.EXAMPLE_MODEL), REAL_CHIP
    split, batch, n = splits.Split(dp=2, tp=8, pp=4), 32, 4096
    t = splits.step_times(m, chip, split, batch, n, NVLINK, NETWORK, machine=8)
    p, L, d, b = memory.parameter_count(m), m.layers, m.width, m.bytes_per_number
    pairs = L * 4 * m.heads * m.head_dim * n * (n + 1) // 2
    flops = 3 * batch * (2 * p * n + pairs)
    assert t["arithmetic"] == pytest.approx(flops / 64 / chip.flops_per_s)
    micro = batch // 2
    assert t["bubble"] == pytest.approx(t["arithmetic"] / micro * 3)
    one = n * d * b
    ring = 2 * 7 * NVLINK.step_latency_s + 2 * 7 / 8 * one / NVLINK.bytes_per_s
    assert t["tensor-parallel"] == pytest.approx(4 * ring * (L // 4) * micro)
    assert t["pipeline sends"] == pytest.approx(2 * micro * (NETWORK.step_latency_s + one / NETWORK.bytes_per_s))
