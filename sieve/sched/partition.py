"""What a scheduler is given (:class:`LayerLoad`) and what it returns (:class:`Partition`).

A scheduler decides, for one MoE layer on one GPU, which activated experts run on the GPU and
which on PIM (seed §5). Its inputs are the per-expert token counts of the GPU's local experts,
what already occupies PIM during the layer (attention), the layer's inter-GPU communication
time (independent of the split, seed §5) and the GPU work of the layer that is not a routed
expert (the seed's ``T_comp`` counts "all operations except decode-phase attention and
PIM-side expert computation"). Times are nanoseconds.

This module owns plain data; it decides nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.cost import PIM_MAPPINGS, PIM_ORDERS, ExpertShape, GpuOp, counts_array
from sieve.validate import check_number

__all__ = ["LayerLoad", "LayerTiming", "Partition"]


@dataclass(frozen=True)
class LayerTiming:
    """When the resources a layer's expert phase needs become free, as the step knows at the
    decision (ns from the decision's end; the critical-path Sieve, :mod:`sieve.sched.cp`), and
    under two-batch overlap each lane's work of the layer: the two micro-batches share the
    lanes, so a layer's period is also bounded by each lane's work of both in it. The period
    fields are 0 outside two-batch overlap (0 drops the bound: the estimate is then the end of
    the expert phase alone).

    Attributes:
        hbm_ready_ns: the GPU's HBM lane is free to stream expert weights.
        gpu_ready_ns: the GPU's compute lane is free (other GPU work of the layer queued).
        dispatch_ns: the tokens dispatched from other GPUs have arrived (0 on one GPU).
        pim_ready_ns: the PIM units are free (attention, or the other micro-batch's work).
        combine_ready_ns: the link is free for the layer's combine (the other micro-batch's
            collectives queued before it under two-batch overlap; 0 when nothing waits).
        chain_ns: this micro-batch's own work of the layer outside its expert phase (its GPU
            kernels, attention, decision and collectives other than the dispatch), in order.
        gpu_period_ns: the compute-lane work of both micro-batches in the layer, this one's
            experts excepted (kernels, decisions, the other's GPU experts once decided).
        hbm_period_ns: the HBM lane's weight streams of both, likewise.
        pim_period_ns: the PIM units' work of both, likewise (attention, the other's PIM
            experts once run).
        other_attn_ready_ns: two-batch overlap: when the other micro-batch's next attention
            could start on PIM if nothing of this split delayed it; None when not only its
            own kernels stand before it (placed, or it waits for a decision, an expert phase
            or a collective). The step gives its remaining GPU kernels' compute from a free
            compute lane (their weight loads share the HBM lane and are left out: a lower
            bound).
        other_attn_blocked_ns: kernels of that chain that wait for this micro-batch's whole
            GPU expert stream, as on a first-come-first-served HBM lane (None: none do; the
            step's HBM lane is shared, so it never sets it).
        other_stream_end_ns: two-batch overlap: when the other micro-batch's GPU expert
            weight stream, still running on the shared HBM lane, would end if nothing joined
            it (None: none is running; then the next three fields are None too).
        other_stream_left_ns: that stream's work left, at the lane's whole rate: the most
            this split's stream can delay it (processor sharing: a stream of ``W`` beside it
            delays it by ``min(W, left)``).
        other_chain_ns: the other micro-batch's chain from that stream's end to the start of
            its next attention: its expert kernels and weighted sum, the next layer's kernels
            before the attention.
        other_rest_ns: its next attention (observed EMA, or its prefill attention on the GPU if
            longer) and its chain after it up to and including its next decision. With the
            three fields above, a lower bound on when that micro-batch decides again, which
            this split's stream moves.
        other_attn_on_pim: that attention runs on the PIM units after this split's PIM
            experts, so it also cannot start before they end (False: it does not wait for
            them; always False without the fields above).
    """

    hbm_ready_ns: float = 0.0
    gpu_ready_ns: float = 0.0
    dispatch_ns: float = 0.0
    pim_ready_ns: float = 0.0
    combine_ready_ns: float = 0.0
    chain_ns: float = 0.0
    gpu_period_ns: float = 0.0
    hbm_period_ns: float = 0.0
    pim_period_ns: float = 0.0
    other_attn_ready_ns: float | None = None
    other_attn_blocked_ns: float | None = None
    other_stream_end_ns: float | None = None
    other_stream_left_ns: float | None = None
    other_chain_ns: float | None = None
    other_rest_ns: float | None = None
    other_attn_on_pim: bool = False

    def __post_init__(self):
        for n in ("hbm_ready_ns", "gpu_ready_ns", "dispatch_ns", "pim_ready_ns",
                  "combine_ready_ns", "chain_ns", "gpu_period_ns", "hbm_period_ns",
                  "pim_period_ns", "other_attn_ready_ns", "other_attn_blocked_ns",
                  "other_stream_end_ns", "other_stream_left_ns", "other_chain_ns",
                  "other_rest_ns"):
            v = getattr(self, n)
            if v is not None or not n.startswith("other_"):
                object.__setattr__(self, n, check_number("layer timing", n, v))
        if self.other_attn_ready_ns is None and self.other_attn_blocked_ns is not None:
            raise ConfigError("layer timing: other_attn_blocked_ns needs other_attn_ready_ns")
        cyc = (self.other_stream_end_ns, self.other_stream_left_ns, self.other_chain_ns,
               self.other_rest_ns)
        if any(v is None for v in cyc) and any(v is not None for v in cyc):
            raise ConfigError("layer timing: other_stream_end_ns, other_stream_left_ns, "
                              "other_chain_ns and other_rest_ns go together (all four or none)")
        if not isinstance(self.other_attn_on_pim, (bool, np.bool_)):
            raise ConfigError(f"layer timing: other_attn_on_pim must be True or False, got "
                              f"{self.other_attn_on_pim!r}")
        object.__setattr__(self, "other_attn_on_pim", bool(self.other_attn_on_pim))
        if self.other_attn_on_pim and self.other_stream_end_ns is None:
            raise ConfigError("layer timing: other_attn_on_pim needs other_stream_end_ns")


@dataclass(frozen=True, eq=False)
class LayerLoad:
    """One MoE layer on one GPU, as a scheduler sees it.

    Attributes:
        counts: tokens routed to each local expert of this GPU (0 = not activated).
        shape: the expert FFN shape (every expert of the layer has it).
        pim_busy_ns: PIM time already taken during the layer (attention on PIM).
        comm_ns: inter-GPU communication time of the layer (dispatch + combine, AllGather of
            the routing maps); the same whatever the split.
        gpu_fixed: GPU operations of the layer that are not routed experts (router, shared
            experts, projections); they share the GPU with the GPU-side experts.
        timing: when the expert phase's resources are free (:class:`LayerTiming`), for the
            schedulers that estimate the layer's critical path; None: not known (a layer
            outside a step: PIM free after ``pim_busy_ns``, everything else at once).
        lookahead: two-batch overlap: ``f(on_pim) -> ns or None``, a split rated by the
            step's list schedule of both micro-batches from the decision to their next
            decisions and, under expert parallelism, their next dispatches (when the last of
            those starts, ns from the decision's end; undecided splits by stand-ins, the
            other micro-batch's on this GPU guessed two ways and the lower rating kept; the
            step's lanes and its estimator's costs, :mod:`sieve.sched.cp`); None outside
            two-batch overlap, or where no next decision follows. A method with
            ``look_layers`` > 1 (:class:`sieve.sched.methods.Method`) gets a look to the
            decisions that many sampled layers on.
        saving_lookahead: the look that rates what a decision saves over all on PIM (the
            skip rule's saving, :mod:`sieve.sched.amortize`) where it is not ``lookahead``
            itself: the one-layer look of a method whose ``lookahead`` watches further
            (None: ``lookahead``'s own ratings).
        static_ties: the look breaks an exact tie of its best rating toward a static split
            (all on PIM, then all on the GPU) and counts all on the GPU as saving nothing over
            the split a skipped decision can run (``sieve-cp``, not ``sieve-cp-pimskip``; set by
            the step only where no other GPU's decision enters the look: one GPU, two-batch
            overlap, like micro-batches).
    """

    counts: np.ndarray
    shape: ExpertShape
    pim_busy_ns: float = 0.0
    comm_ns: float = 0.0
    gpu_fixed: tuple[GpuOp, ...] = ()
    timing: LayerTiming | None = None
    lookahead: Callable[[np.ndarray], float | None] | None = None
    static_ties: bool = False
    saving_lookahead: Callable[[np.ndarray], float | None] | None = None

    def __post_init__(self):
        object.__setattr__(self, "counts", counts_array("layer load", self.counts))
        if not isinstance(self.static_ties, bool):
            raise ConfigError("layer load: static_ties must be a bool")
        if not isinstance(self.shape, ExpertShape):
            raise ConfigError(f"layer load: shape must be an ExpertShape, got "
                              f"{type(self.shape).__name__}")
        for n in ("pim_busy_ns", "comm_ns"):
            object.__setattr__(self, n, check_number("layer load", n, getattr(self, n)))
        ops = tuple(self.gpu_fixed)
        if any(not isinstance(o, GpuOp) for o in ops):
            raise ConfigError("layer load: gpu_fixed must hold GPU operations (sieve.hw.cost)")
        object.__setattr__(self, "gpu_fixed", ops)
        if self.timing is not None and not isinstance(self.timing, LayerTiming):
            raise ConfigError("layer load: timing must be a LayerTiming or None")
        for n in ("lookahead", "saving_lookahead"):
            f = getattr(self, n)
            if f is not None and not callable(f):
                raise ConfigError(f"layer load: {n} must be a callable or None")

    @property
    def active(self) -> np.ndarray:
        """Ids of the activated experts (count > 0)."""
        return np.flatnonzero(self.counts)


@dataclass(frozen=True, eq=False)
class Partition:
    """A scheduler's decision for one layer on one GPU.

    Attributes:
        method: the scheduler that made it.
        counts: the input token counts (per local expert).
        on_pim: per local expert, True when it runs on PIM (False for inactive experts).
        pim_order: order of the serialized GEMVs on PIM (:data:`sieve.hw.cost.PIM_ORDERS`).
        mapping: "tp" (experts sharded over every pseudo-channel) or "ep" (channel groups).
        attention_on_pim: False only for the GPU-only method (no PIM at all).
        est_comm_ns, est_gpu_ns, est_pim_ns: the scheduler's own estimates of the three
            terms of seed Equation 1 for this split (its estimator; not simulated times).
        pcs_per_expert: EP group size (mapping "ep").
        placement: EP group of every local expert (mapping "ep").
        est_group_pim_ns: EP: the estimated PIM load of every group (PIMoE's channel loads).
        steps: candidate moves the algorithm evaluated (its work, for the overhead model).
        est_gain_ns: what the split saves over the method's starting split by the method's own
            estimate (``sieve-cp``: all on PIM; None for methods that do not say), read by
            :class:`sieve.sched.amortize.DecisionMemo`.
    """

    method: str
    counts: np.ndarray
    on_pim: np.ndarray
    pim_order: str = "expert"
    mapping: str = "tp"
    attention_on_pim: bool = True
    est_comm_ns: float = 0.0
    est_gpu_ns: float = 0.0
    est_pim_ns: float = 0.0
    pcs_per_expert: int | None = None
    placement: np.ndarray | None = None
    est_group_pim_ns: np.ndarray | None = field(default=None, repr=False)
    steps: int = 0
    est_gain_ns: float | None = None

    @classmethod
    def _trusted(cls, method: str, counts: np.ndarray, on_pim: np.ndarray, pim_order: str,
                 mapping: str, est_comm_ns: float, est_gpu_ns: float, est_pim_ns: float,
                 steps: int, est_gain_ns: float | None = None) -> Partition:
        """Build without re-validating: for callers whose ``on_pim`` is a bool array of
        ``counts``' shape that is False where ``counts`` is 0 (the compiled Sieve loop)."""
        p = object.__new__(cls)
        d = p.__dict__
        d.update(method=method, counts=counts, on_pim=on_pim, pim_order=pim_order,
                 mapping=mapping, attention_on_pim=True, est_comm_ns=est_comm_ns,
                 est_gpu_ns=est_gpu_ns, est_pim_ns=est_pim_ns, pcs_per_expert=None,
                 placement=None, est_group_pim_ns=None, steps=steps,
                 est_gain_ns=est_gain_ns)
        return p

    def __post_init__(self):
        mask = np.asarray(self.on_pim, dtype=bool)
        if mask.shape != self.counts.shape:
            raise ConfigError(f"partition: on_pim has shape {mask.shape}, counts "
                              f"{self.counts.shape}")
        object.__setattr__(self, "on_pim", mask & (self.counts > 0))
        if self.pim_order not in PIM_ORDERS:
            raise ConfigError(f"partition: pim_order {self.pim_order!r} unknown (known: "
                              f"{', '.join(PIM_ORDERS)})")
        if self.mapping not in PIM_MAPPINGS:
            raise ConfigError(f"partition: mapping {self.mapping!r} unknown (known: "
                              f"{', '.join(PIM_MAPPINGS)})")

    @property
    def pim_experts(self) -> np.ndarray:
        """Local ids of the experts on PIM."""
        return np.flatnonzero(self.on_pim)

    @property
    def gpu_experts(self) -> np.ndarray:
        """Local ids of the activated experts on the GPU."""
        return np.flatnonzero((self.counts > 0) & ~self.on_pim)

    @property
    def gpu_counts(self) -> np.ndarray:
        """Token counts with the PIM experts zeroed (what the GPU's grouped GEMM gets)."""
        return np.where(self.on_pim, 0, self.counts)

    @property
    def pim_counts(self) -> np.ndarray:
        """Token counts with the GPU experts zeroed (what the PIM program gets)."""
        return np.where(self.on_pim, self.counts, 0)

    @property
    def est_total_ns(self) -> float:
        """The estimate of seed Equation 1: ``max(T_comm, T_GPU(G), T_PIM(S))``."""
        return max(self.est_comm_ns, self.est_gpu_ns, self.est_pim_ns)

    def summary(self) -> dict:
        """Numbers for tables (ids as lists)."""
        return {
            "method": self.method, "mapping": self.mapping, "pim_order": self.pim_order,
            "attention_on_pim": self.attention_on_pim,
            "experts_active": int((self.counts > 0).sum()),
            "experts_gpu": int(self.gpu_experts.size), "experts_pim": int(self.pim_experts.size),
            "tokens_gpu": int(self.gpu_counts.sum()), "tokens_pim": int(self.pim_counts.sum()),
            "est_comm_ns": self.est_comm_ns, "est_gpu_ns": self.est_gpu_ns,
            "est_pim_ns": self.est_pim_ns, "est_total_ns": self.est_total_ns,
        }
