"""The training memory's engine choices, each against its own arithmetic: the loss's
bytes a logit, attention's second copy of its keys and values, the matrices' gathered
inputs kept whole, the two whole-sequence gather buffers, DDP's bucket copy of the
gradients (against PyTorch's own DDP), nanotron's placement of layers on pipeline stages
by cost, and the check of a measured run's memory against its first stage (the rank
that measured it)."""
from __future__ import annotations

import dataclasses

import pytest

from transformer_calculator.counting.activations import Shares, activation_bytes
from transformer_calculator.counting.training import (BUCKETS, LOSS_PARTS, Training,
                                                    step_memory)
from transformer_calculator.measured_runs import conversion
from transformer_calculator.measured_runs.check import check_run
from transformer_calculator.measured_runs.floors import training_figures
from transformer_calculator.measured_runs.runs import read_runs, write_runs
from transformer_calculator.measured_runs.setup import training_setup
from transformer_calculator.reading.inputs import load_model
from transformer_calculator.splits.checks import cost_balanced_stage_layers

SEQ = 1024


@pytest.fixture(scope="module")
def model():
    return load_model("playbook-1b")[0]


@pytest.mark.parametrize("loss, extra", [("torch", 12), ("vocab-parallel", 8)])
def test_the_loss_holds_b_plus_its_bytes_a_logit(model, loss, extra):
    parts = step_memory(model, Training(seq_len=SEQ, loss=loss))
    held = sum(parts.get(k, 0.0) for k in LOSS_PARTS)
    logits = SEQ * model.layout.vocab
    assert held == logits * (model.bytes_per_number + extra)


def test_kv_twice_adds_one_copy_of_the_keys_and_values(model):
    plain = activation_bytes(model, 1, SEQ, "selective")
    twice = activation_bytes(model, 1, SEQ, "selective", shares=Shares(kv_twice=True))
    m = model.layout.blocks[0].mixer
    kv = 2 * m.kv_heads * m.head_dim
    layers = len(model.layout.blocks)
    assert twice - plain == SEQ * layers * kv * model.bytes_per_number


@pytest.mark.parametrize("tp", [2, 8])
def test_gathered_inputs_keep_the_matrices_inputs_whole(model, tp):
    cut = activation_bytes(model, 1, SEQ, "selective", shares=Shares(sequence=tp))
    kept = activation_bytes(model, 1, SEQ, "selective",
                            shares=Shares(sequence=tp, gathered_inputs=True))
    layers, width = len(model.layout.blocks), model.layout.width
    inputs = (2 * layers + 1) * width  # attention's, the feed-forward part's, the head's
    whole = SEQ * inputs * model.bytes_per_number
    assert kept - cut == pytest.approx(whole * (1 - 1 / tp), abs=1)
    one = Shares(sequence=1, gathered_inputs=True)
    assert activation_bytes(model, 1, SEQ, "selective", shares=one) == \
        activation_bytes(model, 1, SEQ, "selective")


def test_the_engine_choices_reach_step_memory_without_a_split(model):
    a = step_memory(model, Training(seq_len=SEQ, kv_twice=True, gathered_inputs=True))
    b = step_memory(model, Training(seq_len=SEQ, shares=Shares(kv_twice=True)))
    assert a["activations"] == b["activations"]  # one device: nothing gathered


@pytest.mark.parametrize("tp", [1, 4])
def test_gather_buffers_hold_two_whole_sequences_under_sequence_parallel(model, tp):
    t = Training(batch=2, seq_len=SEQ, gather_buffers=True,
                 shares=Shares(sequence=tp))
    held = step_memory(model, t)["all-gather buffers"]
    whole = 2 * SEQ * model.layout.width * model.bytes_per_number
    assert held == (2 * whole if tp > 1 else 0.0)
    plain = step_memory(model, dataclasses.replace(t, gather_buffers=False))
    assert plain["all-gather buffers"] == 0.0


def test_inputs_kept_whole_leave_one_gather_buffer(model):
    t = Training(seq_len=SEQ, gather_buffers=True, gathered_inputs=True,
                 shares=Shares(sequence=4))
    whole = SEQ * model.layout.width * model.bytes_per_number
    assert step_memory(model, t)["all-gather buffers"] == whole


def test_the_playbooks_one_stage_runs_keep_their_gathered_inputs():
    rows = [r for r in conversion.training_rows() if "refused" not in r]
    kept = {r["gathered_inputs"] for r in rows if r["pp"] == "1"}
    piped = {r["gathered_inputs"] for r in rows if r["pp"] != "1"}
    assert kept == {conversion.PLAYBOOK_ONE_STAGE_GATHERED_INPUTS} == {"where-held"}
    assert piped == {conversion.PLAYBOOK_GATHERED_INPUTS} == {"false"}


def test_a_run_kept_where_held_gathers_again_where_whole_would_not_fit():
    rows = {r["id"]: r for r in conversion.training_rows()}
    runs = read_runs(write_runs([rows["playbook-250-1B-n4"], rows["playbook-20-1B-n1"]]))
    big, small = (training_setup(r) for r in runs)  # tp 32, 128 sequences; tp 8, 16
    assert not big.training.gathered_inputs and small.training.gathered_inputs


@pytest.mark.parametrize("pp", [1, 2, 4, 8])
def test_cost_balanced_stages_hold_every_layer_the_first_the_most(model, pp):
    got = cost_balanced_stage_layers(model, pp)
    layers = len(model.layout.blocks)
    assert len(got) == pp and sum(got) == layers
    assert got[0] == max(got) >= -(-layers // pp)  # the head's cost moves layers up
    headless = dataclasses.replace(model, layout=dataclasses.replace(
        model.layout, head=False))
    even = cost_balanced_stage_layers(headless, pp)
    assert sum(even) == layers and max(even) - min(even) <= 1 + (pp > 1)


def test_a_training_runs_memory_is_checked_against_its_first_stage():
    rows = [r for r in conversion.training_rows()
            if "refused" not in r and r["pp"] != "1"][:1]
    run = read_runs(write_runs(rows))[0]
    figures = training_figures(training_setup(run))
    checked = check_run(run)["memory_gib"]
    assert checked["stage"] == 0
    assert checked["counted"] == figures["devices"][0]["memory_bytes"] / 2**30
    assert checked["measured"] == run.measured["memory_gib"]


def test_ddp_buckets_hold_one_more_copy_of_the_gradients(model):
    t = Training(seq_len=SEQ, devices=4, ddp_buckets=True)
    parts = step_memory(model, t)
    plain = step_memory(model, dataclasses.replace(t, ddp_buckets=False))
    assert parts[BUCKETS] == parts["gradients"] > 0 and plain[BUCKETS] == 0.0
    assert sum(parts.values()) - sum(plain.values()) == parts["gradients"]


def _ddp_buffers(as_view: bool) -> tuple[int, int, bool]:
    """(bucket bytes, gradient bytes, whether every gradient lies in a bucket) of a
    small model under PyTorch's DDP on one CPU process, read in its comm hook."""
    torch = pytest.importorskip("torch")
    dist = pytest.importorskip("torch.distributed")
    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("torch.distributed with gloo is needed")
    import os
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        torch.manual_seed(0)
        net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.Linear(256, 32))
        ddp = torch.nn.parallel.DistributedDataParallel(
            net, bucket_cap_mb=0.05, gradient_as_bucket_view=as_view)
        buffers = []

        def hook(state, bucket):
            buffers.append(bucket.buffer())
            fut = torch.futures.Future()
            fut.set_result(bucket.buffer())
            return fut

        ddp.register_comm_hook(None, hook)
        ddp(torch.randn(8, 64)).sum().backward()
        spans = [(b.data_ptr(), b.data_ptr() + b.numel() * b.element_size())
                 for b in buffers]
        grads = [p.grad for p in net.parameters()]
        inside = all(any(lo <= g.data_ptr() < hi for lo, hi in spans) for g in grads)
        return (sum(b.numel() * b.element_size() for b in buffers),
                sum(g.numel() * g.element_size() for g in grads), inside)
    finally:
        dist.destroy_process_group()


def test_pytorch_ddp_keeps_its_buckets_beside_the_gradients():
    held, grads, inside = _ddp_buffers(as_view=False)
    assert held == grads and not inside  # a second copy: what ddp_buckets counts
    held, grads, inside = _ddp_buffers(as_view=True)
    assert held == grads and inside  # the gradients are the buckets: no copy


def test_the_playbooks_zero0_runs_with_data_parallel_keep_ddp_buckets():
    rows = [r for r in conversion.training_rows() if "refused" not in r]
    for r in rows:
        ddp = r["zero_stage"] == "0" and r["devices"] != "1"
        assert r["ddp_buckets"] == ("true" if ddp else "false")
    run = read_runs(write_runs([next(r for r in rows if r["ddp_buckets"] == "true")]))
    t = training_setup(run[0]).training
    assert t.ddp_buckets
