"""The fit's cases as arrays: each case's roofs and counts with the index of the
values that price them, so that one vector of values prices every case at once."""

from __future__ import annotations

import numpy as np

from ..estimate.terms import Roof

__all__ = ["Vectors", "key_index", "keys_index"]


class Vectors:
    """The cases' terms as arrays, so that one set of values prices every case at
    once: each roof's arithmetic and reading with the index of its two values (the
    larger counts, or both if ``summed``), each count with the index of its value, by
    the case they belong to."""

    def __init__(self, groups: list[list], keys: dict[str, int], engines: list[str],
                 summed: bool = False):
        roofs, counts, self.summed = [], [], summed
        for i, (terms, engine) in enumerate(zip(groups, engines)):
            for t in terms:
                if isinstance(t, Roof):
                    roofs.append((i, t.arith_s, t.read_s,
                                  key_index(keys, t.arith_key),
                                  key_index(keys, t.read_key)))
                else:
                    k = t.key.replace("{engine}", engine)
                    counts.append((i, t.value, key_index(keys, k)))
        self.n = len(groups)
        r = np.array(roofs, dtype=float).reshape(-1, 5)
        c = np.array(counts, dtype=float).reshape(-1, 3)
        self.r_case, self.r_a, self.r_b = r[:, 0].astype(int), r[:, 1], r[:, 2]
        self.r_ka, self.r_kb = r[:, 3].astype(int), r[:, 4].astype(int)
        self.c_case, self.c_v = c[:, 0].astype(int), c[:, 1]
        self.c_k = c[:, 2].astype(int)

    def seconds(self, theta: np.ndarray) -> np.ndarray:
        """Each case's seconds at the values ``theta``."""
        a, b = self.r_a * theta[self.r_ka], self.r_b * theta[self.r_kb]
        roof = a + b if self.summed else np.maximum(a, b)
        out = np.bincount(self.r_case, roof, minlength=self.n)
        counted = self.c_v * theta[self.c_k]
        return out + np.bincount(self.c_case, counted, minlength=self.n)


def keys_index(keys: dict[str, int], pattern: str, engines: list[str]) -> np.ndarray:
    """The index of ``pattern`` (an f-string of ``e``) for each case's engine."""
    return np.array([key_index(keys, pattern.replace("{e}", e)) for e in engines],
                    dtype=int)


def key_index(keys: dict[str, int], key: str) -> int:
    """The index of ``key`` among ``keys`` (a new one at the end)."""
    if key not in keys:
        keys[key] = len(keys)
    return keys[key]
