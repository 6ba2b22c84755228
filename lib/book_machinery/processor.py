"""How a kernel's processor is held still: the settings every kernel gets, and the
narrowed settings under which the tests re-run the book.

Several layers choose code from the processor: PyTorch's own vector kernels, oneDNN
(matrix products and attention in bfloat16 and float16), MKL (float32 matrix products)
and numpy. They consult each other, so a narrowed run narrows them all to one level
together.
"""

from __future__ import annotations

import platform

__all__ = [
    "PINNED_ENV",
    "ARCH",
    "CAPABILITIES",
    "ONEDNN_ISA",
    "MKL_ISA",
    "narrowed_env",
    "NARROWED_ENV",
]

PINNED_ENV: dict[str, str] = {"PYDEVD_DISABLE_FILE_VALIDATION": "1"}
if platform.machine().lower() in ("x86_64", "amd64"):
    # numpy 2.x dispatches float64 exp/log/power to AVX2 (X86_V3) or AVX-512 (X86_V4)
    # kernels
    # whose last bits differ from the baseline's; a log axis then moves a few pixels.
    PINNED_ENV["NPY_DISABLE_CPU_FEATURES"] = "X86_V3 X86_V4 AVX512_ICL AVX512_SPR"

ARCH = {"amd64": "x86_64", "arm64": "aarch64"}.get(
    platform.machine().lower(), platform.machine().lower()
)
"""This processor's architecture, as Linux names it."""

CAPABILITIES: dict[str, list[str]] = {
    "x86_64": ["default", "avx2", "avx512"],
    "aarch64": ["default", "sve256"],
}
"""PyTorch's vector-kernel levels (``ATEN_CPU_CAPABILITY``) on each architecture,
narrowest first; a processor supports a prefix of its list."""

ONEDNN_ISA: dict[str, dict[str, str]] = {
    "x86_64": {"default": "SSE41", "avx2": "AVX2", "avx512": "AVX512_CORE"},
    "aarch64": {"default": "ASIMD", "sve256": "SVE_256"},
}
"""oneDNN's highest instruction set (``ONEDNN_MAX_CPU_ISA``) that matches each PyTorch
level. oneDNN picks its own code from the processor, and PyTorch asks it which paths
exist: its bfloat16 attention packs matrices for AMX when oneDNN says AMX is there, then
calls a packing kernel that PyTorch's narrowed build lacks. Held to the same level, the
two agree."""

MKL_ISA: dict[str, str] = {"default": "SSE4_2", "avx2": "AVX2", "avx512": "AVX512"}
"""MKL's highest instruction set (``MKL_ENABLE_INSTRUCTIONS``) for each PyTorch level
(x86)."""


def narrowed_env(capability: str = "default") -> dict[str, str]:
    """Settings that make this processor run as one with only ``capability``'s vector
    instructions would: every layer that chooses code from the processor (PyTorch's own
    kernels, oneDNN, MKL, numpy) held to that level together, on one thread."""
    levels = CAPABILITIES.get(ARCH, ["default"])
    if capability not in levels:
        raise ValueError(
            f"capability must be one of {levels} on {ARCH}, got {capability!r}"
        )
    env = {
        **PINNED_ENV,
        "ATEN_CPU_CAPABILITY": capability,
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
    }
    if capability in ONEDNN_ISA.get(ARCH, {}):
        env["ONEDNN_MAX_CPU_ISA"] = ONEDNN_ISA[ARCH][capability]
    if ARCH == "x86_64":
        env["MKL_ENABLE_INSTRUCTIONS"] = MKL_ISA[capability]
    return env


NARROWED_ENV: dict[str, str] = {
    **narrowed_env("default"),
    # the measured page, whose outputs are not compared, runs once
    "BOOK_TIMING_REPEATS": "1",
}
"""How nbval's kernels run the book: as the narrowest processor would, one thread, to
show that no stored output depends on the processor's vector instructions or on thread
timing. Only the kernels that execute notebooks get it; the tests' own process runs
PyTorch as any user's does (nothing it computes is stored)."""
