"""Whether a model can be cut as a split asks, checked before anything is priced: each
refusal names its flag, says the real cause first (what does not divide) and the fix
(the sizes that would)."""

from __future__ import annotations

from transformer_arithmetic.pipeline import uneven_stage_layers

from ..anatomy.feedforward import Experts, FeedForward
from ..anatomy.attention_kinds import SparseLatentAttention
from ..anatomy.mixers import Attention, LatentAttention
from ..anatomy.recurrent import GatedDeltaNet
from ..anatomy.matrices import matrices_of_block
from ..anatomy.model import Model
from .plan import Split

__all__ = ["check_split", "stage_layers", "physical_experts", "experts_of",
           "why_tp_uncut", "cost_balanced_stage_layers"]


def _refuse(flag: str, why: str) -> ValueError:
    return ValueError(f"argument {flag}: {why}")


def _sizes(ok, most: int = 64) -> str:
    """The sizes up to ``most`` that ``ok`` accepts, in words ('2, 4 or 8')."""
    found = [n for n in range(2, most + 1) if ok(n)][:6]
    if not found:
        return "none up to 64"
    return ", ".join(map(str, found[:-1])) + (" or " if len(found) > 1 else "") + str(
        found[-1])


def _mixer_uncut(i: int, m, tp: int) -> str | None:
    """Why layer ``i``'s mixer ``m`` cannot be cut over ``tp`` devices (None: it
    can): by its heads (a Gated DeltaNet by its key and value heads)."""
    if type(m) is GatedDeltaNet:
        if m.key_heads % tp:
            return (f"{m.key_heads} linear-attention key heads do not divide among "
                    f"{tp} devices")
        return None
    if type(m) not in (Attention, LatentAttention, SparseLatentAttention):
        return f"layer {i}'s {type(m).__name__} is not split by this calculator"
    if m.heads % tp:
        return f"{m.heads} heads do not divide among {tp} devices"
    kv = getattr(m, "kv_heads", None)
    if kv is not None and kv % tp and tp % kv:
        return (f"{kv} key-value heads neither divide among {tp} devices nor "
                "divide them")
    return None


def why_tp_uncut(model: Model, tp: int) -> str | None:
    """Why ``model``'s layers cannot be cut over ``tp`` devices (None: they can)."""
    for i, b in enumerate(model.layout.blocks):
        f = b.ffn
        why = _mixer_uncut(i, b.mixer, tp) if tp > 1 else None
        if why:
            return why
        for part in (f, getattr(f, "shared", None)):
            if isinstance(part, FeedForward) and part.inner % tp:
                return f"feed-forward width {part.inner:,} does not divide among {tp}"
    return None


def experts_of(model: Model) -> Experts | None:
    """The model's first mixture of experts (None: a dense model)."""
    return next((b.ffn for b in model.layout.blocks if isinstance(b.ffn, Experts)),
                None)


def physical_experts(model: Model, s: Split) -> int:
    """Experts the devices hold in all, copies included: the model's E plus
    ``redundant_experts``, and with N_ep above E and no copies named, one expert a
    device (N_ep - E copies)."""
    e = experts_of(model)
    if e is None:
        return 0
    extra = s.redundant_experts or (s.ep - e.count if s.ep > e.count else 0)
    return e.count + extra


def stage_layers(model: Model, s: Split) -> list[int]:
    """Layers of each pipeline stage, first to last: by hand (``stage_layers``), or
    as even as they go with the fewer at the ends (``uneven_stage_layers``)."""
    layers = len(model.layout.blocks)
    if s.stage_layers is not None:
        return list(s.stage_layers)
    return uneven_stage_layers(layers, s.pp)


def _block_cost(block) -> int:
    """A layer's cost as nanotron weighs it (``get_block_compute_costs``): 4 heads x
    head width x model width for attention (whatever its key-value heads) and 3 (2
    ungated) x inner x model width for the feed-forward part; any other layer, its
    matrices' numbers."""
    m, f = block.mixer, block.ffn
    if type(m) is not Attention or not isinstance(f, FeedForward):
        return sum(x.rows * x.cols * x.count for x in matrices_of_block(block))
    return (4 * m.heads * m.head_dim * m.width
            + (3 if f.gated else 2) * f.inner * f.width)


def cost_balanced_stage_layers(model: Model, pp: int) -> tuple[int, ...]:
    """Layers of each pipeline stage as nanotron's ``build_model`` places them: the
    blocks in order (the input table costing nothing, each layer its matrices'
    numbers, the output head vocabulary x width), each on the current stage until
    the running cost passes ``(stage + 1) / pp`` of the whole, the block that passes
    it included. The head's cost leaves the last stage fewer layers and the first
    more than an even cut."""
    layout = model.layout
    costs = [_block_cost(b) for b in layout.blocks]
    head = layout.vocab * layout.width if layout.head else 0
    total, run, stage = sum(costs) + head, 0, 0
    out = [0] * pp
    for c in costs:
        run += c
        out[stage] += 1
        if run > total * (stage + 1) / pp and stage < pp - 1:
            stage += 1
    return tuple(out)


def check_split(model: Model, s: Split) -> list[str]:
    """Notes on ``s`` for ``model``, or a ValueError naming the flag that cannot be cut
    so, the cause and the sizes that would do."""
    notes: list[str] = []
    layout = model.layout
    if s.model_devices * s.ep > 1 and model.route == "transformers":
        raise _refuse("--tp/--pp/--ep", "a model counted by the transformers route is "
                      "known by its tensors' sizes, not by its parts, so it cannot "
                      "be split (use --route layout)")
    why = why_tp_uncut(model, s.tp)
    if why:
        raise _refuse("--tp", f"{why} (tensor parallel sizes that divide this model: "
                      f"{_sizes(lambda n: why_tp_uncut(model, n) is None)})")
    e = experts_of(model)
    if s.ep > 1 or s.redundant_experts:
        if e is None:
            raise _refuse("--ep", "this model has no experts to spread")
        stage = s.tp * s.dp
        if stage % s.ep or (s.ep % s.tp and s.tp % s.ep):
            raise _refuse("--ep", f"{s.ep} groups of experts are taken from a stage's "
                          f"tp x dp devices, here {stage}: also set "
                          f"--tp {s.ep} or --dp {max(s.ep // s.tp, 1)} (tp x dp a "
                          f"multiple of {s.ep}, tp dividing it or divided by it)")
        physical = physical_experts(model, s)
        if physical % s.ep:
            raise _refuse("--ep", f"{physical} experts ({e.count} and "
                          f"{physical - e.count} copies) do not divide among {s.ep} "
                          "devices")
        if e.inner % s.expert_cut:
            raise _refuse("--tp", f"expert width {e.inner:,} does not divide into "
                          f"{s.expert_cut} shares")
        if physical > e.count:
            notes.append(f"{physical - e.count} copies of experts beside the "
                         f"{e.count} (redundant experts, as DeepSeek-V3 deploys them): "
                         f"{physical // s.ep} a device")
    _check_stages(model, s, notes)
    if s.cp > 1 and s.tp > 1 and not s.sequence_parallel:
        notes.append("context parallel with tensor parallel but no sequence "
                     "parallelism")
    if layout.vocab % s.tp:
        notes.append(f"vocabulary {layout.vocab:,} padded to "
                     f"{-(-layout.vocab // s.tp) * s.tp:,} rows to divide "
                     f"among {s.tp} devices")
    return notes


def _check_stages(model: Model, s: Split, notes: list[str]) -> None:
    layers = len(model.layout.blocks)
    if s.stage_layers is not None:
        got = s.stage_layers
        if len(got) != s.pp:
            raise _refuse("--pp-layers", f"{len(got)} stages listed for --pp {s.pp}")
        if sum(got) != layers or min(got) < 0:
            raise _refuse("--pp-layers", f"the stages hold {sum(got)} layers; the "
                          f"model has {layers}")
    elif s.pp > layers:
        raise _refuse("--pp", f"{layers} layers cannot fill {s.pp} stages (at most "
                      f"--pp {layers})")
    counts = stage_layers(model, s)
    v = s.virtual_stages
    least = [v - 1 if i in (0, len(counts) - 1) else v for i in range(len(counts))]
    short = [c for c, m in zip(counts, least) if c < m]
    if v > 1 and short:  # an end stage may give one chunk to its table alone
        raise _refuse("--virtual-stages", f"a stage of {short[0]} layers cannot hold "
                      f"{v} chunks (an end stage's table may fill one)")
    if len(set(counts)) > 1:
        how = "as given" if s.stage_layers is not None else (
            f"{layers} layers do not divide among {s.pp}: the end stages, which also "
            "hold the input table and the output head, take fewer")
        notes.append(f"uneven stages ({how}): {_runs(counts)} layers")


def _runs(counts: list[int]) -> str:
    """Stage sizes in words: '7, 14 x 8, 7'."""
    out, i = [], 0
    while i < len(counts):
        j = i
        while j < len(counts) and counts[j] == counts[i]:
            j += 1
        out.append(f"{j - i} x {counts[i]}" if j - i > 1 else f"{counts[i]}")
        i = j
    return ", ".join(out)
