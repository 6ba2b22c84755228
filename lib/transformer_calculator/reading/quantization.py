"""A config's own ``quantization_config`` read into a weight format
(``formats.Packed``).

Each scheme's stored layout, as its library writes it (the sources the tests check):

- GPTQ (``gptqmodel``'s ``TorchQuantLinear``): ``bits`` a weight packed into 32-bit
  words, a 16-bit scale and a ``bits``-bit zero point per group of ``group_size``
  inputs (one group for ``-1``), and a 32-bit group index per input row (``g_idx``);
  the head stays unquantized unless ``lm_head`` is true.
- AWQ (``gemm`` version, AutoAWQ's ``WQLinear_GEMM``): 4 bits a weight, a 16-bit scale
  and a 4-bit zero point per group.
- bitsandbytes 4-bit (nf4 or fp4): 4 bits a weight, a 32-bit scale per 64 numbers and a
  16-entry table a matrix; with double quantisation the scales are 8-bit, with a 32-bit
  scale per 256 of them, a 256-entry table and an offset. 8-bit (LLM.int8): 8 bits a
  weight and a 32-bit scale per output row.
- fp8 (``transformers``' fine-grained fp8, DeepSeek-V3's format): e4m3 weights with a
  32-bit scale per square block (``weight_block_size``) or one per matrix;
  ``fbgemm_fp8`` (``transformers``' ``FbgemmFp8Linear``): a 32-bit scale per output row,
  linear layers only (stacked experts stay as they are); its biases are float32, so a
  model with biases is refused.
- compressed-tensors (one group of ``Linear`` targets): ``pack-quantized`` (4 or 8 bits
  packed into 32-bit words, the scales and any zero points in the model's format, and
  the weight's shape in two 64-bit numbers), ``int-quantized``, ``float-quantized`` and
  ``naive-quantized`` (8 bits a weight); scales per tensor, channel, group or block.

Modules the config leaves out (``modules_to_not_convert``, ``llm_int8_skip_modules``,
``ignore``) are honoured when they name a part kept anyway (the head, the embeddings,
the router); any other entry is refused, since it would change which matrices are
packed in a way the count cannot follow. Anything else unknown is refused too.
"""

from __future__ import annotations

import re

from ..anatomy.feedforward import Experts, FeedForward
from ..anatomy.formats import Packed
from ..anatomy.layout import Layout
from ..anatomy.matrices import KEPT_BY_DEFAULT, ROLES

__all__ = ["SCHEMES", "weight_format"]

SCHEMES = ("gptq", "awq", "bitsandbytes", "fp8", "fbgemm_fp8", "compressed-tensors",
           "mxfp4")
"""The ``quant_method`` values read."""

_KEPT_NAMES = {
    "lm_head": "head",
    "embed_tokens": "embeddings",
    "wte": "embeddings",
    "gate": "router",
    "router": "router",
    "shared_expert_gate": "shared-gate",
}


LINEAR_KEPT = ("embeddings", "head", "router")
"""What transformers' fp8 integrations leave: every ``Linear`` is converted (a shared
expert's gate too) but the head; embeddings and routers are no ``Linear``."""


def _refuse(what: str) -> ValueError:
    return ValueError(f"config field quantization_config: {what}")


def _field(qc: dict, key: str, kinds: tuple, default: object) -> object:
    value = qc.get(key, default)
    if value is None:
        return default
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise _refuse(
            f"{key}={value!r} is not a {' or '.join(k.__name__ for k in kinds)}"
        )
    return value


_NORMS = ("norm", "layernorm", "e_score_correction_bias")
"""Endings of module names a quantizer never converts anyway (normalisations, the
router's score-correction bias): leaving them out changes nothing."""

_DENSE_MLP = re.compile(
    r"^\(?(gate|up|gate_up|down)(\|(gate|up|gate_up|down))*\)?_proj$"
)
"""A dense feed-forward layer's projections, one name or a regular expression's
alternatives (``(gate|up|gate_up|down)_proj``)."""


def _skipped(qc: dict, keys: tuple[str, ...], layout: Layout | None = None) -> tuple:
    """Check that every module the config leaves unquantized is a part the count can
    place, and return the roles it leaves in the model's format beyond the head, the
    embeddings and the router: the attention (``self_attn``), and the feed-forward
    parts (dense layers and shared experts named together, as Kimi-K2.5 does)."""
    roles: set[str] = set()
    ffn_parts: set[str] = set()
    for key in keys:
        entries = qc.get(key) or []
        if not isinstance(entries, list):
            raise _refuse(f"{key} must be a list of module names")
        for entry in entries:
            name = str(entry).removeprefix("re:")
            last = re.split(r"[.\\$^*]+", name.strip(".$^*\\"))[-1]
            if last in _KEPT_NAMES or last.endswith(_NORMS):
                continue
            if last == "self_attn" and layout is not None:
                roles.add("attention")
            elif last in ("shared_experts", "shared_expert") and layout is not None:
                ffn_parts.add("shared")
            elif _DENSE_MLP.match(last) and "mlp" in name and "expert" not in name:
                ffn_parts.add("dense")
            else:
                raise _refuse(
                    f"{key} entry {entry!r} leaves out a part this calculator cannot "
                    "place (only the head, the embeddings, the router, the attention "
                    "and, together, the dense and shared feed-forward parts can be "
                    "named)"
                )
    if ffn_parts == {"dense", "shared"}:
        roles.add("feed-forward")
    elif ffn_parts:
        raise _refuse(
            "it leaves out the dense feed-forward layers or the shared experts but not "
            "both, which share one role in this count"
        )
    return tuple(sorted(roles))


def _mxfp4(qc: dict, bpn: int, layout: Layout) -> Packed:
    if not layout.has_experts:
        raise _refuse("mxfp4 packs a mixture of experts' matrices, and this model has "
                      "no experts")
    _skipped(qc, ("modules_to_not_convert",), layout)
    kept = tuple(r for r in ROLES if r != "experts")
    return Packed(
        "mxfp4 (e2m1), experts only",
        4,
        "group",
        32,
        8,
        dequant=1,
        fp8=True,
        kept=kept,
        pads=True,
        scheme="OCP MX fp4 (transformers' mxfp4): the experts' matrices only, a "
        "power-of-two (e8m0) scale per 32 inputs",
    )


def _gptq(qc: dict, bpn: int) -> Packed:
    bits = _field(qc, "bits", (int,), 4)
    group = _field(qc, "group_size", (int,), 128)
    fmt = _field(qc, "checkpoint_format", (str,), "gptq")
    if fmt not in ("gptq", "gptq_v2"):
        raise _refuse(f"GPTQ checkpoint_format {fmt!r} is not read (gptq, gptq_v2)")
    if bits not in (2, 3, 4, 8) or not (group == -1 or group >= 1):
        raise _refuse(f"GPTQ bits={bits!r}, group_size={group!r} are not a GPTQ layout")
    _skipped(qc, ("modules_to_not_convert",))
    kept = tuple(k for k in KEPT_BY_DEFAULT if not (k == "head" and qc.get("lm_head")))
    over, size = ("row", 0) if group == -1 else ("group", group)
    return Packed(
        f"GPTQ int{bits}",
        bits,
        over,
        size,
        16,
        zero_bits=bits,
        index_bits=32,
        kept=kept,
        scheme=f"GPTQ {bits}-bit, group size {group}",
    )


def _awq(qc: dict, bpn: int) -> Packed:
    bits = _field(qc, "bits", (int,), _field(qc, "w_bit", (int,), 4))
    group = _field(qc, "group_size", (int,), _field(qc, "q_group_size", (int,), 128))
    version = str(_field(qc, "version", (str,), "gemm")).lower()
    if version != "gemm" or bits != 4 or group < 1:
        raise _refuse(
            f"AWQ version {version!r}, bits {bits!r}, group size {group!r}: "
            "only the 4-bit gemm layout is read"
        )
    zero = bool(_field(qc, "zero_point", (bool,), True))
    _skipped(qc, ("modules_to_not_convert",))
    return Packed(
        "AWQ int4",
        4,
        "group",
        group,
        16,
        zero_bits=4 if zero else 0,
        scheme=f"AWQ 4-bit gemm, group size {group}",
    )


def _bitsandbytes(qc: dict, bpn: int, experts: bool) -> Packed:
    four = bool(_field(qc, "load_in_4bit", (bool,), False))
    eight = bool(_field(qc, "load_in_8bit", (bool,), False))
    if four == eight:
        raise _refuse("bitsandbytes needs exactly one of load_in_4bit and load_in_8bit")
    if experts:
        raise _refuse(
            "bitsandbytes on a mixture of experts: which expert tensors "
            "transformers quantizes is not counted here"
        )
    _skipped(qc, ("llm_int8_skip_modules", "modules_to_not_convert"))
    if eight:
        return Packed(
            "bitsandbytes int8",
            8,
            "row",
            0,
            32,
            dequant=1,
            scheme="bitsandbytes LLM.int8",
        )
    kind = str(_field(qc, "bnb_4bit_quant_type", (str,), "fp4"))
    if kind not in ("nf4", "fp4"):
        raise _refuse(f"bnb_4bit_quant_type {kind!r} is not nf4 or fp4")
    if _field(qc, "bnb_4bit_use_double_quant", (bool,), False):
        return Packed(
            f"bitsandbytes {kind}, double quantisation",
            4,
            "flat",
            64,
            8,
            nested=256,
            extra_bytes=64 + 1024 + 4,
            scheme=f"bitsandbytes {kind} with double quantisation",
        )
    return Packed(
        f"bitsandbytes {kind}",
        4,
        "flat",
        64,
        32,
        extra_bytes=64,
        scheme=f"bitsandbytes {kind}",
    )


def _fp8(qc: dict, bpn: int, method: str, layout: Layout) -> Packed:
    _skipped(qc, ("modules_to_not_convert",))
    if method == "fbgemm_fp8":
        if _has_biases(layout):
            raise _refuse(
                "fbgemm_fp8 keeps a converted layer's bias in float32, and "
                "this model's layers have biases: not counted"
            )
        return Packed(
            "fbgemm fp8",
            8,
            "row",
            0,
            32,
            dequant=1,
            fp8=True,
            kept=("embeddings", "head", "router", "experts"),
            scheme="fbgemm fp8: a 32-bit scale an output row; transformers "
            "converts only linear layers, so stacked experts stay as they are",
        )
    block = qc.get("weight_block_size", [128, 128])
    static = _field(qc, "activation_scheme", (str,), "dynamic") == "static"
    extra = 4 if static else 0
    if block is None:
        return Packed(
            "fp8 (e4m3)",
            8,
            "tensor",
            0,
            32,
            extra_bytes=extra,
            dequant=1,
            fp8=True,
            kept=LINEAR_KEPT,
            scheme="fp8, a 32-bit scale a matrix",
        )
    if (
        not isinstance(block, list)
        or len(block) != 2
        or block[0] != block[1]
        or not isinstance(block[0], int)
        or isinstance(block[0], bool)
        or block[0] < 1
    ):
        raise _refuse(f"weight_block_size {block!r} is not a square block")
    return Packed(
        f"fp8 (e4m3), {block[0]} x {block[0]} blocks",
        8,
        "block",
        block[0],
        32,
        extra_bytes=extra,
        dequant=1,
        fp8=True,
        kept=LINEAR_KEPT,
        scheme=f"fine-grained fp8, a 32-bit scale per {block[0]}-square block",
    )


def _compressed(qc: dict, bpn: int, layout: Layout) -> Packed:
    fmt = _field(qc, "format", (str,), "")
    readable = ("pack-quantized", "int-quantized", "float-quantized", "naive-quantized")
    if fmt not in readable:
        raise _refuse(f"compressed-tensors format {fmt!r} is not read ({readable})")
    groups = qc.get("config_groups")
    if not isinstance(groups, dict) or len(groups) != 1:
        raise _refuse("compressed-tensors config_groups must hold exactly one group")
    group = next(iter(groups.values()))
    w = group.get("weights") if isinstance(group, dict) else None
    if not isinstance(w, dict) or group.get("targets") != ["Linear"]:
        raise _refuse("compressed-tensors: one group of weights targeting Linear only")
    left = _skipped(qc, ("ignore",), layout)
    bits = _field(w, "num_bits", (int,), 8)
    strategy = _field(w, "strategy", (str,), "tensor")
    size = _field(w, "group_size", (int,), 0)
    symmetric = bool(_field(w, "symmetric", (bool,), True))
    if strategy == "block":
        block = w.get("block_structure")
        if not isinstance(block, list) or len(block) != 2 or block[0] != block[1]:
            raise _refuse(f"block_structure {block!r} is not a square block")
        size = block[0]
    over = {"tensor": "tensor", "channel": "row", "group": "group", "block": "block"}
    if (
        strategy not in over
        or (fmt != "pack-quantized" and bits != 8)
        or bits not in (4, 8)
    ):
        raise _refuse(
            f"compressed-tensors {fmt} with {bits} bits by {strategy} is not read"
        )
    scale = 8 * bpn
    acts = group.get("input_activations")
    static = isinstance(acts, dict) and acts.get("dynamic") is False
    extra = (16 if fmt == "pack-quantized" else 0) + (bpn if static else 0)
    zero = 0 if symmetric else bits if fmt == "pack-quantized" else 8
    is_float = w.get("type") == "float"
    return Packed(
        f"compressed-tensors {fmt}, {bits} bits by {strategy}",
        bits,
        over[strategy],
        size,
        scale,
        zero_bits=zero,
        extra_bytes=extra,
        dequant=1 if symmetric else 2,
        fp8=is_float and bits == 8,
        kept=KEPT_BY_DEFAULT + left,
        scheme=f"compressed-tensors {fmt}",
    )


def _has_biases(layout: Layout) -> bool:
    """True if any attention or feed-forward part of ``layout`` has biases."""
    for b in layout.blocks:
        m, f = b.mixer, b.ffn
        if getattr(m, "qkv_bias", False) or getattr(m, "out_bias", False):
            return True
        if getattr(m, "bias", False) or getattr(m, "proj_bias", False):
            return True
        if isinstance(f, FeedForward) and f.bias:
            return True
        if isinstance(f, Experts) and f.shared is not None and f.shared.bias:
            return True
    return False


def weight_format(qc: object, bytes_per_number: int, layout: Layout) -> Packed:
    """The weight format a config's ``quantization_config`` describes, for a model of
    ``bytes_per_number`` bytes a number laid out as ``layout``."""
    experts = layout.has_experts
    if not isinstance(qc, dict):
        raise _refuse("must be an object")
    method = qc.get("quant_method")
    if method not in SCHEMES:
        raise _refuse(f"quant_method {method!r} is not one of {', '.join(SCHEMES)}")
    if method == "gptq":
        return _gptq(qc, bytes_per_number)
    if method == "awq":
        return _awq(qc, bytes_per_number)
    if method == "bitsandbytes":
        return _bitsandbytes(qc, bytes_per_number, experts)
    if method in ("fp8", "fbgemm_fp8"):
        return _fp8(qc, bytes_per_number, method, layout)
    if method == "mxfp4":
        return _mxfp4(qc, bytes_per_number, layout)
    return _compressed(qc, bytes_per_number, layout)
