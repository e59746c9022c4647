"""One decode (or colocated prefill+decode) step of a multi-GPU MoE system, simulated.

Every layer of the step is the dependency graph of seed §6.1 / Figure 8, per GPU and per
micro-batch, list-scheduled (:mod:`sieve.system.dag`) on four lanes per GPU: ``link``,
``gpu`` (compute), ``hbm`` (off-chip bandwidth) and ``pim``::

    QKV proj -> attention (PIM) -> O proj -> router -> AllGather(routing maps) -> metadata
      -> dispatch (link)  ||  scheduler (its decision time)           [EP only: link tasks]
      -> GPU path: weight load (hbm) -> grouped GEMM (gpu), after dispatch
      || PIM path: GWRITE + GEMV + readback (pim), after dispatch
      -> combine (link, after both) -> permute + weighted sum (gpu)
    shared experts: weight load right after the router, GEMM on the GPU's own tokens

Durations: GPU kernels from the calibrated GPU model (:mod:`sieve.hw.gpu`), collectives from
the interconnect model (:mod:`sieve.hw.comm`), both through
:class:`sieve.pim.cost.EngineCostModel`; PIM programs from the cycle-accurate engine, run when
the list scheduler starts them on each GPU's :class:`~sieve.dram.pim_device.PimDevice`, which keeps
its refresh and row state through the step and across steps. A GPU kernel that streams weights
(or a KV cache) is split into a load task on ``hbm`` of ``weight bytes / (eta_bw x HBM
bandwidth)`` followed by the rest of its calibrated time on ``gpu``, so the two add up to the
calibrated kernel time when nothing else runs, and weight loads can overlap other compute (the
seed's separate ``HBM-PIM -> GPU`` load, which "can begin early" for shared experts).

The scheduler of each GPU decides a layer's split when its task starts, from the counts of that
layer (after the AllGather), the observed attention time of that layer type on that GPU (EMA,
the roofline before the first observation), the layer's estimated dispatch + combine, and the
layer's other GPU work; its estimator's PIM table has seen exactly the PIM expert runs that had
ended by then (a scheduler never sees the future).

Layer sampling (``StepOptions.layers = K``): only about ``K`` layers are simulated, back to
back: the first and the last, and every layer class (token mixer; routed MoE or dense FFN) in
its share, at least one each (:func:`_sampled_layers`; among the layers the routing covers, for
an imported trace of some layers only). With two micro-batches a layer of one runs beside the
next or previous layer of the other, so the sample also keeps each sampled layer's neighbours'
classes (gpt-oss: sliding, full, sliding, ...). Each sampled layer stands for the model's
layers like it (:func:`_scaled_layers_ns`): in the sequential mode its time is scaled by its
class's layers over its samples; with two micro-batches, pipelined over the layers, the span to
the last sampled layer (which holds the pipeline fill and drain once) is kept and every layer
not simulated is added at the mean time of the sampled layers between the first and the last
with its class and neighbours' classes. The LM head is added unscaled. ``layers=None`` simulates
every layer (exact). Results record which.

Tensor parallelism (``parallel="tp"``): every GPU runs all tokens with ``1/n`` of the heads and of
every expert (:func:`sieve.hw.layer_ops.tp_shard`) and all-reduces after attention and after the
MoE; the GPUs are identical, so one is simulated and its link lane holds the all-reduces.

Times are nanoseconds; this module returns numbers (:class:`StepResult`), it draws nothing.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sieve.dram.pim_device import PimDevice
from sieve.errors import ConfigError
from sieve.hw.cost import (
    PIM_ORDERS,
    Collective,
    CostModel,
    EpExchange,
    GpuOp,
    GroupedExperts,
    MemoryStream,
    PimAttention,
)
from sieve.hw.estimates import RooflineCostModel
from sieve.hw.layer_ops import (
    expert_shape,
    fixed_gpu_ops,
    gdn_op,
    gpu_decode_attention,
    layer_kernels,
    lm_head_op,
    mixer_gemms,
    prefill_attention,
    router_op,
    sampler_op,
    shared_op,
    tp_shard,
    weight_bytes,
)
from sieve.hw.presets import DTYPES
from sieve.hw.system import SystemConfig
from sieve.limits import MAX_LAYERS
from sieve.pim.attention import run_attention
from sieve.pim.cost import EngineCostModel
from sieve.pim.ffn import FfnShape, run_moe_ep, run_moe_tp
from sieve.sched.amortize import DecisionMemo
from sieve.sched.cp import prefix_split, scan_order, split_cost
from sieve.sched.estimator import Estimator
from sieve.sched.greedy import split_estimates
from sieve.sched.methods import get_method
from sieve.sched.partition import LayerLoad, LayerTiming, Partition
from sieve.stages import count, enabled, stage
from sieve.system.dag import Schedule, Task
from sieve.validate import check_number
from sieve.workload.trace import DECODE, PREFILL

__all__ = ["DEFAULT_SCHEDULER_NS", "OVERLAP_MODES", "StepBatch", "StepOptions", "StepResult",
           "SystemState", "simulate_step"]

#: Decision time charged per layer and GPU to the methods that decide at run time (sieve,
#: pimoe, duplex and the Sieve ablations): the seed reports ~20 us for the Sieve scheduler on a
#: B200 GPU for a DeepSeek-R1 layer (§5 "Overhead of the Sieve Scheduler"), i.e. for its 256
#: experts; its work is "a single sort and a linear scan", so we scale it linearly with the
#: activated experts a decision examines (⚠ our reading: one point, no other source). Every
#: dynamic method is charged the same; static ones (`Method.static`: noexp, allexp, gpu-only)
#: nothing.
DEFAULT_SCHEDULER_NS = 20_000.0
DEFAULT_SCHEDULER_EXPERTS = 256
#: Bytes per routing-map entry in the AllGather: an int32 expert id and an fp32 gate weight
#: per (token, expert) (⚠ our assumption; the seed does not give the format).
ROUTE_ENTRY_BYTES = 8
#: The schedulers' GPU/link estimators (StepOptions.estimator).
ESTIMATORS = ("achievable", "roofline", "precise")
#: Execution modes (StepOptions.overlap): "none", or "tbo" (two-batch overlap).
OVERLAP_MODES = ("none", "tbo")
#: How a decision's look ahead (two-batch overlap) guesses the split of the other micro-batch's
#: decision on the same GPU when the look reaches it: "threshold" (every expert with at least as
#: many tokens as this split's fewest-token GPU expert on the GPU) and "count" (as many of its
#: most popular experts on the GPU as this split has). That decision will take the split its own
#: look rates best against the same watched tasks, so the rating is the lower of the looks under
#: the two guesses (docs/schedulers.md, "The other micro-batch's answer").
STAND_INS = ("threshold", "count")
#: ...unless the two micro-batches on the GPU are unlike: where one holds more than OWN_RATIO times
#: the other's token-expert pairs (a colocated batch whose prefill went to one micro-batch: 100-130x
#: at the paper's drawn colocated points, at most 1.5x between two decode or two prefill-holding
#: micro-batches), the look guesses the other's answer from that micro-batch's own last decision
#: on this GPU ("own": every expert with at least as many tokens as the fewest-token expert that
#: decision put on the GPU goes there), one look. ⚠ our choice of 4 (any value from 2 to 100
#: splits the paper's points the same way; docs/schedulers.md, "An unlike micro-batch's answer").
#: sieve-cp's static ties and all-GPU skips (skip_gpu) hold only where the two are not unlike.
OWN_RATIO = 4.0
#: EMA weight of observed attention times (the same choice as the expert table,
#: sieve.sched.estimator.DEFAULT_ALPHA).
_ATTN_ALPHA = 0.25


def _unlike_sizes(a: float, b: float) -> bool:
    """Whether one of two micro-batches' sizes (tokens or token-expert pairs) is more than
    :data:`OWN_RATIO` times the other's (an empty one counts as 1)."""
    return max(a, b) > OWN_RATIO * max(min(a, b), 1.0)


@dataclass(frozen=True)
class StepOptions:
    """How the system runs a step (the same for every method of a comparison).

    Attributes:
        method: scheduler name (:data:`sieve.sched.methods.SCHEDULERS`).
        parallel: "ep" (expert parallelism over GPUs, data-parallel attention) or "tp".
        microbatches: 1, or 2 for two-way micro-batch interleaving (seed Figure 6a).
        overlap: "none" (each micro-batch's phases as its graph orders them), or "tbo":
            two-batch overlap as SGLang/DeepSeek run decode (two micro-batches, so one's
            attention and communication run beside the other's experts), with a GPU op's
            weights loaded once for both micro-batches where they fit in the GPU's L2 (the
            second micro-batch's kernel finds them on chip; :data:`OVERLAP_MODES`,
            docs/system.md). Implies ``microbatches=2``.
        pim_order: order of the GEMVs on PIM (docs/schedulers.md: "layer", one GPU step per
            program).
        estimator: the schedulers' GPU/link estimates: "achievable" (the seed's closed-form
            roofline at the GPU's calibrated achievable rates; default), "roofline" (at spec
            peaks) or "precise" (the calibrated models, kernel by kernel).
        scheduler_ns: decision time of a dynamic method per layer and GPU (None: the seed's
            20 us per 256 activated experts, :data:`DEFAULT_SCHEDULER_NS`). A method with a
            start split (``sieve-cp``) skips the decisions that did not pay last time and pays
            none for them (:mod:`sieve.sched.amortize`).
        expert_dtype: dtype of the routed and shared experts' weights (None: the system's).
        kv_dtype: KV-cache element type ("bf16", "fp8").
        layers: simulate every layer (None) or a sample of about K, each standing for its
            layer class (module doc, :func:`_sampled_layers`, :func:`_scaled_layers_ns`).
    """

    method: str = "sieve"
    parallel: str = "ep"
    microbatches: int = 1
    pim_order: str = "layer"
    estimator: str = "achievable"
    scheduler_ns: float | None = None
    expert_dtype: str | None = None
    kv_dtype: str = "bf16"
    layers: int | None = None
    overlap: str = "none"

    def __post_init__(self):
        get_method(self.method)
        if self.overlap not in OVERLAP_MODES:
            raise ConfigError(f"step: overlap {self.overlap!r} unknown (known: "
                              f"{', '.join(OVERLAP_MODES)})")
        if self.overlap == "tbo":
            if self.microbatches not in (1, 2):
                raise ConfigError(f"step: overlap 'tbo' runs two micro-batches, got "
                                  f"microbatches={self.microbatches!r}")
            object.__setattr__(self, "microbatches", 2)
        if self.parallel not in ("ep", "tp"):
            raise ConfigError(f"step: parallel {self.parallel!r} unknown (known: ep, tp)")
        if isinstance(self.microbatches, bool) or self.microbatches not in (1, 2):
            raise ConfigError(f"step: microbatches must be 1 or 2, got {self.microbatches!r}")
        if self.estimator not in ESTIMATORS:
            raise ConfigError(f"step: estimator {self.estimator!r} unknown (known: "
                              f"{', '.join(sorted(ESTIMATORS))})")
        if self.kv_dtype not in ("bf16", "fp16", "fp8"):
            raise ConfigError(f"step: kv_dtype {self.kv_dtype!r} unknown (known: bf16, fp16, "
                              "fp8)")
        if self.layers is not None and (isinstance(self.layers, bool) or not isinstance(
                self.layers, int) or not 1 <= self.layers <= MAX_LAYERS):
            raise ConfigError(f"step: layers must be None (all) or an integer in "
                              f"1..{MAX_LAYERS} (sieve.limits.MAX_LAYERS), got {self.layers!r}")
        if self.scheduler_ns is not None:
            check_number("step", "scheduler_ns", self.scheduler_ns, lo=0.0)
        # checked here, before any run starts (a bad value used to fail inside a worker)
        if self.pim_order not in PIM_ORDERS:
            raise ConfigError(f"step: pim_order {self.pim_order!r} unknown (known: "
                              f"{', '.join(PIM_ORDERS)})")
        if self.expert_dtype not in (None, "released", *DTYPES):
            raise ConfigError(f"step: expert_dtype {self.expert_dtype!r} unknown (known: "
                              f"released, {', '.join(DTYPES)})")

    def decision_ns(self, n_active: int) -> float:
        """Decision time for a layer with ``n_active`` activated local experts (ns):
        ``scheduler_ns`` if set, else the seed's 20 us scaled by ``n_active / 256``; 0 for the
        static methods."""
        if get_method(self.method).static:
            return 0.0
        if self.scheduler_ns is not None:
            return float(self.scheduler_ns)
        return DEFAULT_SCHEDULER_NS * n_active / DEFAULT_SCHEDULER_EXPERTS


@dataclass(frozen=True, eq=False)
class StepBatch:
    """The requests of one step and their routing.

    Attributes:
        phase: per request, :data:`~sieve.workload.trace.DECODE` or ``PREFILL``.
        context: per request, tokens already in its KV cache before the step.
        tokens: per request, tokens it processes in the step (1 for decode, the prompt for
            prefill).
        expert_ids: ``(n_tokens, n_trace_layers, top_k)`` routing of the step's tokens, in
            request order (request 0's tokens first).
        layer_ids: the model layer of every trace layer.
    """

    phase: np.ndarray
    context: np.ndarray
    tokens: np.ndarray
    expert_ids: np.ndarray
    layer_ids: tuple[int, ...]

    def __post_init__(self):
        for n in ("phase", "context", "tokens"):
            object.__setattr__(self, n, np.asarray(getattr(self, n), dtype=np.int64))
        n = self.phase.size
        if n == 0 or self.context.shape != (n,) or self.tokens.shape != (n,):
            raise ConfigError("step batch: phase, context and tokens need one entry per "
                              "request (at least one request)")
        if (self.tokens < 1).any() or (self.context < 0).any():
            raise ConfigError("step batch: tokens must be >= 1 and context >= 0 per request")
        if not np.isin(self.phase, (PREFILL, DECODE)).all():
            raise ConfigError("step batch: phase must be PREFILL (0) or DECODE (1)")
        ids = np.asarray(self.expert_ids)
        if ids.ndim != 3 or ids.shape[0] != int(self.tokens.sum()) or ids.shape[1] != len(
                self.layer_ids):
            raise ConfigError(f"step batch: expert_ids must be (tokens={int(self.tokens.sum())}"
                              f", layers={len(self.layer_ids)}, top_k), got {ids.shape}")
        object.__setattr__(self, "expert_ids", ids.astype(np.int64))
        object.__setattr__(self, "layer_ids", tuple(int(x) for x in self.layer_ids))

    @property
    def n_requests(self) -> int:
        return int(self.phase.size)

    @property
    def token_request(self) -> np.ndarray:
        return np.repeat(np.arange(self.n_requests), self.tokens)


#: How a GPU's PIM units are left between the programs of a step: "closed" = every PC
#: precharges its banks when its stream ends and refreshes idle time on schedule, as a real
#: HBM-PIM kernel does when it leaves PIM mode (Samsung PIMSimulator's kernels end with the
#: HAB_PIM -> HAB -> SB switch, which precharges all banks: shared/reference/
#: pim-simulators.md, "PIMSimulator"). It also keeps the channels of a GPU equivalent after an
#: uneven attention program, so TP expert programs simulate one channel per class
#: (docs/performance.md, "Symmetric runs"; PIM times move by -0.06 % to +0.13 % against
#: "open").
PIM_IDLE = "closed"


class SystemState:
    """What carries across steps: every GPU's PIM device (refresh and row state), every GPU's
    scheduler estimator (EMA tables), attention observations and decision skips
    (:mod:`sieve.sched.amortize`), and the clock."""

    def __init__(self, model, system: SystemConfig, options: StepOptions):
        self.model = model
        self.system = system
        self.options = options
        self.precise = EngineCostModel(system)
        n_sim = 1 if options.parallel == "tp" else system.n_gpus
        self.view = tp_shard(model, system.n_gpus) if options.parallel == "tp" else model
        self.shape = expert_shape(self.view)
        est_cost: CostModel = (
            self.precise if options.estimator == "precise" else
            RooflineCostModel(system, achievable=options.estimator == "achievable"))
        meth = get_method(options.method)
        self.estimators = [Estimator(est_cost, self.shape, pim=meth.pim_source or "ema",
                                     pim_order=options.pim_order) for _ in range(n_sim)]
        self.devices = ([PimDevice(system.memory, idle=PIM_IDLE) for _ in range(n_sim)]
                        if system.has_pim
                        else [None] * n_sim)
        self.attn_seen: list[dict[str, float]] = [{} for _ in range(n_sim)]
        # two-batch overlap: per (GPU, micro-batch), the fewest tokens of an expert its latest
        # decision put on the GPU (inf: none), for the other micro-batch's look (OWN_RATIO)
        self.last_thr: dict[tuple[int, int], float] = {}
        # a method that skips decisions that do not pay: each GPU's per-layer skip state
        pool: dict = {}  # (gate "pooled": shared by every GPU's memo)
        self.memos = ([DecisionMemo(gate=meth.gate, pool=pool) for _ in range(n_sim)]
                      if meth.start is not None else None)
        self._pending: list[list] = [[] for _ in range(n_sim)]
        self._seq = 0
        self.now_ns = 0.0
        self.steps = 0

    # observations become visible to a GPU's scheduler when they have happened
    def _push(self, g: int, at_ns: float, kind: str, payload) -> None:
        heapq.heappush(self._pending[g], (at_ns, self._seq, kind, payload))
        self._seq += 1

    def _flush(self, g: int, until_ns: float) -> None:
        q = self._pending[g]
        while q and q[0][0] <= until_ns:
            _, _, kind, payload = heapq.heappop(q)
            if kind == "experts":
                counts, times, mapping, pcs, paid = payload
                self.estimators[g].observe(counts, times, mapping, pcs, fixed_ns=paid)
            else:
                lt, t = payload
                old = self.attn_seen[g].get(lt)
                self.attn_seen[g][lt] = t if old is None else old + _ATTN_ALPHA * (t - old)


@dataclass(frozen=True, eq=False)
class StepResult:
    """One simulated step (all times ns, absolute device times in ``tasks``).

    Attributes:
        step_ns: the step's time (scaled when layers are sampled).
        makespan_ns: the simulated span (start of the step to its last task).
        layers_ns: the simulated span up to the end of the last simulated layer.
        layers_simulated, n_layers: layers simulated / in the model.
        start_ns: device time the step started at.
        busy_ns: ``{lane: busy ns}`` (lanes ``gpu0``, ``hbm0``, ``pim0``, ``link0``, ...).
        critical_path: the chain of tasks that set the makespan, as dicts.
        tasks: every task as a dict (name, lane kind, gpu, layer, microbatch, start, end).
        partitions: one dict per (layer, micro-batch, GPU) decision.
        pim_channels: per PIM program on GPU 0: start, end and per-PC busy ns.
        decode_tokens, prefill_tokens: tokens the step produces / prefills.
    """

    step_ns: float
    makespan_ns: float
    layers_ns: float
    layers_simulated: int
    n_layers: int
    start_ns: float
    busy_ns: dict[str, float]
    critical_path: list[dict]
    tasks: list[dict] = field(repr=False)
    partitions: list[dict] = field(repr=False)
    pim_channels: list[dict] = field(repr=False)
    decode_tokens: int = 0
    prefill_tokens: int = 0


#: Layers ``sieve run`` samples by default, one micro-batch / two (pipelined over the layers).
#: Measured against every layer (docs/validation.md, "Layer sampling against every layer"):
#: 4 layers are within 2 % in the sequential mode; with two micro-batches 4 layers were up to
#: 9 % off (one sampled layer of a class between the first and the last), 8 within 2.1 % at
#: the points first measured but up to 3.9 % in sieve-cp's ratio to the best other method over
#: the 62 two-batch-overlap points of --paper run on every layer for every method (rms 1.28 %),
#: 16 within 1.48 % there (rms 0.54 %) for 1.9x the CPU time (2026-12-07, validation.md,
#: *Sixteen sampled layers under two-batch overlap*).
SAMPLED_LAYERS = (4, 16)


def sampled_layers_default(microbatches: int, overlap: str) -> int:
    """How many layers ``sieve run`` samples when not told (:data:`SAMPLED_LAYERS`)."""
    return SAMPLED_LAYERS[1] if overlap == "tbo" or microbatches > 1 else SAMPLED_LAYERS[0]


def _gpu_threshold(counts: np.ndarray, on_pim: np.ndarray) -> float:
    """The fewest tokens of an expert a split puts on the GPU (inf: none there); the look's
    threshold guess and "own" guess at the other micro-batch's answer both read it."""
    on_gpu = counts[(counts > 0) & ~on_pim]
    return float(on_gpu.min()) if on_gpu.size else np.inf


def _layer_class(model, i: int) -> tuple[str, bool]:
    """What a layer costs like: its token mixer and whether its FFN is a routed MoE."""
    return model.layer_types[i], i in model.moe_layer_ids


def _layer_context(model, i: int) -> tuple:
    """A layer's class and its neighbours' (None past either end): what a layer of one
    micro-batch costs like when it shares the GPU and the HBM with the other's."""
    n = model.n_layers
    return (_layer_class(model, i - 1) if i > 0 else None, _layer_class(model, i),
            _layer_class(model, i + 1) if i + 1 < n else None)


def _sample_quota(model, cand: Sequence[int], k: int, must: set) -> dict[tuple, int]:
    """How many of ``k`` layers among ``cand`` each layer class gets: its share, rounded by
    largest remainder (ties to the class met first), at least one for each class in ``must``
    (so the quotas can sum to more than ``k``) and never more than the class has."""
    classes: dict[tuple, int] = {}
    for i in cand:
        c = _layer_class(model, i)
        classes[c] = classes.get(c, 0) + 1
    n = len(cand)
    exact = {c: k * m / n for c, m in classes.items()}
    quota = {c: max(1 if c in must else 0, min(m, int(exact[c]))) for c, m in classes.items()}
    order = sorted(classes, key=lambda c: -(exact[c] - int(exact[c])))  # stable: ties keep order
    while sum(quota.values()) < k:
        for c in order:
            if quota[c] < classes[c] and sum(quota.values()) < k:
                quota[c] += 1
    return quota


def _sampled_layers(model, k: int | None, allowed: Sequence[int] | None = None,
                    neighbours: bool = False) -> list[int]:
    """The layers a step simulates: all (``k`` None), or ``k`` spread evenly over the model;
    only among ``allowed`` (the layers a routing trace covers) if given.

    ``neighbours`` (two micro-batches: a layer of one shares the GPU and the HBM with the
    next or previous layer of the other, so a layer's time depends on its neighbours'
    classes): the sample below if each two consecutive picks keep their neighbours
    (:func:`_neighbours_kept`; always so in a model of one class), else the nearest sample
    that does (:func:`_neighbour_sample`), which can be longer than ``k``: gpt-oss's
    alternating sliding and full layers are sampled sliding, full, sliding, ... (an even
    count), Qwen3.5's three linear-attention layers and a full one in whole periods (8 for
    any ``k <= 8``, so that a full layer lies between the first and the last), DeepSeek-V3's
    three dense layers all, then its MoE layers. If the candidates have gaps no pick can
    bridge, the sample below.

    A sample of ``k >= 2`` holds the first and the last candidate layer (a step's pipeline fill
    and drain happen there, :func:`_scaled_layers_ns`); every layer class
    (:func:`_layer_class`: token mixer, routed MoE or dense FFN) has its share of the ``k``
    layers, rounded (:func:`_sample_quota`), and at least one, which can make the sample
    longer than ``k``; the first and last layers count towards their classes' shares and the
    layers between them make up the rest. The evenly spread layers are kept where their classes
    already have their shares; a class with too many gives up the pick nearest to a free layer
    of a class with too few, which takes its place (ties: the earliest); a class still short
    adds its free layer farthest from the picks, one still over drops its pick nearest another;
    until every class has its quota."""
    cand = list(range(model.n_layers)) if allowed is None else sorted(set(allowed))
    if not cand:
        raise ConfigError(f"step: no layer of {model.name!r} can be simulated")
    if k is None or k >= len(cand):
        return cand
    picks = _class_sample(model, cand, k)
    if neighbours and not all(_neighbours_kept(model, x, y) for x, y in zip(picks, picks[1:])):
        return _neighbour_sample(model, cand, k) or picks
    return picks


def _class_sample(model, cand: list[int], k: int) -> list[int]:
    """:func:`_sampled_layers` without ``neighbours``, ``1 <= k < len(cand)``."""
    fixed = [cand[0]] if k == 1 else [cand[0], cand[-1]]
    inner = cand[1:-1] if k >= 2 else cand[1:]
    classes = list(dict.fromkeys(_layer_class(model, i) for i in inner))
    quota = _sample_quota(model, cand, k, {_layer_class(model, i) for i in cand})
    for i in fixed:  # the first and last layers fill their classes' quotas first
        c = _layer_class(model, i)
        quota[c] -= 1
    quota = {c: max(q, 0) for c, q in quota.items() if c in classes}
    grid = {cand[int(round(x))] for x in np.linspace(0, len(cand) - 1, k)}
    picks = sorted(grid - set(fixed))
    while True:
        have = {c: 0 for c in quota}
        for i in picks:
            have[_layer_class(model, i)] += 1
        short = {c for c in quota if have[c] < quota[c]}
        over = {c for c in quota if have[c] > quota[c]}
        if not short and not over:
            return sorted(picks + fixed)
        free = [j for j in inner if j not in picks]
        if short and over:  # move a pick of a class with too many to one with too few
            moves = [(abs(i - j), i, j) for i in picks if _layer_class(model, i) in over
                     for j in free if _layer_class(model, j) in short]
            _, i, j = min(moves)
            picks = sorted([x for x in picks if x != i] + [j])
        elif short:  # only too few: add the free layer of that class farthest from the picks
            c = next(c for c in classes if c in short)
            edges = picks + fixed
            j = max((min(abs(j - x) for x in edges), -j) for j in free
                    if _layer_class(model, j) == c)[1]
            picks = sorted(picks + [-j])
        else:  # only too many: drop the pick of that class nearest another pick
            c = next(c for c in classes if c in over)
            edges = picks + fixed
            gap = {i: min(abs(i - x) for x in edges if x != i) for i in picks}
            i = min((gap[i], i) for i in picks if _layer_class(model, i) == c)[1]
            picks = [x for x in picks if x != i]


def _neighbours_kept(model, x: int, y: int) -> bool:
    """Whether sampled layer ``y`` may follow sampled layer ``x`` (``x < y``) under two
    micro-batches: ``y`` stands where ``x + 1`` would, so the layers around it (``y - 1``,
    ``y``, ``y + 1``) have the classes of those around ``x + 1`` (``x``, ``x + 1``,
    ``x + 2``), where both exist. Then ``y`` meets a layer of the class ``x`` meets next in
    the model and ``x`` one of the class ``y`` meets before, and a periodic pattern of
    classes is sampled in whole periods (gpt-oss: sliding, full, sliding, ...; Qwen3.5:
    three linear-attention layers, then a full one)."""
    n = model.n_layers
    return all(_layer_class(model, x + 1 + t) == _layer_class(model, y + t)
               for t in (-1, 0, 1) if x + 1 + t < n and y + t < n)


def _neighbour_sample(model, cand: Sequence[int], k: int) -> list[int] | None:
    """The ``m >= k`` layers of ``cand`` nearest (sum of ``|pick - target|``, targets spread
    evenly as in :func:`_sampled_layers`) to an even spread, holding the first and the last,
    every class and, where ``m`` leaves room, between the first and the last every class and
    every context (:func:`_layer_context`) that the layers between have in the model (a
    layer's time is taken from there, :func:`_scaled_layers_ns`), where every two
    consecutive picks keep their neighbours
    (:func:`_neighbours_kept`); the smallest such ``m``; None if none (``cand`` with gaps that
    no pick can bridge). A dynamic programme over (pick, layer): ``m * len(cand)**2``."""
    n = len(cand)
    cl = [_layer_class(model, i) for i in cand]
    # _neighbours_kept for every pair, on class codes
    codes = {c: j for j, c in enumerate(dict.fromkeys(
        _layer_class(model, i) for i in range(model.n_layers)))}
    code = np.array([codes[_layer_class(model, i)] for i in range(model.n_layers)] + [-1])
    x, y = np.asarray(cand)[:, None], np.asarray(cand)[None, :]
    ok = (x < y) & ((y == x + 1) | np.logical_and.reduce([
        (code[np.minimum(x + 1 + t, model.n_layers)] == code[np.minimum(y + t, model.n_layers)])
        | (x + 1 + t >= model.n_layers) | (y + t >= model.n_layers) for t in (-1, 0, 1)]))
    step = np.where(ok, 0.0, np.inf)
    classes = {_layer_class(model, i) for i in cand[1:-1]}
    contexts = {_layer_context(model, i) for i in cand[1:-1]}
    idx = np.arange(n, dtype=float)
    for m in range(max(k, 2), n + 1):
        target = np.linspace(0, n - 1, m)
        cost = np.full(n, np.inf)
        cost[0] = 0.0
        back = []
        for j in range(1, m):
            tot = cost[:, None] + step  # from pick a to pick b
            arg = np.argmin(tot, axis=0)  # ties: the earliest a
            cost = tot[arg, np.arange(n)] + np.abs(idx - target[j])
            back.append(arg)
        if not np.isfinite(cost[n - 1]):
            continue
        picks = [n - 1]
        for arg in reversed(back):
            picks.append(int(arg[picks[-1]]))
        picks.reverse()
        inner = [cand[a] for a in picks[1:-1]]
        if ({cl[a] for a in picks} == set(cl)
                and (m < 2 + len(classes) or {_layer_class(model, i) for i in inner} >= classes)
                and (m < 2 + len(contexts) or {_layer_context(model, i) for i in inner}
                     >= contexts)):
            return [cand[a] for a in picks]
    return None


def _scaled_layers_ns(model, layers: Sequence[int], ends: Sequence[float],
                      periodic: bool) -> float:
    """The time of every layer of the model from a sample: ``ends[i]`` is when sampled layer
    ``layers[i]`` ended (from the step's start), so it took ``ends[i] - ends[i-1]`` (the
    first, ``ends[0]``). Layers are grouped by class (:func:`_layer_class`); a class the sample
    lacks counts as the mean sampled layer.

    Sequential (``periodic`` false): each sampled layer's time, times its class's layers in the
    model over its class's layers in the sample.

    ``periodic`` (two micro-batches pipelined over the layers): the first sampled layer's time
    holds the micro-batches' pipeline fill and the last's the drain, paid once; the span to the
    last sampled layer is kept, and every layer not simulated is added at the mean time of the
    sampled layers between the first and the last with its context (:func:`_layer_context`:
    its class between its neighbours' classes, which a sample taken with ``neighbours`` keeps,
    :func:`_sampled_layers`); if none has it, of its class's there; if none, its class's last
    or first sampled layer's; a class not sampled: the mean of the layers between. In a model
    of one class every layer between has the same context, and this is the class mean."""
    if len(layers) == model.n_layers:
        return float(ends[-1])
    dur = np.diff(np.concatenate([[0.0], np.asarray(ends, dtype=float)]))
    total: dict[tuple, int] = {}
    for i in range(model.n_layers):
        c = _layer_class(model, i)
        total[c] = total.get(c, 0) + 1
    cls = [_layer_class(model, x) for x in layers]
    missing = sum(m for c, m in total.items() if c not in cls)
    if not periodic:
        return float(sum(d * (total[c] / cls.count(c) + missing / len(layers))
                         for d, c in zip(dur, cls)))
    inner = dur[1:-1]
    fallback = float(inner.mean()) if inner.size else float(dur[-1])
    by_context: dict[tuple, list[float]] = {}
    by_class: dict[tuple, list[float]] = {}
    for d, x in zip(inner, layers[1:-1]):
        by_context.setdefault(_layer_context(model, x), []).append(float(d))
        by_class.setdefault(_layer_class(model, x), []).append(float(d))
    edge = {cls[-1]: [float(dur[-1])]}  # a class only first or last: its time, fill or drain
    edge.setdefault(cls[0], [float(dur[0])])
    groups: dict[tuple, list] = {}  # the layers not simulated, by the times standing for them
    sampled = set(layers)
    for i in range(model.n_layers):
        if i in sampled:
            continue
        ctx, c = _layer_context(model, i), _layer_class(model, i)
        if ctx in by_context:  # its class between the same neighbours' classes
            key, per = ("context", ctx), by_context[ctx]
        elif c in by_class:
            key, per = ("class", c), by_class[c]
        elif c in edge:
            key, per = ("edge", c), edge[c]
        else:  # a class not sampled
            key, per = ("mean",), [fallback]
        groups.setdefault(key, [0, per])[0] += 1
    out = float(ends[-1])
    for n_layers, per in groups.values():
        out += n_layers * float(np.mean(per))
    return out


class _Builder:
    """Builds and runs the task graph of one step (see the module docstring)."""

    def __init__(self, state: SystemState, batch: StepBatch):
        self.st = state
        self.b = batch
        self.o = state.options
        self.sys = state.system
        self.model = state.view
        self.full = state.model
        self.meth = get_method(self.o.method)
        self.tp = self.o.parallel == "tp"
        self.n_gpus = self.sys.n_gpus
        self.n_sim = 1 if self.tp else self.n_gpus
        self.sched = Schedule(shared=_hbm_lane)
        self.t0 = state.now_ns
        self.parts: list[dict] = []
        self.channels: list[dict] = []
        self.pim_mode = self.sys.has_pim and self.meth.uses_pim
        # two-batch overlap: weights a GPU op of one micro-batch loaded, by (GPU, layer, op):
        # (micro-batch, expert ids or None for a dense op, weight bytes)
        self.tbo = self.o.overlap == "tbo"
        # sieve-cp (skip_gpu): the look's ties to a static split and skips that run all on the
        # GPU, where no other GPU's decision enters a look (sieve.sched.methods); each
        # decision also needs like micro-batches (_unlike)
        self.static_ties = bool(self.meth.skip_gpu and self.tbo and self.pim_mode
                                and self.n_sim == 1)
        self.loaded: dict[tuple, tuple[int, frozenset | None, float]] = {}
        self.made: list[Task] = []  # the tasks of the last gpu_tasks call
        # for the critical-path decisions: a layer's shared-expert tasks and its attention
        # task, by (GPU, layer, micro-batch)
        self.queued: dict[tuple, list[Task]] = {}
        self.attn_tasks: dict[tuple, Task] = {}
        self.layer_tasks: dict[tuple, list[Task]] = {}  # GPU and HBM tasks by (g, layer, mb)
        self.link_tasks: dict[tuple, list[Task]] = {}  # collectives by (layer, mb)
        self.sched_tasks: dict[tuple, Task] = {}  # decisions by (g, layer, mb)
        self.head_tasks: dict[int, Task] = {}  # each GPU's LM head (Method.look_tail)
        # GPU experts of each decision (gpu, layer, micro-batch), two-batch overlap (Method.mirror)
        self.gpu_count: dict[tuple[int, int, int], int] = {}
        self.next_layer: dict[int, int] = {}  # each sampled layer's next sampled one (run)
        self.prev_layer: dict[int, int] = {}  # and its previous one
        # two-batch overlap: where each (GPU, layer, micro-batch) yields to the other
        # micro-batch (its expert decision; a dense layer's FFN input), :meth:`_yield_dep`
        self.yields: dict[tuple, Task] = {}
        # for the look ahead (two-batch overlap): each decision's GPU, counts, join, dispatch
        # and (EP) its experts' scan order by id(task); decided PIM experts' estimator and
        # split, then their estimated time once a look has asked for it
        self.deciders: dict[int, tuple] = {}
        self.look_costs: dict[tuple, tuple[float, float, float]] = {}  # _lookahead's prices
        self.pim_est: dict[int, tuple | float] = {}
        self.l2_bytes = self.sys.gpu.l2_bytes
        cal, gpu = self.sys.gpu_calibration, self.sys.gpu
        self.load_bytes_per_ns = cal.eta_bw * gpu.hbm_bw_gbs
        self.dtype = self.sys.dtype
        ex = self.o.expert_dtype
        self.expert_dtype = (self.full.released_format if ex == "released" else ex)
        self.ffn_shape = FfnShape(state.shape.hidden, state.shape.intermediate,
                                  state.shape.gated)
        # requests -> GPU (data-parallel attention) and micro-batch
        r = np.arange(batch.n_requests)
        self.req_gpu = np.zeros_like(r) if self.tp else r % self.n_gpus
        per = (r // (1 if self.tp else self.n_gpus))
        self.req_mb = per % self.o.microbatches
        # whether each micro-batch holds a request on some GPU (none does for the second when
        # the batch has no more requests than GPUs)
        self.mb_held = [bool(np.any(self.req_mb == m)) for m in range(2)]
        # whether the two micro-batches are like (neither holds more than OWN_RATIO times the
        # other's tokens; on one GPU, where skip_gpu acts, the ratio of their token-expert
        # pairs at every layer, the test _unlike makes per decision): _memo_key
        tok = np.bincount(self.req_mb, weights=batch.tokens, minlength=2)
        self.like_mbs = not _unlike_sizes(float(tok[0]), float(tok[1]))
        self.tok_req = batch.token_request
        self.expert_gpu = (np.zeros(self.full.n_experts, dtype=np.int64) if self.tp else
                           np.repeat(np.arange(self.n_gpus), self.full.n_experts // self.n_gpus))
        if not self.tp and self.full.n_experts % self.n_gpus:
            raise ConfigError(f"EP: {self.full.n_experts} experts do not split evenly over "
                              f"{self.n_gpus} GPUs")

    # ---- task helpers --------------------------------------------------------------------------
    def _info(self, g, layer, mb, kind):
        return {"gpu": g, "layer": layer, "mb": mb, "kind": kind}

    def _shared_bytes(self, key: tuple, mb: int, wbytes: float, experts) -> float:
        """Two-batch overlap: weight bytes of this op that the other micro-batch's kernel of
        the same op (same GPU and layer) loaded and that are still on chip: all of a dense op's,
        the experts both use of a grouped GEMM; only when the other kernel's weights fit in the
        GPU's L2. Records this kernel's own weights for the other micro-batch."""
        if not self.tbo or key is None:
            return 0.0
        own = frozenset(int(e) for e in np.flatnonzero(experts)) if experts is not None else None
        prev = self.loaded.get(key)
        if prev is None or prev[0] == mb:
            self.loaded[key] = (mb, own, wbytes)
            return 0.0
        _, other, other_bytes = prev
        if other_bytes > self.l2_bytes:
            return 0.0
        if own is None or other is None:
            return wbytes
        return wbytes * len(own & other) / max(len(own), 1)

    def gpu_tasks(self, name: str, ops: Sequence[GpuOp], g: int, deps: list[Task], layer: int,
                  mb: int, prio: int, load_deps: list[Task] | None = None,
                  share: bool = False, experts=None) -> Task | None:
        """GPU operations as a weight-load task (hbm) then the rest of their calibrated time
        (gpu); returns the last task (None for no work). ``share``: under two-batch overlap the
        op's weights serve both micro-batches (:meth:`_shared_bytes`; ``experts`` are the
        token counts of a grouped GEMM's experts)."""
        ops = [op for op in ops if op is not None]
        if not ops:
            return None
        total = self.st.precise.gpu_ns(ops)
        wbytes = sum(weight_bytes(op, self.dtype) for op in ops)
        shared = self._shared_bytes((g, layer, name) if share else None, mb, wbytes, experts)
        if shared:  # the kernel streams only the weights it does not find on chip
            total = max(total - shared / self.load_bytes_per_ns, 0.0)
            wbytes -= shared
        t_load = min(wbytes / self.load_bytes_per_ns, total)
        s = self.sched
        last_deps = list(deps)
        made = []
        if t_load > 0:
            ld = s.add(Task(f"{name}_load", (f"hbm{g}",), t_load,
                            deps=list(deps if load_deps is None else load_deps), priority=prio,
                            info=self._info(g, layer, mb, "hbm")))
            last_deps.append(ld)
            made.append(ld)
        made.append(s.add(Task(name, (f"gpu{g}",), total - t_load, deps=last_deps,
                               priority=prio, info=self._info(g, layer, mb, "gpu"))))
        self.made = made
        self.layer_tasks.setdefault((g, layer, mb), []).extend(made)
        return made[-1]

    def _yield_dep(self, g: int, layer: int, mb: int) -> list[Task]:
        """Two-batch overlap: the task the first kernel of micro-batch ``mb``'s ``layer`` on
        GPU ``g`` waits for besides its own previous layer. The micro-batches take turns as
        SGLang's decode two-batch overlap issues them (``tbo_delta_stages = 2``: the second
        micro-batch runs two stages behind the first, so the attention of one runs beside the
        experts of the other): micro-batch 1's layer starts once micro-batch 0 has decided
        the same layer's split (its expert stage begins), micro-batch 0's next layer once
        micro-batch 1 has decided its split (a dense layer: its FFN's input is ready). The
        rest is list-scheduled by dependencies and priority."""
        if not self.tbo:
            return []
        key = (g, layer, 0) if mb == 1 else (g, self.prev_layer.get(layer), 1)
        t = self.yields.get(key)
        return [t] if t is not None else []

    def link(self, name: str, dur: float, deps: list[Task], layer: int, mb: int, prio: int
             ) -> Task:
        lanes = tuple(f"link{g}" for g in range(self.n_sim))
        t = self.sched.add(Task(name, lanes, dur, deps=deps, priority=prio,
                                info=self._info(-1, layer, mb, "link")))
        self.link_tasks.setdefault((layer, mb), []).append(t)
        return t

    # ---- one layer -----------------------------------------------------------------------------
    def layer(self, li: int, layer: int, mb: int, prev: list[Task | None], prio: int
              ) -> list[Task]:
        """Tasks of model layer ``layer`` (trace layer ``li``) for micro-batch ``mb`` on every
        simulated GPU; ``prev[g]`` is that GPU's last task of the previous layer."""
        m, b = self.model, self.b
        lt = m.layer_types[layer]
        mine_mb = self.req_mb == mb
        tok_mask = mine_mb[self.tok_req]
        ids = b.expert_ids[tok_mask, li, :] if layer in self._moe else None
        tok_gpu = self.req_gpu[self.tok_req][tok_mask]
        routers: list[Task] = []
        shared_done: list[Task | None] = []
        for g in range(self.n_sim):
            deps = [prev[g]] if prev[g] is not None else []
            deps += self._yield_dep(g, layer, mb)
            reqs = np.flatnonzero(mine_mb & (self.req_gpu == g))
            dec = reqs[b.phase[reqs] == DECODE]
            pre = reqs[b.phase[reqs] == PREFILL]
            n_tok = int(b.tokens[reqs].sum())
            if n_tok == 0:  # this GPU has no request in this micro-batch
                routers.append(self.sched.add(Task("idle", (f"gpu{g}",), 0.0, deps=deps,
                                                   priority=prio,
                                                   info=self._info(g, layer, mb, "gpu"))))
                shared_done.append(None)
                self.yields[(g, layer, mb)] = routers[-1]
                continue
            norm1, rope, norm2 = layer_kernels(m, layer, n_tok, self.o.kv_dtype)
            deps = [self.gpu_tasks("norm", [norm1], g, deps, layer, mb, prio)]
            if lt == "gdn":
                mix = self.gpu_tasks("gdn", gdn_op(m, layer, reqs.size, n_tok, None), g, deps,
                                     layer, mb, prio)
            else:
                pre_ops, post_ops = mixer_gemms(m, layer, n_tok)
                q = self.gpu_tasks("qkv", pre_ops, g, deps, layer, mb, prio, share=True)
                q = self.gpu_tasks("rope_kv", [rope], g, [t for t in (q,) if t], layer, mb,
                                   prio) or q
                att = [q]
                ctx = b.context[dec] + 1
                if dec.size and self.pim_mode:
                    att.append(self.pim_attention(g, layer, ctx, [q], mb, prio))
                elif dec.size:
                    att.append(self.gpu_tasks("attn", [gpu_decode_attention(
                        m, layer, ctx, self.o.kv_dtype)], g, [q], layer, mb, prio))
                if pre.size:
                    att.append(self.gpu_tasks("prefill_attn", [prefill_attention(
                        m, layer, b.tokens[pre])], g, [q], layer, mb, prio))
                mix = self.gpu_tasks("o_proj", post_ops, g, [t for t in att if t], layer, mb,
                                     prio, share=True)
            if self.tp and self.n_gpus > 1:
                mix = self.link("allreduce_attn", self.st.precise.comm_ns(Collective(
                    "tp_all_reduce", n_tok * self.full.hidden_size * 2.0)), [mix], layer, mb,
                    prio)
            mix = self.gpu_tasks("norm", [norm2], g, [mix], layer, mb, prio)
            if layer not in self._moe:
                self.yields[(g, layer, mb)] = mix
                ffn = self.gpu_tasks("dense_ffn", [GroupedExperts(
                    [n_tok], _dense_shape(self.full), self.expert_dtype)], g, [mix], layer,
                    mb, prio, share=True)
                routers.append(ffn)
                shared_done.append(None)
                continue
            r = self.gpu_tasks("router", [router_op(m, n_tok)], g, [mix], layer, mb, prio,
                               share=True)
            routers.append(r)
            sh = shared_op(m, n_tok, self.expert_dtype)
            shared_done.append(self.gpu_tasks("shared", [sh], g, [r], layer, mb, prio,
                                              load_deps=[r], share=True)
                               if sh is not None else None)
            if sh is not None:  # queued GPU work a critical-path decision must count
                self.queued[(g, layer, mb)] = list(self.made)
        if layer not in self._moe:
            return routers
        # ---- routing maps, dispatch, scheduling, experts, combine -------------------------
        n_tok_all = int(tok_mask.sum())
        multi = self.n_sim > 1
        if multi:
            ag = self.link("allgather", self.st.precise.comm_ns(Collective(
                "all_gather", n_tok_all * self.full.top_k * ROUTE_ENTRY_BYTES)), routers,
                layer, mb, prio)
        metas, scheds, joins = [], [], []
        counts_all = np.bincount(ids.ravel(), minlength=self.full.n_experts) if ids.size else \
            np.zeros(self.full.n_experts, dtype=np.int64)
        copies = None
        if multi:
            from sieve.sched.trace import ep_copies

            copies = ep_copies(ids[:, None, :], tok_gpu, self.expert_gpu, self.n_gpus)[0]
        for g in range(self.n_sim):
            base = [ag] if multi else [routers[g]]
            meta = self.gpu_tasks("meta", [MemoryStream(
                max(n_tok_all, 1) * self.full.top_k * 8.0)], g, base, layer, mb, prio)
            metas.append(meta)
        if multi:
            t_disp = self.st.precise.comm_ns(EpExchange("dispatch", copies,
                                                        self.full.hidden_size))
            disp = self.link("dispatch", t_disp, metas, layer, mb, prio)
        for g in range(self.n_sim):
            join = self.sched.add(Task("experts_done", (f"gpu{g}",), 0.0, pending=True,
                                       priority=prio, info=self._info(g, layer, mb, "gpu")))
            joins.append(join)
            local = counts_all[self.expert_gpu == g] if not self.tp else counts_all
            cost = self.o.decision_ns(int(np.count_nonzero(local)))
            # a decision that did not pay last time is skipped (sieve.sched.amortize): the
            # method's starting split, no decision time
            pairs = int(local.sum())
            skip = bool(cost > 0 and self.st.memos is not None
                        and self.st.memos[g].skip(self._memo_key(layer, mb), pairs))
            sc = self.sched.add(Task(
                "scheduler", (f"gpu{g}",), 0.0 if skip else cost,
                deps=[metas[g]], priority=prio,
                info=self._info(g, layer, mb, "gpu"),
                on_start=self._decider(g, layer, li, mb, local, join,
                                       [disp] if multi else [], copies, prio, skip, cost,
                                       pairs)))
            scheds.append(sc)
            self.sched_tasks[(g, layer, mb)] = sc
            self.yields[(g, layer, mb)] = sc
            if self.tbo:
                # (under EP its experts' order too: other GPUs' looks split by it, _lookahead)
                self.deciders[id(sc)] = (g, local, join, [disp] if multi else [],
                                         scan_order(local) if multi else None)
        after = joins
        if multi:
            t_comb = self.st.precise.comm_ns(EpExchange("combine", copies,
                                                        self.full.hidden_size))
            after = [self.link("combine", t_comb, joins, layer, mb, prio)] * self.n_sim
        if self.tp and self.n_gpus > 1:
            after = [self.link("allreduce_moe", self.st.precise.comm_ns(Collective(
                "tp_all_reduce", n_tok_all * self.full.hidden_size * 2.0)), joins, layer, mb,
                prio)]
        out = []
        for g in range(self.n_sim):
            reqs = np.flatnonzero(mine_mb & (self.req_gpu == g))
            n_tok = int(b.tokens[reqs].sum())
            deps = [after[g] if len(after) > 1 else after[0]]
            if shared_done[g] is not None:
                deps.append(shared_done[g])
            ws = self.gpu_tasks("wsum", [MemoryStream(
                max(n_tok, 1) * self.full.top_k * self.full.hidden_size * 2.0 * 2)], g, deps,
                layer, mb, prio)
            out.append(ws)
        return out

    def pim_attention(self, g, layer, ctx, deps, mb, prio) -> Task:
        st, model, lt = self.st, self.model, self.model.layer_types[layer]
        kv = 1 if self.o.kv_dtype == "fp8" else 2

        def run(start):
            r = run_attention(self.sys.memory, model, layer, ctx, gpu=self.sys.gpu,
                              calib=self.sys.gpu_calibration, kv_bytes=kv,
                              device=st.devices[g], start_ns=start)
            # the device starts on its next tick: count from the task's start
            dur = r.total_ns + ((r.pim.start_ns - start) if r.pim is not None else 0.0)
            st._push(g, start + dur, "attention", (lt, dur))
            self._count_pim(r.pim)
            if g == 0 and r.pim is not None:
                self.channels.append({"kind": "attention", "layer": layer, "mb": mb,
                                      "start_ns": start, "end_ns": start + dur,
                                      "pc_busy_ns": r.pim.pc_busy_ns.copy()})
            return dur

        t = self.sched.add(Task("attn", (f"pim{g}",), _in_stage("pim", run), deps=deps,
                                priority=prio, info=self._info(g, layer, mb, "pim")))
        self.attn_tasks[(g, layer, mb)] = t
        return t

    def _decider(self, g, layer, li, mb, local, join, disp, copies, prio, skip=False,
                 cost=0.0, pairs=0):
        st = self.st
        model = self.model

        def decide(task: Task, sched: Schedule) -> None:
            s = task.start_ns
            st._flush(g, s)
            est = st.estimators[g]
            lt = model.layer_types[layer]
            reqs = np.flatnonzero((self.req_mb == mb) & (self.req_gpu == g))
            dec = reqs[self.b.phase[reqs] == DECODE]
            n_tok = int(self.b.tokens[reqs].sum())
            busy = 0.0
            if self.pim_mode and dec.size and lt != "gdn":
                busy = st.attn_seen[g].get(lt)
                if busy is None:  # roofline before the first observation
                    busy = RooflineCostModel(self.sys).pim_ns(PimAttention(
                        model, layer, self.b.context[dec] + 1))
            comm = 0.0
            if copies is not None:
                comm = est.cost.comm_ns([EpExchange("dispatch", copies,
                                                    self.full.hidden_size),
                                         EpExchange("combine", copies, self.full.hidden_size)])
            fixed = fixed_gpu_ops(model, layer, n_tok, self.o.kv_dtype, self.expert_dtype)
            look = saving = None
            if self.tbo and self.pim_mode:
                look = self._lookahead(task, sched, g, layer, mb, local, join, disp,
                                       self.meth.look_layers)
                if self.meth.look_layers > 1 and look is not None:
                    saving = self._lookahead(task, sched, g, layer, mb, local, join, disp)
            # (skip_gpu: static ties only between like micro-batches)
            static_ties = self.static_ties and not self._unlike(g, layer, mb, local)
            load = LayerLoad(local, st.shape, pim_busy_ns=float(busy), comm_ns=float(comm),
                             gpu_fixed=fixed,
                             timing=self._timing(task, sched, g, layer, mb, disp, copies, est),
                             lookahead=look, static_ties=static_ties,
                             saving_lookahead=saving)
            if skip:
                part = self.meth.start_split(load, est)
                if st.memos[g].split(self._memo_key(layer, mb)) == "gpu":  # its decision's
                    part = Partition(part.method, part.counts, np.zeros_like(part.on_pim),
                                     pim_order=part.pim_order)
            else:
                part = self.meth(load, est)
                if st.memos is not None and cost > 0:
                    st.memos[g].record(self._memo_key(layer, mb), part.est_gain_ns, cost,
                                       pairs, "gpu" if static_ties and local.any()
                                       and not part.on_pim.any() else "pim")
            if self.meth.mirror and self.tbo:  # the second decision of the layer reads it
                if self.pim_mode and not skip:
                    part = self._mirrored(g, layer, mb, local, load, est, part)
                self.gpu_count[(g, layer, mb)] = int(np.count_nonzero(part.gpu_counts))
            if not self.pim_mode:  # no PIM units, or the GPU-only method
                part = Partition(part.method, part.counts, np.zeros_like(part.on_pim),
                                 pim_order=part.pim_order, attention_on_pim=False,
                                 est_comm_ns=part.est_comm_ns, est_gpu_ns=part.est_gpu_ns)
            if self.tbo:
                st.last_thr[(g, mb)] = _gpu_threshold(local, part.on_pim)
            self.parts.append({"layer": layer, "mb": mb, "gpu": g, "decided_ns": s,
                               "decision_skipped": skip, **part.summary()})
            done = []
            gc = part.gpu_counts
            if gc.any():
                done.append(self.gpu_tasks(
                    "experts_gpu", [GroupedExperts(gc, st.shape, self.expert_dtype)], g,
                    [task, *disp], layer, mb, prio, load_deps=[task], share=True,
                    experts=gc))
            if part.on_pim.any():
                done.append(sched.add(Task("experts_pim", (f"pim{g}",),
                                           self._pim_experts(g, layer, mb, part),
                                           deps=[task, *disp], priority=prio,
                                           info=self._info(g, layer, mb, "pim"))))
                if self.tbo:  # for a later decision's look (its time, estimated when asked)
                    self.pim_est[id(done[-1])] = (est, part)
            sched.release(join, done or [task])

        return _in_stage("scheduling", decide)

    def _mirrored(self, g: int, layer: int, mb: int, local: np.ndarray, load: LayerLoad,
                  est: Estimator, part: Partition) -> Partition:
        """``Method.mirror``: where the other micro-batch's decision of this layer on GPU g came
        first (its split is known) and the two micro-batches are like (not :meth:`_unlike`),
        the split with as many of this micro-batch's most popular experts on the GPU as that
        decision put there (:func:`sieve.sched.cp.prefix_split`; all of its own where it has
        fewer), the count guess of the two its look made for this decision (:data:`STAND_INS`);
        ``part`` otherwise. The skip memo has already recorded ``part``'s own saving."""
        n = self.gpu_count.get((g, layer, 1 - mb))
        if n is None or self._unlike(g, layer, mb, local):
            return part
        on_pim = prefix_split(local, n)
        if np.array_equal(on_pim, part.on_pim):
            return part
        t_comm, t_gpu, t_pim = split_estimates(load, est, on_pim)
        return Partition(part.method, part.counts, on_pim, pim_order=part.pim_order,
                         mapping=part.mapping, est_comm_ns=t_comm, est_gpu_ns=t_gpu,
                         est_pim_ns=t_pim, steps=part.steps, est_gain_ns=part.est_gain_ns)

    def _memo_key(self, layer: int, mb: int) -> Hashable:
        """The key of a layer's decision in its GPU's skip memo (:mod:`sieve.sched.amortize`):
        the layer, or (layer, micro-batch) where the method's skips may run all on the GPU
        (``static_ties``: ``sieve-cp``) and the step's two micro-batches are like
        (``like_mbs``): a skip replays the split its own micro-batch's decision chose, in that
        micro-batch's place in the overlap. Between unlike micro-batches ``skip_gpu`` changes
        nothing (no static ties, one key per layer)."""
        return (layer, mb) if self.static_ties and self.like_mbs else layer

    def _unlike(self, g: int, layer: int, mb: int, local: np.ndarray) -> bool:
        """Whether this GPU's two micro-batches are unlike at this layer's decision: one
        holds more than :data:`OWN_RATIO` times the other's token-expert pairs (the other's
        pairs from its decision task, which must exist and have decided on this GPU)."""
        od = self.sched_tasks.get((g, layer, 1 - mb))
        other = self.deciders.get(id(od)) if od is not None else None
        if other is None or (g, 1 - mb) not in self.st.last_thr:
            return False
        n_o, n_t = float(np.sum(other[1])), float(np.sum(local))
        return _unlike_sizes(n_o, n_t)

    def _lookahead(self, task: Task, sched: Schedule, g: int, layer: int, mb: int,
                   local: np.ndarray, join: Task, disp: list[Task], layers: int = 1):
        """Two-batch overlap: ``f(on_pim)``, a split of this decision rated by the schedule's
        look ahead (:meth:`Schedule.lookahead`) from here to the next decisions of both
        micro-batches on this GPU and, under expert parallelism, the next layer's dispatches
        of both micro-batches (of those that hold a request on some GPU: ``mb_held``), the
        latest of their starts in ns from this decision's end
        (:class:`~sieve.sched.partition.LayerLoad`'s ``lookahead``); None when the next
        sampled layer has no decision, and at the last sampled layer unless the method has
        ``look_tail``: its look there watches the GPU's LM head (the step's end on that GPU,
        after both micro-batches' last layer). ``layers`` > 1 (``Method.look_layers``): the
        decisions and dispatches that many sampled layers on, every decision before them in the
        look.
        In the look: this split's expert tasks at its estimator's costs
        (:func:`sieve.sched.cp.split_cost`); every decision reached before the watched ones
        splits its experts at its own GPU's estimator: another GPU's (expert
        parallelism) with as many of its most popular experts on its GPU as this split has
        (:func:`sieve.sched.cp.prefix_split`: a GPU expert's cost is mostly its weight
        stream, the same for every GPU, where a threshold in tokens means a different number
        of experts on each GPU); the other micro-batch's on this GPU, which will itself take
        the split its own look rates best against the same watched tasks, by the better of
        two guesses at that answer (:data:`STAND_INS`): this split's threshold (the fewest
        tokens an expert on the GPU has here: every expert with as many on the GPU, the rest
        on PIM) and as many of its most popular experts as this split has (the rating is
        the lower of the two looks; one look where none reaches that decision), or, where
        one of the two micro-batches holds more than :data:`OWN_RATIO` times the other's
        token-expert pairs here, by the other's own last decision on this GPU (its
        threshold, one look; :data:`OWN_RATIO`); attention
        not run yet at its GPU's observed EMA, PIM experts decided and not run at their GPU's
        cost table (read when a look first asks); every other task as built."""
        st = self.st
        nxt = self.next_layer.get(layer)
        # ``layers`` > 1 (Method.look_layers): the decisions that many sampled layers on (the
        # last sampled layer's where fewer follow), those between them decided in the look
        for _ in range(layers - 1):
            if self.next_layer.get(nxt) is not None:
                nxt = self.next_layer[nxt]
        # the micro-batches watched: those that hold a request on some GPU (one that holds
        # none, B <= the GPUs, has no token to finish: its tasks' starts are lane order)
        held = [m for m in (mb, 1 - mb) if self.mb_held[m]] or [mb, 1 - mb]
        watch = [self.sched_tasks.get((g, nxt, m)) for m in held] if nxt else []
        if not nxt and self.meth.look_tail and g in self.head_tasks:
            watch = [self.head_tasks[g]]  # the last sampled layer: the step's end here
        if not watch or any(w is None for w in watch):
            return None
        if nxt and not self.tp:  # the next layer's collectives (docs/schedulers.md)
            watch += [t for m in held for t in self.link_tasks.get((nxt, m), ())
                      if t.name == "dispatch"]
        t0 = task.end_ns
        lt_of = self.model.layer_types
        # whether the look guesses the other micro-batch's answer on this GPU from its own last
        # decision (OWN_RATIO) rather than by the mirror guesses (STAND_INS)
        unlike = self._unlike(g, layer, mb, local)

        def dur(t: Task) -> float:
            if not callable(t.duration):
                return float(t.duration)
            if t.name == "attn":
                i = t.info
                return st.attn_seen[i["gpu"]].get(lt_of[i["layer"]], 0.0)
            x = self.pim_est.get(id(t), 0.0)
            if isinstance(x, tuple):  # decided PIM experts: their GPU's table, once
                est, part = x
                x = self.pim_est[id(t)] = split_cost(est, part.counts, part.on_pim)[2]
            return x

        def experts(gx, dec, cost, jn, dsp, prio, add):
            h, c, p = cost  # split_cost's (HBM stream, compute rest, PIM)
            ends = []
            if h + c > 0:
                ld = Task("experts_gpu_load", (f"hbm{gx}",), h, deps=[dec], priority=prio)
                add(ld)
                ends.append(Task("experts_gpu", (f"gpu{gx}",), c, deps=[dec, *dsp, ld],
                                 priority=prio))
                add(ends[-1])
            if p > 0:
                ends.append(Task("experts_pim", (f"pim{gx}",), p, deps=[dec, *dsp],
                                 priority=prio))
                add(ends[-1])
            add(jn, ends or [dec])

        def rate(on_pim: np.ndarray) -> float:
            on_pim = np.asarray(on_pim, dtype=bool)
            thr = _gpu_threshold(local, on_pim)
            n_gpu = int(((local > 0) & ~on_pim).sum())

            reached = []  # whether the look reached this GPU's other decision
            own = split_cost(st.estimators[g], local, on_pim)  # this split's, for every look

            def look(stand_in: str) -> float:
                def expand(t: Task, add) -> None:
                    d = self.deciders.get(id(t))
                    if d is None:
                        return
                    gx, cx, jx, dx, ox = d
                    # another GPU (EP): as many of its most popular experts on its GPU as
                    # this split has; the other micro-batch here: by `stand_in` (docstring)
                    if gx != g or stand_in == "count":
                        by, x = "count", n_gpu
                    elif stand_in == "own":
                        by, x = "threshold", st.last_thr[(g, 1 - mb)]
                    elif stand_in == "threshold":
                        by, x = "threshold", thr
                    else:
                        raise ConfigError(f"step: look stand-in {stand_in!r} unknown (known: "
                                          "threshold, count, own)")
                    # priced once per (decision, rule, its number, estimator version): the
                    # looks of every decision of the step that reach it share the price
                    key = (id(t), by, x, st.estimators[gx].version)
                    cost = self.look_costs.get(key)
                    if cost is None:
                        op = (prefix_split(cx, x, ox) if by == "count" else ~(cx >= x))
                        cost = self.look_costs[key] = split_cost(st.estimators[gx], cx, op)
                    if gx == g:
                        reached.append(True)
                    experts(gx, t, cost, jx, dx, t.priority, add)

                extra: list[Task] = []
                rel: list[tuple[Task, list[Task]]] = []

                def add(t: Task, deps=None) -> None:
                    if deps is None:
                        extra.append(t)
                    else:
                        rel.append((t, deps))

                experts(g, task, own, join, disp, task.priority, add)
                out = sched.lookahead(extra, watch, dur, expand, release=rel)
                if enabled():
                    count("look_placements", sched.look_placed)
                    count("looks", 1)
                if any(id(w) not in out for w in watch):
                    return np.inf
                return max(out[id(w)] for w in watch) - t0

            rules = ("own",) if unlike else STAND_INS
            r = look(rules[0])
            if reached:  # the other micro-batch decides in the look: its other stand-ins
                r = min([r] + [look(x) for x in rules[1:]])
            return r

        return rate

    def _timing(self, task: Task, sched: Schedule, g: int, layer: int, mb: int, disp,
                copies, est: Estimator) -> LayerTiming:
        """When this layer's expert phase can use each resource, as the step knows it at the
        decision (ns from the decision's end): the lanes' placed work, this layer's shared
        experts if still queued, the dispatch (its end when placed, else its estimate from a
        free link), and under two-batch overlap the other micro-batch's attention of this
        layer if it has not run yet (EMA of its observed times, as the seed's attention
        term)."""
        t0 = task.end_ns
        free = sched.lane_free_ns
        h = max(free(f"hbm{g}") - t0, 0.0)
        gpu = max(free(f"gpu{g}") - t0, 0.0)
        pim = max(free(f"pim{g}") - t0, 0.0)
        for t in self.queued.get((g, layer, mb), ()):
            if not t.placed:
                if t.lanes[0].startswith("hbm"):
                    h += float(t.duration)
                else:
                    gpu += float(t.duration)
        if self.tbo:
            # the other micro-batch shares the lanes: its attention and its GPU work of this
            # layer that has not run yet (before its own expert phase) take their turn
            if self.pim_mode:
                other = self.attn_tasks.get((g, layer, 1 - mb))
                if other is not None and not other.placed:
                    pim += self.st.attn_seen[g].get(self.model.layer_types[layer], 0.0)
            for t in self.layer_tasks.get((g, layer, 1 - mb), ()):
                if not t.placed and not t.name.startswith("wsum"):
                    if t.lanes[0].startswith("hbm"):
                        h += float(t.duration)
                    else:
                        gpu += float(t.duration)
        d = c = 0.0
        if disp:
            dt = disp[0]
            if dt.placed:
                d = max(dt.end_ns - t0, 0.0)
            else:
                start = max(free("link0"), t0)
                d = start - t0 + est.cost.comm_ns(EpExchange("dispatch", copies,
                                                             self.full.hidden_size))
            c = d
            if self.tbo:  # the other micro-batch's collectives of this layer still to run
                c += sum(float(t.duration) for t in self.link_tasks.get((layer, 1 - mb), ())
                         if not t.placed and t.name != "combine")
        period = self._period(task, g, layer, mb) if self.tbo else {}
        cycle = self._other_cycle(sched, g, mb, t0) if self.tbo else {}
        return LayerTiming(hbm_ready_ns=h, gpu_ready_ns=gpu, dispatch_ns=d, pim_ready_ns=pim,
                           combine_ready_ns=c, **period, **cycle)

    def _period(self, task: Task, g: int, layer: int, mb: int) -> dict[str, float]:
        """Two-batch overlap: this micro-batch's own chain outside its expert phase (its GPU
        kernels, attention, decision and collectives other than the dispatch) and the compute
        lane's work of both micro-batches in the layer, this one's experts excepted
        (:class:`~sieve.sched.partition.LayerTiming`'s ``chain_ns`` and ``gpu_period_ns``).
        Placed work counts its own time, the rest as built; attention not yet run at its
        observed EMA; the other micro-batch's GPU experts once it has decided.

        The HBM and PIM lanes' period bounds (``hbm_period_ns``, ``pim_period_ns``) and the
        other micro-batch's next attention (``other_attn_*``) are left out: their work is
        mostly the two micro-batches' expert streams and PIM programs, which one decision can
        shift onto the other micro-batch's, and with them each decision answered the other's
        last split and the two drifted apart (docs/system.md §5, docs/schedulers.md). The
        compute lane's work is mostly both micro-batches' fixed kernels, which no split moves
        (the case the bound is for: Qwen3-30B-A3B B=8, tests/test_overlap.py)."""
        def dur(t: Task) -> float:  # its own time once placed, else as built
            return t.work_ns if t.placed else float(t.duration)

        gpu = chain = 0.0
        attn_ema = (self.st.attn_seen[g].get(self.model.layer_types[layer], 0.0)
                    if self.pim_mode else 0.0)
        for m in (mb, 1 - mb):
            for t in self.layer_tasks.get((g, layer, m), ()):
                if t.lanes[0].startswith("gpu"):
                    gpu += dur(t)
                    if m == mb:
                        chain += dur(t)
            sc = self.sched_tasks.get((g, layer, m))
            if sc is not None:
                gpu += dur(sc)
        a = self.attn_tasks.get((g, layer, mb))
        if a is not None:
            chain += dur(a) if a.placed else attn_ema
        chain += dur(task)
        chain += sum(dur(t) for t in self.link_tasks.get((layer, mb), ())
                     if t.name != "dispatch")
        return {"chain_ns": chain, "gpu_period_ns": gpu}

    def _other_cycle(self, sched: Schedule, g: int, mb: int, t0: float) -> dict:
        """Two-batch overlap: when the other micro-batch's GPU expert stream is running on the
        shared HBM lane at this decision's end ``t0``, its projected end and work left there,
        its chain from that end to its next attention and the attention with the rest of its
        chain to its next decision, and whether that attention waits for this split's PIM
        experts (:class:`~sieve.sched.partition.LayerTiming`'s ``other_stream_*``,
        ``other_chain_ns``, ``other_rest_ns``, ``other_attn_on_pim``; ns from ``t0``); empty
        when it runs none, or when its next sampled layer has no decision (a dense layer next,
        or the step's last layer).

        The chain is compute-lane work, as built: that layer's GPU experts' compute and
        weighted sum, the next layer's kernels before its attention; then the attention (the
        observed EMA on PIM, or its prefill attention on the GPU if longer), the kernels after
        it and the decision. Weight loads (on the HBM lane beside the kernels) and collectives
        are left out, so it is a lower bound (docs/system.md §5)."""
        o = 1 - mb
        ld = left = None
        for t, rem in sched.sharers(f"hbm{g}", t0):
            if t.name == "experts_gpu_load" and t.info["mb"] == o:
                ld, left = t, rem
        if ld is None:
            return {}
        lb = ld.info["layer"]
        nxt = self.next_layer.get(lb)
        dec = None if nxt is None else self.sched_tasks.get((g, nxt, o))
        if dec is None or dec.placed:
            return {}
        chain = sum(float(t.duration) for t in self.layer_tasks.get((g, lb, o), ())
                    if not t.placed and t.name in ("experts_gpu", "wsum"))
        rest = prefill = 0.0
        after = False  # past the attention: from its output projection on
        for t in self.layer_tasks.get((g, nxt, o), ()):
            after = after or t.name == "o_proj"
            if t.name == "prefill_attn":  # beside the attention on PIM
                prefill = float(t.duration)
            elif t.lanes[0].startswith("gpu"):
                if after:
                    rest += float(t.duration)
                else:
                    chain += float(t.duration)
        on_pim = self.pim_mode and (g, nxt, o) in self.attn_tasks
        attn = self.st.attn_seen[g].get(self.model.layer_types[nxt], 0.0) if on_pim else 0.0
        rest += max(attn, prefill) + float(dec.duration)
        return {"other_stream_end_ns": max(ld.end_ns - t0, 0.0), "other_stream_left_ns": left,
                "other_chain_ns": chain, "other_rest_ns": rest, "other_attn_on_pim": on_pim}

    def _pim_experts(self, g, layer, mb, part: Partition):
        st = self.st

        def run(start):
            kw = {"order": part.pim_order, "gpu": self.sys.gpu,
                  "calib": self.sys.gpu_calibration, "device": st.devices[g],
                  "start_ns": start}
            if part.mapping == "tp":
                r = run_moe_tp(self.sys.memory, self.ffn_shape, part.pim_counts, **kw)
            else:
                r = run_moe_ep(self.sys.memory, self.ffn_shape, part.pim_counts,
                               pcs_per_expert=part.pcs_per_expert, placement=part.placement,
                               **kw)
            dur = r.total_ns + (r.pim.start_ns - start)  # the device starts on its next tick
            # what each expert took itself: its kernels under the "layer" order (the one GPU
            # step is the program's, seen as its once-paid time), its span otherwise
            own = (r.expert_busy_ns if part.pim_order == "layer"
                   else r.expert_end_ns - r.expert_start_ns)
            if part.mapping == "tp":
                paid = r.total_ns - float(own.sum())
            else:  # groups run side by side: the busiest group's remainder
                grp = part.placement[r.expert_ids]
                per = np.bincount(grp, weights=own, minlength=int(grp.max()) + 1)
                paid = r.total_ns - float(per.max())
            # visible to the scheduler when the program has ended
            st._push(g, r.pim.start_ns + r.total_ns, "experts",
                     (r.tokens, own, part.mapping, part.pcs_per_expert, max(paid, 0.0)))
            self._count_pim(r.pim)
            if g == 0:
                self.channels.append({"kind": "experts", "layer": layer, "mb": mb,
                                      "start_ns": start, "end_ns": start + dur,
                                      "pc_busy_ns": r.pim.pc_busy_ns.copy()})
            return dur

        return _in_stage("pim", run)

    def _count_pim(self, res) -> None:
        """Profiling counters: engine commands reported and actually simulated."""
        if res is not None and enabled():
            n = sum(res.command_counts.values())
            count("pim_programs", 1)
            count("pim_commands", n)
            count("pim_commands_simulated",
                  n * res.simulated_channels / self.sys.memory.org.total_channels)

    # ---- the step ------------------------------------------------------------------------------
    def run(self) -> StepResult:
        b, st = self.b, self.st
        self._moe = set(self.full.moe_layer_ids)
        trace_index = {lid: i for i, lid in enumerate(b.layer_ids)}
        covered = [i for i in range(self.full.n_layers)
                   if i not in self._moe or i in trace_index]
        if self.o.layers is None and len(covered) < self.full.n_layers:
            missing = sorted(self._moe - set(trace_index))
            raise ConfigError(f"step: the routing has no layer {missing[0]} of "
                              f"{self.full.name!r} (it covers {len(trace_index)} of "
                              f"{len(self._moe)} MoE layers: simulate a sample of them with "
                              "layers=K)")
        # the layers a step of the whole model would sample; a routing that lacks one of them
        # (an imported trace of some layers) samples among the layers it covers instead
        paired = self.o.microbatches > 1
        layers = _sampled_layers(self.full, self.o.layers, neighbours=paired)
        if any(x in self._moe and x not in trace_index for x in layers):
            layers = _sampled_layers(self.full, self.o.layers, covered, neighbours=paired)
        self.next_layer = dict(zip(layers, layers[1:]))  # a decision looks one layer ahead
        self.prev_layer = dict(zip(layers[1:], layers))
        start = self.sched.add(Task("step_start", tuple(
            f"{k}{g}" for g in range(self.n_sim) for k in ("gpu", "hbm", "pim", "link")),
            0.0, info={"gpu": -1, "layer": -1, "mb": -1, "kind": "sync"}))
        prev = {mb: [start] * self.n_sim for mb in range(self.o.microbatches)}
        ends: list[list[Task]] = []  # the last tasks of each sampled layer
        with stage("dag"):
            for i, layer in enumerate(layers):
                for mb in range(self.o.microbatches):
                    prev[mb] = self.layer(trace_index.get(layer, -1), layer, mb, prev[mb],
                                          prio=2 * i + mb)
                ends.append([t for mb in prev for t in prev[mb]])
            for g in range(self.n_sim):
                reqs = np.flatnonzero(self.req_gpu == g)
                shards = self.n_gpus if self.tp else 1
                head = self.gpu_tasks("lm_head", [lm_head_op(self.full, int(reqs.size), shards)],
                                      g, [prev[mb][g] for mb in prev], -1, -1, 10 ** 6)
                if head is not None:
                    self.head_tasks[g] = head
                self.gpu_tasks("sampler", [sampler_op(self.full, int(reqs.size), shards)], g,
                               [head] if head is not None else [], -1, -1, 10 ** 6)
        # shift: every task of this step starts at the state's clock
        self._shift()
        with stage("list_scheduling"):
            self.sched.run()
        res = self._result(layers, ends)
        st.now_ns = self.t0 + res.makespan_ns
        st.steps += 1
        return res

    def _shift(self) -> None:
        # the step starts at device time t0: the start task lasts t0 (it holds every lane)
        self.sched.tasks[0].duration = self.t0

    def _result(self, layers, ends) -> StepResult:
        s, t0 = self.sched, self.t0
        makespan = s.makespan_ns - t0
        layer_ends = [max(t.end_ns for t in ts) - t0 for ts in ends]
        layers_end = layer_ends[-1]
        step_ns = (_scaled_layers_ns(self.full, layers, layer_ends, self.o.microbatches > 1)
                   + (makespan - layers_end))
        first = s.tasks[0]  # step_start holds every lane for the clock's t0
        busy = {lane: s.busy_ns(lane) - (first.duration_ns if ts and ts[0] is first else 0.0)
                for lane, ts in s.lanes.items()}
        tasks = [{"name": t.name, **t.info, "start_ns": t.start_ns, "end_ns": t.end_ns}
                 for t in s.tasks if t.placed and t.name != "step_start"]
        crit = [{"name": t.name, **t.info, "start_ns": t.start_ns, "end_ns": t.end_ns}
                for t in s.critical_path() if t.name != "step_start"]
        b = self.b
        dec = int((b.phase == DECODE).sum())
        pre = b.phase == PREFILL
        return StepResult(step_ns=step_ns, makespan_ns=makespan, layers_ns=layers_end,
                          layers_simulated=len(layers), n_layers=self.full.n_layers,
                          start_ns=t0, busy_ns=busy, critical_path=crit, tasks=tasks,
                          partitions=self.parts, pim_channels=self.channels,
                          decode_tokens=dec + int(pre.sum()),
                          prefill_tokens=int(b.tokens[pre].sum()))


def _in_stage(name: str, fn):
    """``fn`` timed as stage ``name`` when profiling (sieve.stages)."""
    st = stage(name)

    def timed(*args):
        with st:
            return fn(*args)

    return timed


def _dense_shape(model):
    from sieve.hw.cost import ExpertShape

    return ExpertShape(model.hidden_size, model.dense_intermediate_size, gated=True)


def simulate_step(state: SystemState, batch: StepBatch) -> StepResult:
    """Simulate one step on ``state`` (its devices, tables and clock advance)."""
    if not isinstance(state, SystemState):
        raise ConfigError("simulate_step: state must be a SystemState")
    if not isinstance(batch, StepBatch):
        raise ConfigError("simulate_step: batch must be a StepBatch")
    k = batch.expert_ids.shape[2]
    if k != state.model.top_k:
        raise ConfigError(f"step: routing is top-{k}, model {state.model.name!r} is "
                          f"top-{state.model.top_k}")
    if batch.expert_ids.size and (batch.expert_ids.min() < 0 or
                                  batch.expert_ids.max() >= state.model.n_experts):
        raise ConfigError(f"step: expert ids must lie in [0, {state.model.n_experts})")
    return _Builder(state, batch).run()


def _hbm_lane(lane: str) -> bool:
    """A GPU's HBM bandwidth is a shared lane: concurrent weight streams split it (dag)."""
    return lane.startswith("hbm")
