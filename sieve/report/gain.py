"""The gain, stated: each run's speedup over GPU-only and over the best other method at the
same point, and a one-line answer per point.

A *point* is every run field but the method (model, system, PIM preset, workload, batch, seed,
options...): runs of one point differ only in their scheduler. For each run of a point:

* ``x_gpu_only``: its throughput per GPU over GPU-only's at that point (empty when GPU-only did
  not run there);
* ``x_best_other``: its throughput over the best other method's at that point (empty when it
  is the only method).

:func:`answers` gives per point the best method, its gain over GPU-only, over the best of the
seed's baselines (NoExp, AllExp, PIMoE: seed §7 "Comparison Methodology") and over every
other method. Computed from result rows only (:mod:`sieve.report` reads tables).
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["GAIN_COLUMNS", "SEED_BASELINES", "add_gains", "answers", "point_key"]

#: The columns :func:`add_gains` adds to every row.
GAIN_COLUMNS = ("x_gpu_only", "x_best_other")
#: The methods the seed evaluates Sieve against (§7).
SEED_BASELINES = ("noexp", "allexp", "pimoe")
#: Row fields that are results or the method itself, not the point's inputs.
_NOT_KEY = {"method", "tpot_ms", "step_ms_p50", "step_ms_min", "step_ms_max",
            "throughput_tok_s_gpu", "interactivity_tok_s_user", "processed_tok_s_gpu",
            "gpu_busy_frac", "hbm_busy_frac", "pim_busy_frac", "link_busy_frac",
            "experts_pim_frac", "tokens_pim_frac", "decisions_skipped_frac", "mean_context",
            "prefill_requests",
            "layers_simulated", "n_layers", *GAIN_COLUMNS}


def point_key(row: dict) -> tuple:
    """The point a run row belongs to: its inputs except the method."""
    return tuple(sorted((k, str(v)) for k, v in row.items() if k not in _NOT_KEY))


def _groups(rows: Sequence[dict]) -> dict[tuple, list[dict]]:
    out: dict[tuple, list[dict]] = {}
    for r in rows:
        out.setdefault(point_key(r), []).append(r)
    return out


def add_gains(rows: Sequence[dict]) -> list[dict]:
    """Copies of the rows with :data:`GAIN_COLUMNS` (None where undefined)."""
    out = []
    groups = _groups(rows)
    for r in rows:
        g = groups[point_key(r)]
        thr = float(r["throughput_tok_s_gpu"])
        base = [float(x["throughput_tok_s_gpu"]) for x in g if x["method"] == "gpu-only"]
        others = [float(x["throughput_tok_s_gpu"]) for x in g if x["method"] != r["method"]]
        out.append({**r,
                    "x_gpu_only": thr / base[0] if base and base[0] > 0 else None,
                    "x_best_other": thr / max(others) if others and max(others) > 0 else None})
    return out


def answers(rows: Sequence[dict]) -> list[str]:
    """One line per point with several methods: the best method (throughput per GPU) and its
    gain over GPU-only, over the best of the seed's baselines and over the next best method."""
    lines = []
    for g in _groups(rows).values():
        if len(g) < 2:
            continue
        g = sorted(g, key=lambda x: -float(x["throughput_tok_s_gpu"]))
        best, nxt = g[0], g[1]
        t = float(best["throughput_tok_s_gpu"])
        by = {x["method"]: float(x["throughput_tok_s_gpu"]) for x in g}
        parts = [f"{best['method']} {t:.0f} tok/s/GPU"]
        if "gpu-only" in by and best["method"] != "gpu-only":
            parts.append(f"{t / by['gpu-only']:.2f}x GPU-only")
        seed = [m for m in SEED_BASELINES if m in by and m != best["method"]]
        if seed:
            m = max(seed, key=by.get)
            parts.append(f"{t / by[m]:.2f}x the best seed baseline ({m})")
        parts.append(f"{t / float(nxt['throughput_tok_s_gpu']):.2f}x the next best "
                     f"({nxt['method']})")
        where = f"{best['model']} {best['system']}"
        if best.get("memory"):
            where += f" ({best['memory']})"
        case = f", {best['workload']}, B={best['batch']}"
        if str(best.get("seed", 0)) not in ("0", "None"):
            case += f", seed {best['seed']}"
        if best.get("overlap") not in (None, "none"):
            case += f", {best['overlap']}"
        if best.get("colocated") in (True, "True", 1, "1"):
            case += " colocated"
        lines.append(f"{where}{case}: best {', '.join(parts)}")
    return lines
