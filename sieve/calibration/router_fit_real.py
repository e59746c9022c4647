"""Fits of the router's global parameters to real traces: ``reuse_rho`` to the Qwen1.5-MoE
vLLM log, ``layer_kappa`` to the allenai OLMoE/Mixtral transition matrices, plus the statistics
of the real-vs-synthetic Qwen1.5 comparison.

Part of the calibration (:mod:`sieve.calibration.router_fit` runs it); never imported by the
simulator. The real files are read from ``SHARED`` (``$SIEVE_SHARED``) at run time and never copied.
"""

from __future__ import annotations

import glob
from pathlib import Path

import numpy as np
from scipy import optimize

from sieve.calibration.paths import SHARED
from sieve.workload.router import RouterParams, RouterShape, SyntheticRouter
from sieve.workload.stats import (
    iid_coverage,
    load_skew,
    nmi_from_joint,
    step_stats,
    temporal_overlap,
    top1_joint,
)

__all__ = [
    "QWEN15_FIT",
    "QWEN15_SHAPE",
    "allenai_nmi",
    "fit_kappa",
    "fit_qwen15",
    "qwen15_real",
    "qwen15_stats",
    "qwen15_synthetic",
    "synthetic_nmi",
]

QWEN15_SHAPE = RouterShape("qwen1.5-moe-a2.7b", 60, 4, (0, 8, 12, 18, 23))  # PROVENANCE.md
#: Qwen1.5-MoE popularity fitted by :func:`fit_qwen15` (2026-11-29 run; used only for the
#: real-vs-synthetic comparison and the rho fit, not a preset: the model is not in the zoo).
QWEN15_FIT = {"alpha": 122.8, "drift_sigma": 0.5514, "reuse_rho": 0.1026}


# ----------------------------------------------------------------------------------------------
# inter-layer kappa (allenai transition matrices) and temporal rho (Qwen1.5 vLLM log)
# ----------------------------------------------------------------------------------------------


def allenai_nmi(model_dir: str, shared: Path = SHARED) -> list[dict]:
    """Per domain: measured per-layer shares (layers 0/7/15), top-k and Miller-Madow NMI of
    the top-1 transitions 0->7 and 7->15."""
    from sieve.workload.importers import read_allenai_counts, read_allenai_crosslayer

    root = shared / "traces/allenai_olmoe_routing_analysis" / model_dir
    out = []
    for f in sorted(glob.glob(str(root / "expert_counts_crosslayer_top1/*.json"))):
        tr = read_allenai_crosslayer(f)
        cnt = read_allenai_counts(root / "expert_counts" / Path(f).name)
        out.append(
            {
                "domain": Path(f).stem,
                "shares": cnt.shares(),
                "top_k": cnt.meta.top_k,
                "pairs": tr.pairs,
                "nmi": [nmi_from_joint(m, True) for m in tr.matrices],
            }
        )
    if not out:
        raise FileNotFoundError(f"allenai cross-layer files not found under {root}")
    return out


def synthetic_nmi(dom: dict, kappa: float, n_tokens: int = 65536, seed: int = 3) -> list[float]:
    """NMI of adjacent logged layers of a one-step synthetic batch with the domain's shares."""
    E = dom["shares"].shape[1]
    shape = RouterShape("allenai", E, dom["top_k"], (0, 7, 15))
    p = RouterParams(alpha=1.0, drift_sigma=0.0, drift_phi=0.0, reuse_rho=0.0, layer_kappa=kappa)
    tr = SyntheticRouter(shape, p, seed, popularity=dom["shares"]).generate(n_tokens, 1)
    return [nmi_from_joint(top1_joint(tr, i, i + 1), True) for i in range(2)]


def fit_kappa(model_dir: str, shared: Path = SHARED) -> tuple[float, list[tuple[str, list, list]]]:
    """kappa such that the mean synthetic NMI over domains and pairs equals the measured mean."""
    doms = allenai_nmi(model_dir, shared)
    target = float(np.mean([d["nmi"] for d in doms]))

    def gap(kappa):
        return float(np.mean([synthetic_nmi(d, kappa) for d in doms])) - target

    kappa = optimize.brentq(gap, 0.0, 0.95, xtol=2e-3)
    return kappa, [(d["domain"], d["nmi"], synthetic_nmi(d, kappa)) for d in doms]


def qwen15_real(shared: Path = SHARED):
    """The real Qwen1.5-MoE trace (warm-up passes dropped per its PROVENANCE.md)."""
    from sieve.workload.importers import read_vllm_router_log

    files = sorted(
        glob.glob(str(shared / "traces/qwen15_moe_vllm_moe_logger_gsm8k/moe_layer*.jsonl"))
    )
    if not files:
        raise FileNotFoundError(f"Qwen1.5 vLLM logs not found under {shared}")
    return read_vllm_router_log(files, n_experts=60, warmup_passes=3)


def qwen15_stats(trace) -> dict[str, np.ndarray]:
    """Per-layer decode statistics used for the Qwen1.5 comparison (decode tokens only)."""
    st = step_stats(trace)
    full = st["n_tokens"] == st["n_tokens"].max()
    E, k, B = trace.n_experts, trace.top_k, int(st["n_tokens"].max())
    agg = load_skew(trace.to_counts(phase=1).counts)
    bins = st["bins"][full].sum(axis=0)
    by = "slot" if (trace.request_ids < 0).any() else "request"
    return {
        "coverage_over_iid": st["coverage"][full].mean(axis=0) / iid_coverage(E, k, B),
        "step_peak_over_mean": np.median(st["peak_over_mean"][full], axis=0),
        "N=1": bins[:, 0] / bins.sum(axis=1),
        "N<=4": bins[:, :3].sum(axis=1) / bins.sum(axis=1),
        "agg_max_over_mean": agg["max_over_mean"],
        "agg_norm_entropy": agg["norm_entropy"],
        "temporal_overlap": temporal_overlap(trace, by=by, max_steps=int(full.sum()) + 1),
        "nmi_adjacent_logged": np.array(
            [nmi_from_joint(top1_joint(trace, i, i + 1), True) for i in range(trace.n_layers - 1)]
        ),
    }


def qwen15_synthetic(real, params: RouterParams, seed: int):
    """Synthetic decode trace with the real log's per-step decode token counts (B <= 25)."""
    dec = [
        int((np.asarray(real.phase[real.step_slice(s)]) == 1).sum()) for s in range(real.n_steps)
    ]
    dec = [n for n in dec if n]
    tr = SyntheticRouter(QWEN15_SHAPE, params, seed).generate(max(dec), len(dec))
    rows = np.concatenate(
        [np.arange(tr.step_offsets[s], tr.step_offsets[s] + n) for s, n in enumerate(dec)]
    )
    from sieve.workload.trace import RoutingTrace

    return RoutingTrace(
        tr.expert_ids[rows],
        np.concatenate([[0], np.cumsum(dec)]),
        tr.request_ids[rows],
        tr.phase[rows],
        tr.meta,
    )


def fit_qwen15(shared: Path = SHARED, n_seeds: int = 8, phi: float = 0.9):
    """(alpha, drift_sigma) on coverage/iid and aggregate max/mean, then rho on the overlap."""
    real = qwen15_real(shared)
    rs = {k: float(np.mean(v)) for k, v in qwen15_stats(real).items()}

    def syn(alpha, sigma, rho):
        p = RouterParams(
            alpha=alpha, drift_sigma=sigma, drift_phi=phi, reuse_rho=rho, layer_kappa=0.0
        )
        vals = [qwen15_stats(qwen15_synthetic(real, p, 100 + i)) for i in range(n_seeds)]
        return {k: float(np.mean([v[k] for v in vals])) for k in vals[0]}

    def loss(x):
        s = syn(10.0 ** x[0], abs(x[1]), 0.0)
        return ((s["coverage_over_iid"] - rs["coverage_over_iid"]) / 0.01) ** 2 + (
            (s["agg_max_over_mean"] - rs["agg_max_over_mean"]) / 0.05
        ) ** 2

    grid = [(la, s) for la in np.linspace(0.0, 2.5, 8) for s in np.linspace(0.0, 1.25, 6)]
    best = min(grid, key=loss)
    res = optimize.minimize(
        loss,
        np.array(best),
        method="Nelder-Mead",
        options={"xatol": 0.01, "fatol": 0.05, "maxiter": 40},
    )
    alpha, sigma = 10.0 ** res.x[0], abs(res.x[1])
    rho = optimize.brentq(
        lambda r: syn(alpha, sigma, r)["temporal_overlap"] - rs["temporal_overlap"],
        0.0,
        0.98,
        xtol=2e-3,
    )
    return {"alpha": alpha, "drift_sigma": sigma, "reuse_rho": rho, "loss": float(res.fun)}
