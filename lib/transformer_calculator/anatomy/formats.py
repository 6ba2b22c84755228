"""Number formats: how the weights and the key-value cache are stored, and what that
costs in bytes and in arithmetic.

A weight format packs the matrices of chosen roles (``matrices.py``) and leaves every
other number (normalisations, biases, embeddings and head by default, routers, a running
summary's filter) in the model's own format:

- ``Unpacked``: every number at the model's bytes a number (what ``torch_dtype`` says);
- ``Packed``: ``bits`` a weight, plus scales (and zero points) over a tensor, an output
  row, a group of inputs, a square block or a run of the flattened matrix, plus any
  index
  a scheme stores per input row and a few fixed bytes per matrix.

A cache format stores each cached vector (one head's key or value for one token, or a
latent) in ``bits`` a number with an optional scale and zero point per vector, plus
fixed
scales per layer. Reading a packed number back costs ``dequant_ops`` operations (a
multiply by its scale, an add of its zero point, or a table look-up), counted in every
step's arithmetic.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass

from transformer_arithmetic.memory import packed_bits_per_weight

from .cache_formats import (CACHE_AS_MODEL, CACHE_FORMATS, CacheAsModel, CacheFormat,
                            CachePacked)
from .matrices import KEPT_BY_DEFAULT, ROLES, Matrix

__all__ = [
    "WeightFormat",
    "Unpacked",
    "Packed",
    "UNPACKED",
    "WEIGHT_FORMATS",
    "ExpertsApart",
    "CacheFormat",
    "CacheAsModel",
    "CachePacked",
    "CACHE_AS_MODEL",
    "CACHE_FORMATS",
    "SCALE_OVER",
]

SCALE_OVER = ("none", "tensor", "row", "group", "block", "flat")
"""What one scale covers: nothing (no scales), the whole matrix, one output row, a group
of ``scale_size`` inputs in one row, a square block of side ``scale_size``, or a run of
``scale_size`` numbers of the flattened matrix (bitsandbytes)."""


class WeightFormat(ABC):
    """The contract of a weight format: which matrices it packs and their bytes."""

    name: str

    @abstractmethod
    def packs(self, role: str) -> bool:
        """True if matrices of ``role`` are packed."""

    @abstractmethod
    def matrix_bytes(self, m: Matrix) -> int:
        """Bytes of the ``m.count`` packed matrices ``m`` (weights, scales, indices)."""

    @property
    @abstractmethod
    def dequant_ops(self) -> int:
        """Operations to turn one packed weight back into a number a step multiplies."""

    @property
    @abstractmethod
    def fp8_compute(self) -> bool:
        """True when the packed matrices multiply at a chip's 8-bit floating rate."""

    @abstractmethod
    def describe(self) -> str:
        """One line for the report: bits, scales, what stays unpacked."""

    def part(self, role: str) -> "Packed | None":
        """The packed format matrices of ``role`` are stored in (None: the model's
        own numbers)."""
        return self if isinstance(self, Packed) and self.packs(role) else None


@dataclass(frozen=True)
class Unpacked(WeightFormat):
    """Every number in the model's own format."""

    name: str = "as stored"

    def packs(self, role: str) -> bool:
        return False

    def matrix_bytes(self, m: Matrix) -> int:
        raise ValueError("an unpacked format packs no matrix")

    @property
    def dequant_ops(self) -> int:
        return 0

    @property
    def fp8_compute(self) -> bool:
        return False

    def describe(self) -> str:
        return "every number in the model's own format"


UNPACKED = Unpacked()
"""The weights as the config's ``torch_dtype`` says."""


@dataclass(frozen=True)
class Packed(WeightFormat):
    """``bits`` a weight in the packed matrices; one scale of ``scale_bits`` (and a zero
    point of ``zero_bits``, 0 for symmetric) over each ``scale_over`` unit of
    ``scale_size``; ``nested``: the scales themselves packed to ``scale_bits`` with one
    32-bit scale per ``nested`` of them (bitsandbytes' double quantisation; 0: none);
    ``index_bits`` per input row (GPTQ's group index); ``extra_bytes`` fixed per matrix
    (look-up tables); ``kept``: roles left in the model's own format; ``pads``: a last
    group of inputs that does not fill is padded, as engines pad a split's share;
    ``mx``: power-of-two scales a block that only a chip with 4-bit arithmetic
    multiplies at its 8-bit rate (``compute``)."""

    name: str
    bits: int
    scale_over: str
    scale_size: int
    scale_bits: int
    zero_bits: int = 0
    nested: int = 0
    index_bits: int = 0
    extra_bytes: int = 0
    kept: tuple[str, ...] = KEPT_BY_DEFAULT
    dequant: int = 2
    fp8: bool = False
    scheme: str = ""
    fp4: bool = False
    pads: bool = False
    mx: bool = False

    def __post_init__(self) -> None:
        if self.bits not in (1, 2, 3, 4, 8, 16):
            raise ValueError(
                f"{self.name}: bits must be 1, 2, 3, 4, 8 or 16, got {self.bits!r}"
            )
        if self.scale_over not in SCALE_OVER:
            raise ValueError(f"{self.name}: scale_over must be one of {SCALE_OVER}")
        if self.scale_over in ("group", "block", "flat") and self.scale_size < 1:
            raise ValueError(
                f"{self.name}: a {self.scale_over} scale needs a size of at "
                f"least 1, got {self.scale_size!r}"
            )
        unknown = [r for r in self.kept if r not in ROLES]
        if unknown:
            raise ValueError(f"{self.name}: unknown roles {unknown}")

    def packs(self, role: str) -> bool:
        return role not in self.kept

    def scales(self, m: Matrix) -> int:
        """Scales one matrix of ``m`` holds."""
        rows, cols, size = m.rows, m.cols, self.scale_size
        if self.scale_over == "none":
            return 0
        if self.scale_over == "tensor":
            return 1
        if self.scale_over == "row":
            return cols
        if self.scale_over == "group":
            if rows % size and self.pads:  # the last group padded (a split's share)
                return cols * math.ceil(rows / size)
            if rows % size:
                raise ValueError(
                    f"{self.name}: groups of {size} inputs do not divide a {m.role} "
                    f"matrix of {rows:,} inputs"
                )
            return cols * (rows // size)
        if self.scale_over == "block":
            return math.ceil(cols / size) * math.ceil(rows / size)
        return math.ceil(rows * cols / size)

    def matrix_bytes(self, m: Matrix) -> int:
        bits = m.rows * m.cols * self.bits
        if bits % 8:
            raise ValueError(
                f"{self.name}: a {m.role} matrix of {m.rows:,} x {m.cols:,} "
                f"does not fill whole bytes at {self.bits} bits a weight"
            )
        scales = self.scales(m)
        scale_bits = scales * (self.scale_bits + self.zero_bits)
        nested = 32 * math.ceil(scales / self.nested) if self.nested else 0
        total = bits + scale_bits + nested + m.rows * self.index_bits
        return m.count * (math.ceil(total / 8) + self.extra_bytes)

    @property
    def dequant_ops(self) -> int:
        return self.dequant

    @property
    def fp8_compute(self) -> bool:
        return self.fp8

    @property
    def compute(self) -> str:
        """The rate its matrices multiply at where the chip has it: ``fp4``, ``fp8``,
        ``mxfp8`` (``fp8`` with block scales, on a chip with 4-bit arithmetic only:
        ``counting.chips.compute_on``) or ``bf16`` (the 16-bit rate, also where a chip
        lacks the narrower one)."""
        if self.mx:
            return "mxfp8"
        return "fp4" if self.fp4 else "fp8" if self.fp8 else "bf16"

    @property
    def bits_per_weight(self) -> float | None:
        """Bits one weight takes with its share of the scales, for scales over groups or
        runs of a fixed size (the teaching formula); None where it depends on the
        matrix's shape (a scale a row, a block or a matrix)."""
        if self.scale_over not in ("group", "flat") or self.nested:
            return None
        return packed_bits_per_weight(
            self.bits, self.scale_size, self.scale_bits, self.zero_bits
        )

    def describe(self) -> str:
        unit = {
            "none": "no scales",
            "tensor": "one scale a matrix",
            "row": "one scale an output channel",
            "group": f"one scale per group of {self.scale_size} inputs",
            "block": f"one scale per {self.scale_size} x {self.scale_size} block",
            "flat": f"one scale per {self.scale_size} numbers",
        }[self.scale_over]
        zero = f" and a {self.zero_bits}-bit zero point" if self.zero_bits else ""
        nested = (
            f", the scales themselves in {self.scale_bits} bits with a 32-bit "
            f"scale per {self.nested}"
            if self.nested
            else ""
        )
        index = (
            f", a {self.index_bits}-bit group index per input"
            if self.index_bits
            else ""
        )
        extra = (
            f", {self.extra_bytes} bytes of tables a matrix" if self.extra_bytes else ""
        )
        scale = f" ({self.scale_bits}-bit{zero})" if self.scale_over != "none" else ""
        kept = ", ".join(self.kept) or "nothing"
        return (
            f"{self.name}: {self.bits} bits a weight, {unit}{scale}{nested}{index}"
            f"{extra}; kept in the model's format: {kept}, normalisations, biases"
        )


WEIGHT_FORMATS: dict[str, Packed] = {
    "fp8": Packed(
        "fp8 (e4m3)",
        8,
        "tensor",
        0,
        32,
        dequant=1,
        fp8=True,
        scheme="vLLM's fp8: a 32-bit scale a matrix",
    ),
    "int8": Packed(
        "int8",
        8,
        "row",
        0,
        32,
        dequant=1,
        scheme="bitsandbytes LLM.int8: a 32-bit scale an output row",
    ),
    "int4": Packed(
        "int4",
        4,
        "group",
        128,
        16,
        zero_bits=4,
        scheme="AWQ's layout: groups of 128, 16-bit scales, 4-bit zeros",
    ),
    "nf4": Packed(
        "nf4",
        4,
        "flat",
        64,
        32,
        extra_bytes=64,
        scheme="bitsandbytes nf4: a 32-bit scale per 64 numbers, a 16-entry "
        "table a matrix",
    ),
    "fp8-block": Packed(
        "fp8 (e4m3), 128 x 128 blocks",
        8,
        "block",
        128,
        32,
        dequant=1,
        fp8=True,
        scheme="fine-grained fp8 (DeepSeek-V3's): a 32-bit scale per 128 x 128 block, "
        "activations scaled per token and 128 channels",
    ),
    "nvfp4": Packed(
        "nvfp4 (e2m1)",
        4,
        "group",
        16,
        8,
        extra_bytes=4,
        dequant=1,
        fp4=True,
        scheme="NVIDIA's NVFP4: an 8-bit (e4m3) scale per 16 inputs and a 32-bit scale "
        "a matrix, multiplied at the chip's 4-bit rate where it has one",
        pads=True,
    ),
    "mxfp4": Packed(
        "mxfp4 (e2m1)",
        4,
        "group",
        32,
        8,
        dequant=1,
        fp8=True,
        scheme="OCP MX fp4: a power-of-two (e8m0) scale per 32 inputs, multiplied "
        "at the chip's 8-bit rate with the activations in mxfp8 where its tensor "
        "cores apply block scales (4-bit arithmetic), else as weight-only",
        pads=True,
        mx=True,
    ),
    "int4-wo": Packed(
        "int4, weight only",
        4,
        "group",
        32,
        16,
        dequant=1,
        scheme="symmetric int4 with a 16-bit scale per group of 32 inputs "
        "(compressed-tensors pack-quantized), multiplied at the 16-bit rate",
        pads=True,
    ),
}
"""The packed formats ``--weights`` names (bf16 and fp16 cast every number instead):
int8, int4 (AWQ) and nf4 weight-only, fp8 per matrix and in blocks, NVIDIA's nvfp4, the
OCP's mxfp4 and int4 weight-only in groups of 32."""


@dataclass(frozen=True)
class ExpertsApart(WeightFormat):
    """The routed experts' matrices in one format (``experts``) and every other matrix
    in another (``rest``): serving engines often pack the two differently (gpt-oss's
    mxfp4 experts beside 16-bit attention; DeepSeek's fp8 in blocks for experts and one
    scale a matrix elsewhere)."""

    experts: WeightFormat
    rest: WeightFormat

    @property
    def name(self) -> str:
        return f"experts {self.experts.name}, the rest {self.rest.name}"

    def _of(self, role: str) -> WeightFormat:
        return self.experts if role == "experts" else self.rest

    def packs(self, role: str) -> bool:
        return self._of(role).packs(role)

    def matrix_bytes(self, m: Matrix) -> int:
        return self._of(m.role).matrix_bytes(m)

    def part(self, role: str) -> "Packed | None":
        return self._of(role).part(role)

    @property
    def dequant_ops(self) -> int:
        raise ValueError("experts and the rest are packed apart: ask each part")

    @property
    def fp8_compute(self) -> bool:
        raise ValueError("experts and the rest are packed apart: ask each part")

    def describe(self) -> str:
        return f"experts: {self.experts.describe()}; the rest: {self.rest.describe()}"
