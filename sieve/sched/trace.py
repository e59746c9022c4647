"""Scheduling a routing trace alone, without the step simulator.

For every step of a trace, every MoE layer and every GPU of an expert-parallel system, build
the :class:`~sieve.sched.partition.LayerLoad` the GPU's scheduler sees and run a method on it:

* experts are split over the GPUs in equal contiguous blocks (expert parallelism); requests
  are spread round-robin (data-parallel attention: request ``r`` on GPU ``r mod n_gpus``);
* ``counts``: tokens each local expert receives from every GPU (the global view after the
  routing-map AllGather, seed §6.1);
* ``pim_busy_ns``: the estimated decode attention of the GPU's own requests on its PIM;
* ``comm_ns``: the estimated EP dispatch + combine of the layer (exact copy matrix);
* ``gpu_fixed``: the layer's other GPU work (:func:`layer_gpu_ops`: its small kernels, mixer
  projections, router and shared experts, as the step simulator prices them).

Estimates come from the cost model handed in (default: the seed's roofline). With
``observe=`` a second cost model plays the hardware: after each layer, every GPU's EMA table is
fed the time that model gives each PIM-side expert alone (e.g.
:class:`sieve.pim.cost.EngineCostModel`: the engine's time), so the tables evolve as in a run
without simulating the steps. Decisions use only the tables' state before the layer: a
scheduler never sees the future (tests check it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.cost import (
    CostModel,
    EpExchange,
    ExpertShape,
    GpuOp,
    PimAttention,
    PimExperts,
)
from sieve.hw.estimates import RooflineCostModel
from sieve.hw.layer_ops import expert_shape, fixed_gpu_ops
from sieve.hw.system import SystemConfig, get_system
from sieve.sched.estimator import Estimator
from sieve.sched.methods import get_method
from sieve.sched.partition import LayerLoad, Partition
from sieve.workload.trace import DECODE, RoutingTrace, contiguous_placement

__all__ = [
    "ScheduledLayer",
    "schedule_synthetic",
    "ep_copies",
    "expert_shape",
    "layer_gpu_ops",
    "layer_loads",
    "schedule_trace",
    "token_gpus",
]


def layer_gpu_ops(model, layer: int, n_tokens: int) -> tuple[GpuOp, ...]:
    """The GPU work of one MoE layer other than routed experts and decode attention, for
    ``n_tokens`` tokens on one GPU: :func:`sieve.hw.layer_ops.fixed_gpu_ops`, the same
    operations the step simulator shows its schedulers (BF16 KV cache, the released expert
    format)."""
    return fixed_gpu_ops(model, layer, n_tokens)


def token_gpus(trace: RoutingTrace, step: int, n_gpus: int) -> np.ndarray:
    """GPU of every token of a step under data-parallel attention (request ``r`` on GPU
    ``r mod n_gpus``; tokens of unknown requests round-robin by position)."""
    sl = trace.step_slice(step)
    req = np.asarray(trace.request_ids[sl])
    pos = np.arange(req.size)
    return np.where(req >= 0, req, pos) % n_gpus


def ep_copies(ids: np.ndarray, tok_gpu: np.ndarray, expert_gpu: np.ndarray, n_gpus: int
              ) -> np.ndarray:
    """``(n_layers, n, n)`` (token, expert) copies GPU ``i`` sends to GPU ``j`` per layer."""
    t, n_layers, k = ids.shape
    dest = expert_gpu[ids]  # (t, L, k)
    src = np.broadcast_to(tok_gpu[:, None, None], dest.shape)
    lay = np.broadcast_to(np.arange(n_layers)[None, :, None], dest.shape)
    flat = (lay * n_gpus + src) * n_gpus + dest
    out = np.bincount(flat.ravel(), minlength=n_layers * n_gpus * n_gpus)
    return out.reshape(n_layers, n_gpus, n_gpus)


def layer_loads(trace: RoutingTrace, step: int, model, system: SystemConfig,
                cost: CostModel, context_lens: Sequence[int] | np.ndarray | None = None
                ) -> list[list[LayerLoad]]:
    """``loads[l][g]``: what GPU ``g``'s scheduler sees for MoE layer ``l`` of ``step``.

    Args:
        context_lens: cached tokens of every request of the step, indexed by the request's
            position in the step's batch (default 2048 each, ⚠ an assumption for standalone
            use; the step simulator passes the workload's lengths).
    """
    n = system.n_gpus
    if model.n_experts % n:
        raise ConfigError(f"EP: {model.n_experts} experts do not split evenly over {n} GPUs")
    if trace.n_experts != model.n_experts or trace.top_k != model.top_k:
        raise ConfigError(f"trace ({trace.n_experts} experts, top-{trace.top_k}) does not "
                          f"match model {model.name!r} ({model.n_experts}, top-{model.top_k})")
    sl = trace.step_slice(step)
    ids = np.asarray(trace.expert_ids[sl], dtype=np.int64)
    tok_gpu = token_gpus(trace, step, n)
    expert_gpu = contiguous_placement(model.n_experts, n)
    copies = ep_copies(ids, tok_gpu, expert_gpu, n)
    counts = trace.counts(step)
    per = model.n_experts // n
    shape = expert_shape(model)
    decode = np.asarray(trace.phase[sl]) == DECODE
    n_tok = np.bincount(tok_gpu, minlength=n)
    if context_lens is None:
        ctx = np.full(ids.shape[0], 2048, dtype=np.int64)
    else:
        ctx = np.asarray(context_lens, dtype=np.int64)
        if ctx.shape != (ids.shape[0],):
            raise ConfigError(f"context_lens: need one length per token of step {step} "
                              f"({ids.shape[0]}), got shape {ctx.shape}")
    out = []
    for li, layer in enumerate(trace.meta.layer_ids):
        comm = cost.comm_ns([EpExchange("dispatch", copies[li], model.hidden_size),
                             EpExchange("combine", copies[li], model.hidden_size)])
        row = []
        for g in range(n):
            mine = decode & (tok_gpu == g)
            busy = 0.0
            if system.has_pim and mine.any():
                busy = cost.pim_ns(PimAttention(model, int(layer), ctx[mine]))
            row.append(LayerLoad(counts[li, g * per:(g + 1) * per], shape, pim_busy_ns=busy,
                                 comm_ns=comm,
                                 gpu_fixed=layer_gpu_ops(model, int(layer), int(n_tok[g]))))
        out.append(row)
    return out


@dataclass(frozen=True)
class ScheduledLayer:
    """One decision: where it was made and the partition."""

    step: int
    layer: int  # model layer id
    gpu: int
    partition: Partition


def schedule_trace(trace: RoutingTrace, model, system: str | SystemConfig, method: str, *,
                   cost: CostModel | None = None, observe: CostModel | None = None,
                   steps: Sequence[int] | None = None, context_lens=None,
                   pim_order: str = "expert") -> list[ScheduledLayer]:
    """Run ``method`` on every (step, MoE layer, GPU) of a trace (module docstring).

    Args:
        trace: a routing trace of ``model``.
        model: a :class:`sieve.model.MoeModel`.
        system: the system (its GPU count sets the expert parallelism).
        method: a name of :data:`sieve.sched.methods.SCHEDULERS`.
        cost: the estimator's cost model (default the roofline of ``system``).
        observe: the model whose per-expert PIM times are fed back into the EMA tables after
            each layer (None: tables keep their roofline fallback).
        steps: steps to schedule (default all).
        context_lens: per-token cached lengths, as :func:`layer_loads` takes (same for every
            step; default 2048).
        pim_order: order of the GEMVs on PIM the observations describe.
    """
    system = get_system(system)
    meth = get_method(method)
    if not system.has_pim and meth.name != "gpu-only":
        raise ConfigError(f"schedule: system {system.name!r} has no PIM units (memory "
                          f"{system.memory.name!r}): there is no GPU/PIM split for "
                          f"{meth.name!r} to make; give a PIM memory preset (sieve specs "
                          "lists them) or the method gpu-only")
    cost = cost or RooflineCostModel(system)
    shape = expert_shape(model)
    ests = [Estimator(cost, shape, pim=meth.pim_source or "ema", pim_order=pim_order)
            for _ in range(system.n_gpus)]
    out = []
    for step in (range(trace.n_steps) if steps is None else steps):
        loads = layer_loads(trace, step, model, system, cost, context_lens)
        for li, layer in enumerate(trace.meta.layer_ids):
            for g, load in enumerate(loads[li]):
                part = meth(load, ests[g])
                out.append(ScheduledLayer(step, int(layer), g, part))
                if observe is not None and part.on_pim.any():
                    mapping, pcs = part.mapping, part.pcs_per_expert
                    ids = part.pim_experts
                    times = [observe.pim_ns(_one_expert(part, e, shape)) for e in ids]
                    ests[g].observe(part.counts[ids], times, mapping, pcs)
    return out


def _one_expert(part: Partition, e: int, shape: ExpertShape) -> PimExperts:
    """The PIM operation of expert ``e`` of a partition, alone on its PCs."""
    if part.mapping == "tp":
        return PimExperts([int(part.counts[e])], shape, order=part.pim_order)
    tokens = np.zeros(part.counts.size, dtype=np.int64)
    tokens[e] = part.counts[e]
    return PimExperts(tokens, shape, mapping="ep", order=part.pim_order,
                      pcs_per_expert=part.pcs_per_expert, placement=part.placement)


def schedule_synthetic(model, system: str | SystemConfig, method: str, batch: int, *,
                       seed: int = 0, context_len: int = 2048, warmup: int = 0,
                       observe: CostModel | None = None) -> list[ScheduledLayer]:
    """One decode step of a synthetic batch, scheduled (what ``sieve schedule`` prints).

    ``batch`` requests, all in decode with ``context_len`` cached tokens, routed by the model's
    calibrated synthetic router (seed ``seed``). With ``warmup`` > 0, that many earlier steps
    are scheduled first and ``observe`` feeds the EMA tables (the step printed is the last).
    """
    from sieve.workload.router import RouterShape, SyntheticRouter, resolve_router

    system = get_system(system)
    for name, v, lo in (("batch", batch, 1), ("context_len", context_len, 1),
                        ("warmup", warmup, 0), ("seed", seed, 0)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ConfigError(f"schedule: {name} must be an integer >= {lo}, got {v!r}")
    # the model's calibrated preset when it has one (a config.json model gets the default)
    shape = RouterShape(model.name, model.n_experts, model.top_k, tuple(model.moe_layer_ids))
    _, params, _ = resolve_router(model.name)
    router = SyntheticRouter(shape, params, seed=int(seed))
    trace = router.generate(int(batch), int(warmup) + 1)
    ctx = np.full(int(batch), int(context_len), dtype=np.int64)
    out = schedule_trace(trace, model, system, method, observe=observe if warmup else None,
                         context_lens=ctx)
    return [s for s in out if s.step == warmup]
