"""Summary statistics of routing: load skew, per-step coverage, token-count bins, temporal reuse
and inter-layer dependence.

Pure functions over count arrays and :class:`sieve.workload.trace.RoutingTrace`; they never generate
or read files. Definitions follow shared/reference/models-and-traces.md §C (notation: E experts, k =
top-k, B tokens in a step; s_e = share of expert e in a layer) and the seed's Figure 5 bins.
"""

from __future__ import annotations

import numpy as np

from sieve.errors import ConfigError
from sieve.workload.trace import DECODE, RoutingTrace

__all__ = [
    "BIN_LABELS",
    "bin_counts",
    "iid_coverage",
    "iid_overlap",
    "load_skew",
    "nmi_from_joint",
    "step_stats",
    "temporal_overlap",
    "top1_joint",
]

#: Token-count bins of activated experts (seed Section 3, Figure 5).
BIN_LABELS = ("N=1", "N=2", "3<=N<=4", "N>4")
_BIN_EDGES = np.array([1, 2, 3, 5])  # lower edge of each bin


def iid_coverage(n_experts: int, top_k: int, batch: int | np.ndarray) -> np.ndarray:
    """Expected fraction of experts with >= 1 token when every token picks ``top_k`` of
    ``n_experts`` uniformly: ``1 - (1 - k/E)**B`` (models-and-traces.md §C.2)."""
    return 1.0 - (1.0 - top_k / n_experts) ** np.asarray(batch, dtype=float)


def iid_overlap(n_experts: int, top_k: int) -> float:
    """Expected shared experts of two independent uniform top-k sets: ``k**2 / E`` (§C.4)."""
    return top_k * top_k / n_experts


def load_skew(counts: np.ndarray) -> dict[str, np.ndarray]:
    """Load-skew statistics of count vectors ``(..., E)``, one value per vector.

    Returns:
        ``max_over_mean`` (E * max s_e), ``cv`` (std/mean of s), ``norm_entropy``
        (entropy(s) / ln E) and ``top10_share`` (share of the ceil(E/10) hottest experts).
    """
    c = np.asarray(counts, dtype=float)
    E = c.shape[-1]
    tot = c.sum(axis=-1, keepdims=True)
    if np.any(tot <= 0):
        raise ConfigError("load_skew: a count vector sums to 0")
    s = c / tot
    with np.errstate(divide="ignore", invalid="ignore"):
        ent = -np.where(s > 0, s * np.log(s), 0.0).sum(axis=-1)
    n_top = int(np.ceil(E / 10))
    return {
        "max_over_mean": E * s.max(axis=-1),
        "cv": s.std(axis=-1) / s.mean(axis=-1),
        "norm_entropy": ent / np.log(E),
        "top10_share": np.sort(s, axis=-1)[..., -n_top:].sum(axis=-1),
    }


def bin_counts(counts: np.ndarray) -> np.ndarray:
    """Number of activated experts in each of :data:`BIN_LABELS`: ``(..., E)`` -> ``(..., 4)``."""
    c = np.asarray(counts)
    b = np.searchsorted(_BIN_EDGES, c, side="right") - 1  # -1 for N = 0
    return np.stack([(b == i).sum(axis=-1) for i in range(len(BIN_LABELS))], axis=-1)


def step_stats(trace: RoutingTrace, phase: int | None = DECODE) -> dict[str, np.ndarray]:
    """Per-step, per-layer statistics of a trace.

    Args:
        trace: the trace.
        phase: use only tokens of this phase (default decode); None = all tokens.

    Returns:
        dict of arrays: ``n_tokens (S,)``; ``coverage (S, L)`` fraction of experts with >= 1
        token; ``peak_over_mean (S, L)`` max tokens of an expert / (B k / E); ``bins (S, L, 4)``
        activated experts per bin. Steps without tokens of ``phase`` are dropped.
    """
    E, k = trace.n_experts, trace.top_k
    rows = []
    for s in range(trace.n_steps):
        c = trace.counts(s, phase)
        n = int(c[0].sum()) // k
        if n:
            rows.append((n, c))
    if not rows:
        raise ConfigError("step_stats: no step has tokens of the requested phase")
    n_tok = np.array([r[0] for r in rows])
    counts = np.stack([r[1] for r in rows])
    return {
        "n_tokens": n_tok,
        "coverage": (counts > 0).mean(axis=-1),
        "peak_over_mean": counts.max(axis=-1) / (n_tok[:, None] * k / E),
        "bins": bin_counts(counts),
    }


def _sets_overlap(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise size of the intersection of ``a (n, k)`` and ``b (n, k)`` (distinct ids)."""
    return (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1)


def temporal_overlap(
    trace: RoutingTrace, by: str = "request", max_steps: int | None = None
) -> np.ndarray:
    """Mean number of experts a decode token shares with the same request's previous token.

    Args:
        trace: the trace.
        by: "request" pairs tokens by request id (needs known ids); "slot" pairs row i of
            consecutive decode steps that have the same number of decode rows (for logs
            without request ids whose batch slots are stable, e.g. the vLLM log's first
            ~81 steps).
        max_steps: use only the first ``max_steps`` steps.

    Returns:
        ``(n_layers,)`` mean overlap (0..k); compare with :func:`iid_overlap`.
    """
    if by not in ("request", "slot"):
        raise ConfigError(f"temporal_overlap: by={by!r} (valid: request, slot)")
    S = trace.n_steps if max_steps is None else min(max_steps, trace.n_steps)
    tot, n = np.zeros(trace.n_layers), 0
    prev = None
    for s in range(S):
        sl = trace.step_slice(s)
        dec = np.asarray(trace.phase[sl]) == DECODE
        ids = np.asarray(trace.expert_ids[sl])[dec]
        req = np.asarray(trace.request_ids[sl])[dec]
        if prev is not None and len(ids):
            p_ids, p_req = prev
            if by == "slot":
                if len(p_ids) != len(ids):
                    prev = (ids, req)
                    continue
                a, b = p_ids, ids
            else:
                if (req < 0).any():
                    raise ConfigError("temporal_overlap: request ids unknown; use by='slot'")
                _, ia, ib = np.intersect1d(p_req, req, return_indices=True)
                a, b = p_ids[ia], ids[ib]
            for j in range(trace.n_layers):
                tot[j] += _sets_overlap(a[:, j], b[:, j]).sum()
            n += len(a)
        prev = (ids, req)
    if n == 0:
        raise ConfigError("temporal_overlap: no pair of consecutive decode tokens found")
    return tot / n


def nmi_from_joint(joint: np.ndarray, miller_madow: bool = False) -> float:
    """Normalised mutual information I(X; Y) / H(Y) of a joint count matrix ``[x, y]``
    (models-and-traces.md §C.3: X = top-1 expert at the earlier layer, Y at the later one).

    With ``miller_madow`` the plug-in MI is reduced by its first-order small-sample bias
    ``(K_xy - K_x - K_y + 1) / (2 N)`` (K = occupied cells); use it to compare samples of
    different sizes (a 60 x 60 joint from 4k tokens has a bias of about 0.1 in NMI).
    """
    p = np.asarray(joint, dtype=float)
    n_obs = p.sum()
    p = p / n_obs
    px, py = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nz = p > 0
    mi = (p[nz] * np.log(p[nz] / (px @ py)[nz])).sum()
    if miller_madow:
        mi -= (nz.sum() - (px > 0).sum() - (py > 0).sum() + 1) / (2 * n_obs)
    hy = -(py[py > 0] * np.log(py[py > 0])).sum()
    return float(mi / hy)


def top1_joint(trace: RoutingTrace, layer_a: int, layer_b: int) -> np.ndarray:
    """``(E, E)`` counts of (top-1 expert at trace layer index a, top-1 at b) over all tokens."""
    E = trace.n_experts
    a = np.asarray(trace.expert_ids[:, layer_a, 0], dtype=np.int64)
    b = np.asarray(trace.expert_ids[:, layer_b, 0], dtype=np.int64)
    return np.bincount(a * E + b, minlength=E * E).reshape(E, E)
