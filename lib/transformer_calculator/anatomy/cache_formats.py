"""Cache formats: how the key-value cache is stored, and what reading it back costs.

A cache format stores each cached vector (one head's key or value for one token, or a
latent) in ``bits`` a number with an optional scale and zero point per vector, plus
fixed scales per layer; reading a packed number back costs ``dequant_ops`` operations,
counted in every step's arithmetic (``formats.py`` re-exports these names).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

__all__ = ["CacheFormat", "CacheAsModel", "CachePacked", "CACHE_AS_MODEL",
           "CACHE_FORMATS"]


class CacheFormat(ABC):
    """The contract of a cache format: bytes of one cached vector, fixed bytes a layer,
    and the arithmetic of reading it back."""

    name: str

    @abstractmethod
    def vector_bytes(self, length: int, bytes_per_number: int) -> int:
        """Bytes of one cached vector of ``length`` numbers."""

    @property
    @abstractmethod
    def layer_bytes(self) -> int:
        """Fixed bytes each attention layer keeps for the format (its scales)."""

    @property
    @abstractmethod
    def dequant_ops(self) -> int:
        """Operations to read one cached number back."""

    @abstractmethod
    def describe(self) -> str:
        """One phrase for the report."""


@dataclass(frozen=True)
class CacheAsModel(CacheFormat):
    """Keys and values in the model's own format."""

    name: str = "as the model"

    def vector_bytes(self, length: int, bytes_per_number: int) -> int:
        return length * bytes_per_number

    @property
    def layer_bytes(self) -> int:
        return 0

    @property
    def dequant_ops(self) -> int:
        return 0

    def describe(self) -> str:
        return "cache in the model's own format"


CACHE_AS_MODEL = CacheAsModel()
"""The cache at the model's bytes a number."""


@dataclass(frozen=True)
class CachePacked(CacheFormat):
    """``bits`` a cached number, a scale of ``scale_bits`` and a zero point of
    ``zero_bits`` per vector, and ``fixed`` bytes of scales a layer."""

    name: str
    bits: int
    scale_bits: int = 0
    zero_bits: int = 0
    fixed: int = 0
    dequant: int = 0

    def vector_bytes(self, length: int, bytes_per_number: int) -> int:
        if length * self.bits % 8:
            raise ValueError(
                f"a {self.name} cache packs {8 // self.bits} numbers a byte: a cached "
                f"vector of {length} numbers does not fill whole bytes"
            )
        return (length * self.bits + self.scale_bits + self.zero_bits) // 8

    @property
    def layer_bytes(self) -> int:
        return self.fixed

    @property
    def dequant_ops(self) -> int:
        return self.dequant

    def describe(self) -> str:
        scale = (
            f", a {self.scale_bits}-bit scale and {self.zero_bits}-bit zero point "
            "per head and token"
            if self.scale_bits
            else ""
        )
        fixed = f", {self.fixed} bytes of scales a layer" if self.fixed else ""
        return f"cache in {self.name}: {self.bits} bits a number{scale}{fixed}"


CACHE_FORMATS: dict[str, CachePacked] = {
    "bf16": CachePacked("bf16", 16),
    "fp16": CachePacked("fp16", 16),
    "fp8": CachePacked("fp8 (e4m3)", 8, fixed=8, dequant=1),
    "int8": CachePacked("int8", 8, scale_bits=16, zero_bits=16, dequant=2),
    "int4": CachePacked("int4", 4, scale_bits=16, zero_bits=16, dequant=2),
}
"""The cache formats ``--kv-dtype`` names: fp8 keeps a 32-bit key scale and value scale
a
layer (as vLLM), int8 and int4 a 16-bit scale and zero point per head and token."""
