"""A run: several simulated steps of one (model, system, method, batch, workload, seed) point,
summarised as one tidy row (throughput per GPU, interactivity, TPOT, where the time went).

Every step draws its batch afresh from the workload profile (a steady-state continuous batch,
:func:`sieve.workload.batch.decode_batch`, or a colocated prefill+decode batch) and routes it
with the model's calibrated synthetic router (:func:`sieve.workload.batch.step_trace`), each
step from its own seed stream ``[seed, step]``; the devices (refresh and row state), the
schedulers' cost tables and the clock carry from step to step. The first ``warmup`` steps let
the tables learn and are not measured.

Metrics (decode-only batches, every request producing one token per step):

* ``tpot_ms`` = mean step time; ``interactivity_tok_s_user`` = 1 / TPOT;
* ``throughput_tok_s_gpu`` = tokens produced per step / mean step time / GPUs (a colocated
  batch also produces the first token of each prefill request);
* ``processed_tok_s_gpu`` counts prefill tokens too;
* ``*_busy_frac``: each lane's busy time over the steps' simulated span, mean over GPUs.

The batch size is the whole system's (its concurrency), as in the seed's Figure 9 and the
InferenceMAX measurements (serving-anchors.md §1).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.system import SystemConfig, get_system
from sieve.limits import MAX_BATCH, MAX_STEPS
from sieve.model.moe import get_model
from sieve.stages import stage
from sieve.system.step import (
    StepBatch,
    StepOptions,
    StepResult,
    SystemState,
    _sampled_layers,
    simulate_step,
)
from sieve.validate import check_name, check_number
from sieve.workload.batch import colocated_batch, decode_batch, step_trace
from sieve.workload.router import RouterShape, SyntheticRouter, resolve_router

__all__ = ["RUN_COLUMNS", "RunConfig", "RunResult", "simulate_run", "step_input_key"]

#: Columns of a run row, in table order.
RUN_COLUMNS = (
    "model", "system", "n_gpus", "gpu", "memory", "method", "batch", "workload", "colocated",
    "n_prefill", "seed",
    "parallel", "microbatches", "overlap", "router", "router_source", "pim_order", "estimator",
    "steps", "warmup",
    "layers_simulated", "n_layers", "tpot_ms", "step_ms_p50", "step_ms_min", "step_ms_max",
    "throughput_tok_s_gpu", "interactivity_tok_s_user", "processed_tok_s_gpu",
    "gpu_busy_frac", "hbm_busy_frac", "pim_busy_frac", "link_busy_frac",
    "experts_pim_frac", "tokens_pim_frac", "mean_context", "prefill_requests",
)


@dataclass(frozen=True)
class RunConfig:
    """One point of an evaluation (JSON round trip through :meth:`to_dict`/:meth:`from_dict`).

    Attributes:
        model: model preset name or config.json path.
        system: system preset name or system file.
        system_overrides: ``((key, value), ...)`` applied to the system
            (:meth:`sieve.hw.system.SystemConfig.override`).
        method: scheduler name.
        batch: requests in the whole system.
        workload: length profile (:mod:`sieve.workload.profiles`).
        colocated: prefill+decode batches (seed §7.3) instead of decode-only.
        n_prefill: prefill requests of a colocated batch (None: the seed's rule, drawn).
        steps, warmup: measured steps, and steps run before them.
        seed: every random choice of the run derives from it.
        trace: a routing trace file (``.npz``, :mod:`sieve.workload.trace`) to route the steps
            with instead of the synthetic router: step ``s`` is the trace's step ``s mod
            n_steps``, its requests and phases are the trace's (``batch`` is then only a label;
            the row reports the mean requests per step), decode contexts are drawn from
            ``workload``. Its experts and top-k must be the model's.
        router: whose synthetic-router fit routes the steps (a model with a fit,
            ``sieve.workload.router.ROUTER_PRESETS``); None: the model's own, or for a model
            without one the default fit (``DEFAULT_ROUTER``). The row's ``router`` and
            ``router_source`` columns say which was used.
        Other fields: :class:`sieve.system.step.StepOptions`.
    """

    model: str
    system: str
    method: str = "sieve"
    batch: int = 16
    workload: str = "hh-rlhf"
    colocated: bool = False
    n_prefill: int | None = None
    steps: int = 2
    warmup: int = 1
    seed: int = 0
    # the step options' defaults are StepOptions' own (one place to change them)
    parallel: str = StepOptions.parallel
    microbatches: int = StepOptions.microbatches
    pim_order: str = StepOptions.pim_order
    estimator: str = StepOptions.estimator
    scheduler_ns: float | None = StepOptions.scheduler_ns
    expert_dtype: str | None = StepOptions.expert_dtype
    kv_dtype: str = StepOptions.kv_dtype
    layers: int | None = StepOptions.layers
    overlap: str = StepOptions.overlap
    system_overrides: tuple[tuple[str, Any], ...] = ()
    trace: str | None = None
    router: str | None = None

    def __post_init__(self):
        for n in ("model", "system", "method", "workload"):  # names (resolved when run)
            check_name("run", n, getattr(self, n))
        for n, lo, hi in (("batch", 1, MAX_BATCH), ("steps", 1, MAX_STEPS),
                          ("warmup", 0, MAX_STEPS), ("seed", 0, None)):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
                raise ConfigError(f"run: {n} must be an integer >= {lo}, got {v!r}")
            if hi is not None and v > hi:
                raise ConfigError(f"run: {n} {v} exceeds {hi} (sieve.limits.MAX_"
                                  f"{'BATCH' if n == 'batch' else 'STEPS'})")
        if not isinstance(self.colocated, bool):
            raise ConfigError(f"run: colocated must be true or false, got {self.colocated!r}")
        ov = self.system_overrides
        if isinstance(ov, Mapping):
            ov = tuple(sorted(ov.items()))
        object.__setattr__(self, "system_overrides", tuple(tuple(x) for x in ov))
        if self.router is not None:
            resolve_router("", self.router)  # one line listing the fits if it is not one
            if self.trace is not None:
                raise ConfigError(f"run: router {self.router!r} with trace {self.trace!r}: "
                                  "a trace routes the steps itself; give one of them")
        opts = self.options()  # validates the step options
        object.__setattr__(self, "microbatches", opts.microbatches)  # "tbo" implies 2

    def options(self) -> StepOptions:
        return StepOptions(method=self.method, parallel=self.parallel,
                           microbatches=self.microbatches, pim_order=self.pim_order,
                           estimator=self.estimator, scheduler_ns=self.scheduler_ns,
                           expert_dtype=self.expert_dtype, kv_dtype=self.kv_dtype,
                           layers=self.layers, overlap=self.overlap)

    def resolve_system(self) -> SystemConfig:
        return get_system(self.system, dict(self.system_overrides) or None)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["system_overrides"] = dict(self.system_overrides)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RunConfig:
        names = {f.name for f in dataclasses.fields(cls)}
        bad = sorted(set(d) - names)
        if bad:
            raise ConfigError(f"run config: unknown field(s) {', '.join(bad)} (valid: "
                              f"{', '.join(sorted(names))})")
        kw = dict(d)
        if isinstance(kw.get("system_overrides"), Mapping):
            kw["system_overrides"] = tuple(sorted(kw["system_overrides"].items()))
        return cls(**kw)


@dataclass(frozen=True, eq=False)
class RunResult:
    """A run's summary row and, on request, its steps."""

    config: RunConfig
    row: dict[str, Any]
    system: SystemConfig = field(repr=False)
    steps: list[StepResult] = field(default_factory=list, repr=False)

    def config_dict(self) -> dict[str, Any]:
        """The run's inputs as recorded next to its results (system resolved in full)."""
        return {"run": self.config.to_dict(), "system": self.system.to_dict()}


def _router(model, cfg: RunConfig) -> SyntheticRouter:
    shape = RouterShape(model.name, model.n_experts, model.top_k, tuple(model.moe_layer_ids))
    _, params, _ = resolve_router(model.name, cfg.router)
    return SyntheticRouter(shape, params, seed=cfg.seed)


def _batch_of(cfg: RunConfig, step: int):
    seed = int(np.random.SeedSequence([cfg.seed, step]).generate_state(1)[0])
    if cfg.colocated:
        return colocated_batch(cfg.workload, cfg.batch, seed, n_prefill=cfg.n_prefill)
    return decode_batch(cfg.workload, cfg.batch, seed)


def _trace_step(cfg: RunConfig, trace, model, s: int):
    """(StepBatch, decode requests, prefill requests, tokens) of step ``s`` of an imported
    trace: rows grouped by request in order of first appearance, contexts from the profile."""
    from sieve.workload.trace import DECODE, PREFILL

    step = s % trace.n_steps
    sl = trace.step_slice(step)
    ids = np.asarray(trace.expert_ids[sl], dtype=np.int64)
    req = np.asarray(trace.request_ids[sl])
    ph = np.asarray(trace.phase[sl])
    if ids.shape[0] == 0:
        raise ConfigError(f"run: trace step {step} has no token")
    # unknown requests (-1) count one token each
    key = np.where(req >= 0, req, -1 - np.arange(req.size))
    uniq, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    r_of_tok = rank[inv]
    rows = np.argsort(r_of_tok, kind="stable")
    tokens = np.bincount(r_of_tok, minlength=uniq.size)
    is_pre = np.bincount(r_of_tok, weights=(ph == PREFILL), minlength=uniq.size) > 0
    phase = np.where(is_pre, PREFILL, DECODE)
    seed = int(np.random.SeedSequence([cfg.seed, s]).generate_state(1)[0])
    ctx = np.zeros(uniq.size, dtype=np.int64)
    n_dec = int((~is_pre).sum())
    if n_dec:
        ctx[~is_pre] = decode_batch(cfg.workload, n_dec, seed).context_tokens
    sb = StepBatch(phase, ctx, tokens, ids[rows], trace.meta.layer_ids)
    return sb, n_dec, int(is_pre.sum()), float(tokens.sum())


def step_input_key(cfg: RunConfig, step: int) -> tuple:
    """What a synthetic step's batch and routing depend on (not the system or the method;
    ``layers`` picks the MoE layers routed):
    the key of :func:`simulate_run`'s ``inputs`` memo."""
    return (cfg.model, cfg.workload, cfg.batch, cfg.colocated, cfg.n_prefill, cfg.seed,
            cfg.layers, cfg.router, int(step))


def simulate_run(cfg: RunConfig, *, keep_steps: bool = False,
                 inputs: MutableMapping | None = None,
                 idle_before_ns: float = 0.0) -> RunResult:
    """Simulate ``cfg.warmup + cfg.steps`` steps and summarise the measured ones.

    ``inputs``: a memo of synthetic steps' batches and routing, shared by runs that differ only
    in system, method or options (keyed by :func:`step_input_key`; e.g. an LRU dict of a worker
    process): a step found there is not drawn and routed again. The values are the same
    either way (deterministic in the key), so results do not depend on it.

    ``idle_before_ns``: idle time on the device clock before the first measured step (a probe,
    not part of the configuration): the measured steps start that much later, so the PIM
    devices' refreshes, which run on the device clock, meet their programs at another phase
    (benchmarks/refresh_phase.py; docs/validation.md, *Refresh phase*)."""
    if not isinstance(cfg, RunConfig):
        raise ConfigError("simulate_run: expected a RunConfig")
    idle_before_ns = check_number("simulate_run", "idle_before_ns", idle_before_ns)
    model = get_model(cfg.model)
    system = cfg.resolve_system()
    opts = cfg.options()
    if opts.parallel == "ep" and model.n_experts % system.n_gpus:
        raise ConfigError(f"run: EP needs the {model.n_experts} experts of {model.name} to split "
                          f"evenly over {system.n_gpus} GPUs (use parallel='tp' or another "
                          "system)")
    state = SystemState(model, system, opts)
    imported = None
    if cfg.trace is not None:
        from sieve.workload.trace import load_trace

        imported = load_trace(cfg.trace)
        if imported.n_experts != model.n_experts or imported.top_k != model.top_k:
            raise ConfigError(f"run: trace {cfg.trace!r} routes {imported.n_experts} experts "
                              f"top-{imported.top_k}; model {model.name} has "
                              f"{model.n_experts} top-{model.top_k}")
    else:
        router = _router(model, cfg)
        # route only the MoE layers the steps simulate (the same routes as routing all)
        moe = set(model.moe_layer_ids)
        routed = None if opts.layers is None else (
            [x for x in _sampled_layers(model, opts.layers, neighbours=opts.microbatches > 1)
             if x in moe] or None)
    measured: list[StepResult] = []
    contexts, prefills, processed, requests = [], [], [], []
    for s in range(cfg.warmup + cfg.steps):
        with stage("trace"):
            if imported is not None:
                sb, n_dec, n_pre, n_tok = _trace_step(cfg, imported, model, s)
            else:
                key = step_input_key(cfg, s) if inputs is not None else None
                got = inputs.get(key) if key is not None else None
                if got is None:
                    batch = _batch_of(cfg, s)
                    trace = step_trace(batch, router, step=s, layer_ids=routed)
                    sb = StepBatch(batch.phase, batch.context_tokens, batch.step_tokens,
                                   trace.expert_ids, trace.meta.layer_ids)
                    got = (sb, batch.n_decode, batch.n_prefill, float(batch.n_tokens))
                    if key is not None:
                        inputs[key] = got
                sb, n_dec, n_pre, n_tok = got
        if s == cfg.warmup:
            state.now_ns += idle_before_ns
        res = simulate_step(state, sb)
        if s >= cfg.warmup:
            measured.append(res)
            dec = sb.phase == 1
            contexts.append(float(sb.context[dec].mean()) if n_dec else 0.0)
            prefills.append(n_pre)
            processed.append(n_tok)
            requests.append(sb.n_requests)
    row = _summary(cfg, model, system, measured, contexts, prefills, processed)
    if imported is not None:
        row["batch"] = float(np.mean(requests))
        row["workload"] = f"{cfg.workload} (routing: {cfg.trace})"
    return RunResult(cfg, row, system, measured if keep_steps else [])


def _summary(cfg, model, system, steps, contexts, prefills, processed) -> dict[str, Any]:
    t = np.array([r.step_ns for r in steps])
    made = np.array([r.decode_tokens for r in steps], dtype=float)
    processed = np.array(processed)
    n = system.n_gpus
    mean_t = float(t.mean())
    busy = {k: [] for k in ("gpu", "hbm", "pim", "link")}
    for r in steps:
        for kind in busy:
            lanes = [v for lane, v in r.busy_ns.items() if lane.rstrip("0123456789") == kind]
            busy[kind].append(float(np.mean(lanes)) / r.makespan_ns if lanes else 0.0)
    parts = [p for r in steps for p in r.partitions]
    ex_pim = sum(p["experts_pim"] for p in parts)
    ex_all = sum(p["experts_active"] for p in parts)
    tok_pim = sum(p["tokens_pim"] for p in parts)
    tok_all = sum(p["tokens_pim"] + p["tokens_gpu"] for p in parts)
    skipped = sum(bool(p.get("decision_skipped")) for p in parts)
    overrides = {f"system.{k}": v for k, v in cfg.system_overrides}  # one column per key
    fit, _, how = resolve_router(model.name, cfg.router)
    if cfg.trace is not None:
        fit, how = "trace", "the trace file"
    return {
        "model": model.name, "system": system.name, "n_gpus": n, "gpu": system.gpu.name,
        "memory": system.memory.name,  # the resolved DRAM/PIM preset of the stacks
        "method": cfg.method,
        "batch": cfg.batch, "workload": cfg.workload, "colocated": cfg.colocated,
        "n_prefill": cfg.n_prefill,
        "seed": cfg.seed, "parallel": cfg.parallel, "microbatches": cfg.microbatches,
        "overlap": cfg.overlap, "router": fit, "router_source": how,
        "pim_order": cfg.pim_order, "estimator": cfg.estimator, "steps": cfg.steps,
        "warmup": cfg.warmup, "layers_simulated": steps[0].layers_simulated,
        "n_layers": steps[0].n_layers, "tpot_ms": mean_t / 1e6,
        "step_ms_p50": float(np.median(t)) / 1e6, "step_ms_min": float(t.min()) / 1e6,
        "step_ms_max": float(t.max()) / 1e6,
        "throughput_tok_s_gpu": float(made.mean()) / mean_t * 1e9 / n,
        "interactivity_tok_s_user": 1e9 / mean_t,
        "processed_tok_s_gpu": float(processed.mean()) / mean_t * 1e9 / n,
        **{f"{k}_busy_frac": float(np.mean(v)) for k, v in busy.items()},
        "experts_pim_frac": ex_pim / ex_all if ex_all else 0.0,
        "tokens_pim_frac": tok_pim / tok_all if tok_all else 0.0,
        "decisions_skipped_frac": skipped / len(parts) if parts else 0.0,
        "mean_context": float(np.mean(contexts)), "prefill_requests": float(np.mean(prefills)),
        **overrides,
    }


def config_json(results: list[RunResult]) -> str:
    """config.json text for a set of runs (inputs, resolved systems, no duplicates)."""
    systems = {}
    for r in results:
        systems.setdefault(r.system.name, r.system.to_dict())
    return json.dumps({"runs": [r.config.to_dict() for r in results], "systems": systems},
                      indent=2, sort_keys=True, default=str) + "\n"
