"""The second route: a family without a layout here, counted from the model
``transformers`` itself builds on the meta device (shapes only: no weights, no memory,
nothing downloaded), as ``accelerate estimate-memory`` does.

``measure(cfg, ...)`` makes the config object as ``from_pretrained`` would (without
remote code), builds the causal language model on the meta device at the file's number
format, and reads off it:

- every parameter tensor once (tied matrices are one tensor), with its bytes at the
  format ``transformers`` holds it in;
- each decoder layer's parameters, its experts (a module called ``experts`` whose
  tensors stack one expert each) and how many of them a token uses (the config's
  ``num_experts_per_tok`` or its family's name for it);
- the cache each decoder layer's call writes (``meta_cache.py``), from meta-device
  forward passes: after one token and two (the numbers a token adds, and the fixed
  state), and after a prompt longer than every window and one more token (which layers
  stop growing, and after how many tokens); a layer called more than once a token (a
  looped layer) has each call's cache, and its weights multiplied once a call.

It needs ``torch`` and ``transformers`` (5.24); without them a family without a layout
is refused in one line. Everything else stays pure Python.
"""

from __future__ import annotations

import importlib.util
import inspect

from ..anatomy.layout import Block
from ..anatomy.measured import MeasuredExperts, MeasuredLayout, MeasuredMixer
from ..anatomy.mixers import FixedState, MixerKind
from ..anatomy.model import Model

__all__ = ["available", "measure", "TOP_K_NAMES"]

TOP_K_NAMES = (
    "num_experts_per_tok",
    "moe_topk",
    "num_experts_per_token",
    "experts_per_token",
    "moe_k",
    "top_k",
    "router_top_k",
    "num_selected_experts",
)
"""Config fields that say how many experts the router picks for each token."""

_SHORT_PROMPT = 16
"""Tokens of the long prompt when no layer has a window."""


def available() -> bool:
    """True when ``torch`` and ``transformers`` can be imported."""
    return all(
        importlib.util.find_spec(m) is not None for m in ("torch", "transformers")
    )


def _text_config(config):
    return config.get_text_config(decoder=True)


def _top_k(config, layer: int) -> int:
    for name in TOP_K_NAMES:
        value = getattr(config, name, None)
        if isinstance(value, list):
            value = value[layer]
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    raise ValueError(
        "this model has experts but its config names no count of experts a token "
        f"uses ({', '.join(TOP_K_NAMES[:3])}, ...)"
    )


def _heads(config, layer: int, default: int) -> int:
    """Query heads of layer ``layer`` (a config may set them layer by layer)."""
    per_layer = getattr(config, "per_layer_config", None)
    for source in (per_layer[layer] if per_layer else None, config):
        try:
            value = getattr(source, "num_attention_heads", None)
        except Exception:  # noqa: BLE001 - transformers: a per-layer attribute
            continue
        if isinstance(value, list):
            value = value[layer]
        if isinstance(value, int) and value > 0:
            return value
    return default


def _decoder_layers(model) -> list[tuple[str, object]]:
    """(name, module) of each decoder layer: the outermost
    ``GradientCheckpointingLayer`` modules (every transformers decoder layer is one),
    or else the modules of the largest ``ModuleList``."""
    import torch
    from transformers.modeling_layers import GradientCheckpointingLayer

    found: list[tuple[str, object]] = []
    names: set[str] = set()
    for name, m in model.named_modules():
        parts = name.split(".")
        inside = any(".".join(parts[:k]) in names for k in range(1, len(parts)))
        if isinstance(m, GradientCheckpointingLayer) and not inside:
            found.append((name, m))
            names.add(name)
    if found:
        return found
    lists = [
        (sum(p.numel() for p in m.parameters()), name, m)
        for name, m in model.named_modules()
        if isinstance(m, torch.nn.ModuleList)
    ]
    if not lists:
        raise ValueError("transformers' model has no list of decoder layers")
    _, name, biggest = max(lists, key=lambda t: t[0])
    return [(f"{name}.{i}", m) for i, m in enumerate(biggest)]


def _build(cfg: dict, dtype, device: str = "meta"):
    import torch
    import transformers

    transformers.logging.set_verbosity_error()
    clean = {k: v for k, v in cfg.items() if k != "auto_map"}  # never remote code
    try:
        config = transformers.CONFIG_MAPPING[cfg["model_type"]].from_dict(clean)
    except Exception as err:  # noqa: BLE001 - transformers' own refusal, in one line
        raise ValueError(f"transformers does not accept this config: {err}") from None
    last = None
    for extra in ({"experts_implementation": "batched_mm"}, {}):
        try:
            with torch.device(device):
                model = transformers.AutoModelForCausalLM.from_config(
                    config, dtype=dtype, **extra
                )
            return config, model.eval()
        except Exception as err:  # noqa: BLE001
            last = err
    raise ValueError(f"transformers could not build this model: {last}") from None


CPU_BYTES = 2**30
"""Largest model (bytes of weights) run for real on the CPU when the meta device cannot
run it: its cache is then read off a real forward pass."""


def measure(cfg: dict, bpn: int, name: str) -> tuple[Model, list[str]]:
    """The ``Model`` transformers builds from ``cfg`` at ``bpn`` bytes a number, read
    off the meta device (or, for a small model the meta device cannot run, off the
    CPU), and the notes saying how."""
    import torch

    dtype = {4: torch.float32, 2: torch.bfloat16, 1: torch.float8_e4m3fn}[bpn]
    if bpn == 2 and str(cfg.get("torch_dtype") or cfg.get("dtype")) == "float16":
        dtype = torch.float16
    config, model = _build(cfg, dtype)
    if "shared_kv_states" in inspect.signature(model.forward).parameters:
        raise ValueError(
            f"model_type {cfg['model_type']!r} is a drafting assistant: transformers "
            "runs it only beside its target model, whose keys and values it reads "
            "(shared_kv_states); count the target model"
        )
    notes: list[str] = []
    try:
        runs, types, long_tokens = _runs(config, model, "meta")
    except ValueError as err:
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        if "meta device" not in str(err) or size > CPU_BYTES:
            raise
        config, model = _build(cfg, dtype, "cpu")
        runs, types, long_tokens = _runs(config, model, "cpu")
        notes.append(
            "transformers cannot run this family on the meta device; its model is "
            f"small ({size:,} bytes of weights), so the cache was read off a real "
            "forward pass on the CPU"
        )
    text = _text_config(config)
    try:
        model = _assemble(model, text, _decoder_layers(model), types, runs,
                          long_tokens, bpn, name)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - a model this route cannot read
        raise ValueError(f"transformers' model could not be read here: {err}") from None
    return model, notes


def _runs(config, model, device: str):
    """The layers' calls over a prompt of one token and one more, and over a prompt
    past every window and one more; the layer types; the long prompt's length."""
    import torch
    import torch.fx.experimental._config as fx_config
    from transformers.cache_utils import get_layer_types_and_kwargs

    modules = [m for _, m in _decoder_layers(model)]
    try:
        types, kwargs = get_layer_types_and_kwargs(_text_config(config))
        windows = [kw.get("sliding_window") or 0 for kw in kwargs]
        long_tokens = max([_SHORT_PROMPT, *(w + 2 for w in windows)])
        ids = torch.zeros((1, long_tokens + 1), dtype=torch.long, device=device)
        with fx_config.patch(meta_nonzero_assume_all_nonzero=True):
            short, short_next = _prompt_and_one_more(model, modules, ids, 1)
            long, long_next = _prompt_and_one_more(model, modules, ids, long_tokens)
            if _grows(long_next) - _grows(short_next):  # a token added nothing at first
                short, short_next = _prompt_and_one_more(model, modules, ids, 1, True)
    except ValueError:
        raise
    except Exception as err:  # noqa: BLE001 - a family that does not run on meta
        raise ValueError(
            f"transformers could not run this model on the {device} device: {err}"
        ) from None
    runs = (short, short_next, long, long_next)
    if len({tuple(p.module for p in run) for run in runs}) != 1:
        raise ValueError(
            "transformers' model runs its layers in a different order from one "
            "forward pass to the next: not counted here"
        )
    return runs, types, long_tokens


def _prompt_and_one_more(model, modules, ids, tokens: int, whole: bool = False):
    """The layers' calls over a prompt of ``tokens`` tokens and over one more token
    continuing its cache; a family whose model takes the whole text again with its
    cache (CPM-Ant) is given the whole text (``whole``, or when one token fails)."""
    from .meta_cache import run_passes

    cache, first = run_passes(model, modules, ids[:, :tokens])
    if not whole:
        try:
            one = ids[:, tokens : tokens + 1]
            return first, run_passes(model, modules, one, cache)[1]
        except ValueError:
            raise
        except Exception:  # noqa: BLE001 - try the whole text, on a fresh cache
            cache, first = run_passes(model, modules, ids[:, :tokens])
    return first, run_passes(model, modules, ids[:, : tokens + 1], cache)[1]


def _grows(run) -> set[int]:
    return {i for i, p in enumerate(run) if p.added != (0, 0)}


def _pass_cache(
    i: int, runs, long_tokens: int, where: str
) -> tuple[int, int | None, FixedState]:
    """(numbers a token, tokens kept or None, fixed state) of the ``i``-th layer call
    (``where``, for the messages): what it wrote after one token, after two, after the
    long prompt and after one more."""
    (a, a32), (b, b32), (n, n32), (m, m32) = _cumulated(i, runs)
    grow = b - a
    if b32 != a32 or m32 != n32 or grow < 0:
        raise ValueError(f"{where}'s cache grows in float32: not counted here")
    fixed = a - grow
    if m - n == grow and n == fixed + long_tokens * grow:
        return grow, None, FixedState(model_format=fixed, float32=a32)
    kept, rest = divmod(n - fixed, grow) if grow else (0, n - fixed)
    if m != n or rest or (grow and kept >= long_tokens):
        raise ValueError(
            f"{where}'s cache grows neither by the same numbers every token nor up to "
            "a window (DeepSeek-V4's compressed attention adds one entry every few "
            "tokens): not counted here"
        )
    return grow, kept, FixedState(model_format=fixed, float32=a32)


def _cumulated(i: int, runs):
    """What call ``i`` holds after each of the four passes (a pass and the next one
    continue one cache)."""
    short, short_next, long, long_next = (run[i].added for run in runs)
    plus = lambda x, y: (x[0] + y[0], x[1] + y[1])  # noqa: E731
    return short, plus(short, short_next), long, plus(long, long_next)


def _parameters(model, layers, bpn: int):
    """Each layer's numbers outside its experts, its experts, and the numbers outside
    the layers (and how many of each are held in float32)."""
    index = {name: i for i, (name, _) in enumerate(layers)}
    blocks_numbers = [0] * len(layers)
    experts: dict[int, dict] = {}
    outside = outside32 = 0
    for pname, p in model.named_parameters():
        f32 = p.element_size() == 4 and bpn != 4
        if p.element_size() not in (bpn, 4):
            raise ValueError(
                f"parameter {pname} is held as {p.dtype}: not counted here"
            )
        parts = pname.split(".")
        cut = next(
            (k for k in range(len(parts), 0, -1) if ".".join(parts[:k]) in index),
            None,
        )
        if cut is None:
            outside += p.numel()
            outside32 += p.numel() if f32 else 0
            continue
        i, rest = index[".".join(parts[:cut])], parts[cut:]
        if "experts" in rest[:-1]:
            e = experts.setdefault(i, {"numbers": 0, "f32": 0, "count": 0})
            after = rest[rest.index("experts") + 1]
            count = int(after) + 1 if after.isdigit() else p.shape[0]
            e["count"] = max(e["count"], count)
            e["numbers"] += p.numel()
            e["f32"] += p.numel() if f32 else 0
        else:
            blocks_numbers[i] += p.numel()
            outside32 += p.numel() if f32 else 0
    return blocks_numbers, experts, outside, outside32


def _assemble(model, text, layers, types, runs, long_tokens, bpn, name):
    """The measured layout: blocks from the decoder layers, parts from the cache their
    calls wrote."""
    blocks_numbers, experts, outside, outside32 = _parameters(model, layers, bpn)
    calls: dict[int, list[int]] = {}
    for c, p in enumerate(runs[0]):
        calls.setdefault(p.module, []).append(c)
    blocks = []
    for i in range(len(layers)):
        if i not in calls:  # built but never run (a prediction head for training)
            outside += blocks_numbers[i]
            continue
        where = f"layer {i}" + (f" ({types[i]})" if len(types) == len(layers) else "")
        parts = [(_pass_cache(c, runs, long_tokens, where), runs[0][c])
                 for c in calls[i]]
        caps = {cap for (grow, cap, _), _ in parts if grow}
        if len(caps) > 1:
            raise ValueError(f"layer {i}'s passes keep different numbers of tokens")
        per_token = sum(grow for (grow, _, _), _ in parts)
        fixed = FixedState(
            model_format=sum(f.model_format for (_, _, f), _ in parts),
            float32=sum(f.float32 for (_, _, f), _ in parts),
        )
        layer_heads = _heads(text, i, 0)
        pair = kv_heads = head_dim = summary = 0
        for (grow, _, _), p in parts:
            summary += p.summary
            if grow and p.keys is not None and p.values is not None:
                pair += layer_heads * (p.keys.shape[-1] + p.values.shape[-1])
                kv_heads = p.keys.shape[1] if p.keys.dim() == 4 else 1
                head_dim = p.keys.shape[-1]
        if per_token:
            kind = MixerKind.ATTENTION
        elif fixed.model_format or fixed.float32:
            kind = MixerKind.RUNNING_SUMMARY
        else:
            kind = MixerKind.ATTENTION
        label = types[i] if len(types) == len(layers) else (
            "attention" if kind is MixerKind.ATTENTION else "running_summary")
        mixer = MeasuredMixer(
            kind_of_mixing=kind, label=label, numbers=blocks_numbers[i],
            per_token=per_token, cap=caps.pop() if caps else None, fixed=fixed,
            pair_numbers=pair, summary=summary, heads=layer_heads if pair else 0,
            kv_heads=kv_heads, head_dim=head_dim, passes=len(parts),
        )
        ffn = None
        if i in experts:
            e = experts[i]
            ffn = MeasuredExperts(
                count=e["count"], per_token=_top_k(text, i),
                per_expert=e["numbers"] // e["count"], float32=e["f32"],
            )
            if ffn.parameters != e["numbers"] or ffn.per_token > ffn.count:
                raise ValueError(f"layer {i}'s experts are not all of one size")
        blocks.append(Block(mixer=mixer, ffn=ffn, norms=0, passes=len(parts)))
    inputs = model.get_input_embeddings()
    head = model.get_output_embeddings()
    tied = head is not None and inputs is not None and head.weight is inputs.weight
    layout = MeasuredLayout(
        vocab=int(getattr(text, "vocab_size", 0) or 0),
        width=int(getattr(text, "hidden_size", 0) or 0),
        blocks=tuple(blocks), tied=tied, final_norm=0, norm_numbers=0,
        norm="the norms transformers builds", family=f"{type(model).__name__}",
        outside=outside, outside_float32=outside32,
    )
    return Model(layout=layout, bytes_per_number=bpn, name=name, route="transformers")
