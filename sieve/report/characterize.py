"""Characterization of MoE routing per model and batch size: act-ratio (seed Figure 3),
token-count bins of activated experts (seed Figure 5) and per-step expert load skew.

This module computes tidy tables from synthetic (or given) traces and writes the outputs of ``sieve
characterize``. It must not draw (figures come from :mod:`sieve.report.plots`, which only reads the
table). Table columns: ``model, batch_size, statistic, value, p05, p95, n_steps, seed``; one row per
(model, batch size, statistic). Definitions (docs/traces.md, "Characterization"):

* ``act_ratio``: activated / total parameters of one step, non-MoE and shared experts included
  (:meth:`sieve.model.moe.MoeModel.act_ratio`); ``value`` = median over steps, p05/p95 over steps.
* ``N=1``, ``N=2``, ``3<=N<=4``, ``N>4``: share of activated (layer, expert) pairs whose token
  count N falls in the bin, pooled over steps and layers (``value``; the four sum to 1);
  p05/p95 are over steps.
* ``coverage``: fraction of routed experts with >= 1 token (mean; p05/p95 over steps).
* ``peak_over_mean``: tokens of the busiest expert / (B k / E), median over steps and layers.
"""

from __future__ import annotations

import dataclasses
import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from sieve.errors import ConfigError, lookup
from sieve.limits import MAX_BATCH
from sieve.validate import check_memory, check_sequence
from sieve.workload.stats import BIN_LABELS, bin_counts

__all__ = [
    "COLUMNS",
    "CharacterizeConfig",
    "characterize",
    "characterize_trace",
    "read_table_csv",
    "run_characterize",
    "table_to_csv",
]

COLUMNS = ("model", "batch_size", "statistic", "value", "p05", "p95", "n_steps", "seed")


@dataclass(frozen=True)
class CharacterizeConfig:
    """Inputs of a characterization run (all of it goes to config.json)."""

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    n_steps: int = 16
    seed: int = 0
    router_fit: str = "joint"

    def __post_init__(self) -> None:
        from sieve.model.moe import MODELS
        from sieve.workload.router import PRESET_FITS

        lookup(PRESET_FITS, self.router_fit, "--router-fit")
        # a string is refused, not iterated letter by letter (models="qwen3-30b-a3b" -> 'q')
        models = check_sequence("--models", "the model list", self.models)
        if not models:
            raise ConfigError("--models: empty list (known: " + ", ".join(sorted(MODELS)) + ")")
        names = tuple(lookup(MODELS, m, "--models: model") and m.strip().lower() for m in models)
        object.__setattr__(self, "models", names)
        batches = check_sequence("--batch", "the batch list", self.batch_sizes)
        if not batches:
            raise ConfigError("--batch: empty list (give positive integers, e.g. 1,4,16,64)")
        for b in batches:
            if (
                not isinstance(b, (int, np.integer))
                or isinstance(b, bool)
                or not 1 <= b <= MAX_BATCH
            ):
                raise ConfigError(f"--batch: {b!r} is not an integer in 1..{MAX_BATCH}")
        object.__setattr__(self, "batch_sizes", tuple(int(b) for b in batches))
        for name, v, lo in (("--steps", self.n_steps, 1), ("--seed", self.seed, 0)):
            if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < lo:
                raise ConfigError(f"{name}: {v!r} is not an integer >= {lo}")
            object.__setattr__(self, "n_steps" if name == "--steps" else "seed", int(v))

    def to_json(self) -> dict:
        d = dataclasses.asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in d.items()}


def _q(x: np.ndarray) -> tuple[float, float]:
    return float(np.percentile(x, 5)), float(np.percentile(x, 95))


def characterize_trace(trace, model=None) -> list[dict]:
    """Rows (without model/batch/seed columns) for one trace's decode-or-all tokens.

    Args:
        trace: a :class:`sieve.workload.trace.RoutingTrace`; all its tokens are counted.
        model: a :class:`sieve.model.moe.MoeModel` for ``act_ratio`` (needs the trace to cover all
            MoE layers); None skips act-ratio.
    """
    counts = trace.all_counts()  # (S, L, E)
    S = counts.shape[0]
    rows = []
    if model is not None:
        if counts.shape[1] != model.n_moe_layers:
            raise ConfigError(
                f"act_ratio: trace has {counts.shape[1]} layers, model "
                f"{model.name!r} has {model.n_moe_layers} MoE layers"
            )
        act = np.array([model.act_ratio((c > 0).sum(axis=1)) for c in counts])
        rows.append(("act_ratio", float(np.median(act)), *_q(act)))
    bins = bin_counts(counts)  # (S, L, 4)
    per_step = bins.sum(axis=1) / np.maximum(bins.sum(axis=(1, 2)), 1)[:, None]
    pooled = bins.sum(axis=(0, 1)) / bins.sum()
    for i, label in enumerate(BIN_LABELS):
        rows.append((label, float(pooled[i]), *_q(per_step[:, i])))
    cov = (counts > 0).mean(axis=2)
    rows.append(("coverage", float(cov.mean()), *_q(cov.mean(axis=1))))
    n_tok = counts.sum(axis=2) / trace.top_k  # (S, L)
    peak = counts.max(axis=2) / (n_tok * trace.top_k / trace.n_experts)
    rows.append(("peak_over_mean", float(np.median(peak)), *_q(peak.ravel())))
    return [{"statistic": s, "value": v, "p05": a, "p95": b, "n_steps": S} for s, v, a, b in rows]


def characterize(config: CharacterizeConfig) -> list[dict]:
    """Tidy rows for every model and batch size of ``config`` from the synthetic router."""
    from sieve.model.moe import get_model
    from sieve.workload.router import SyntheticRouter

    routers = {name: SyntheticRouter(name, seed=config.seed, fit=config.router_fit)
               for name in config.models}
    b_max = max(config.batch_sizes)
    for name, router in routers.items():  # refuse a run that cannot fit before computing any
        sh = router.shape
        need = (router.memory_bytes(b_max, config.n_steps)
                + 16.0 * config.n_steps * sh.n_layers * sh.n_experts)  # counts + bins
        check_memory(f"characterize {name!r} at batch {b_max} x {config.n_steps} steps", need,
                     "lower --batch or --steps")
    rows = []
    for name, router in routers.items():
        model = get_model(name)
        for b in config.batch_sizes:
            trace = router.generate(int(b), config.n_steps)
            for r in characterize_trace(trace, model):
                rows.append({"model": name, "batch_size": int(b), **r, "seed": config.seed})
    return rows


def table_to_csv(rows: Sequence[dict]) -> str:
    """CSV text of tidy rows (columns :data:`COLUMNS`; floats with 6 significant digits)."""
    out = io.StringIO()
    out.write(",".join(COLUMNS) + "\n")
    for r in rows:
        out.write(
            ",".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c]) for c in COLUMNS)
            + "\n"
        )
    return out.getvalue()


def read_table_csv(path: str | Path) -> list[dict]:
    """Read a table written by :func:`table_to_csv` back into rows."""
    import csv

    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for c in ("value", "p05", "p95"):
            r[c] = float(r[c])
        for c in ("batch_size", "n_steps", "seed"):
            r[c] = int(r[c])
    return rows


def run_characterize(config: CharacterizeConfig, out_dir: str | Path, *,
                     flag: str = "--out") -> list[Path]:
    """Compute the table, render the Figure 3/5 plots, then write everything to ``out_dir``.

    The output folder is checked first (before any work), then everything is produced in
    memory and written as one run folder (:func:`sieve.outputs.write_run`): a failure leaves
    no partial file and an earlier run's folder untouched. Returns the written paths.
    """
    import json

    from sieve.outputs import check_out_dir, write_run
    from sieve.report import plots

    check_out_dir(out_dir, flag=flag)
    rows = characterize(config)
    payload: dict[str, bytes] = {
        "characterize.csv": table_to_csv(rows).encode(),
        "config.json": (
            json.dumps({"command": "characterize", **config.to_json()}, indent=2, sort_keys=True)
            + "\n"
        ).encode(),
    }
    for stem, make in (
        ("fig3_act_ratio", plots.plot_act_ratio),
        ("fig5_token_bins", plots.plot_token_bins),
    ):
        fig = make(rows)
        try:
            for ext in ("png", "pdf"):
                payload[f"{stem}.{ext}"] = plots.render(fig, ext)
        finally:
            plots.close(fig)
    return write_run(out_dir, payload, command="characterize", flag=flag)
