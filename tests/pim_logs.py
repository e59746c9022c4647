"""Comparing PIM command logs channel by channel (shared by the PIM device and symmetry tests)."""

from __future__ import annotations

import numpy as np

FIELDS = ("tick", "cmd", "pc", "sid", "bg", "bank", "row", "col")


def per_channel(log: np.ndarray) -> dict[int, np.ndarray]:
    """Each channel's commands in issue order (seq), without the seq numbers themselves:
    channels are independent, so only their own order is defined."""
    out = {}
    for c in np.unique(log["ch"]):
        lg = log[log["ch"] == c]
        lg = lg[np.argsort(lg["seq"], kind="stable")]
        out[int(c)] = np.stack([lg[f].astype(np.int64) for f in FIELDS])
    return out


def same_logs(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two logs hold the same commands in the same order on every channel."""
    pa, pb = per_channel(a), per_channel(b)
    return pa.keys() == pb.keys() and all(np.array_equal(pa[c], pb[c]) for c in pa)
