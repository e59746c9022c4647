"""The one cost interface of the simulator: operations as data, three questions, nanoseconds.

Every time model in sieve answers the same three questions, whatever its precision:

* :meth:`CostModel.gpu_ns` - how long does this GPU work take (a kernel, or the GPU side of a
  layer as a list of kernels)?
* :meth:`CostModel.comm_ns` - how long do these collectives take?
* :meth:`CostModel.pim_ns` - how long does this PIM work take?

The work is described by small frozen dataclasses (the *operations* below). A model receives
a single operation or a sequence of them and decides how a sequence combines: the scheduler's
roofline estimate (:class:`sieve.hw.estimates.RooflineCostModel`) adds bytes and FLOPs and
takes ``max(T_offchip, T_comp)`` as the seed's Equation 1 does; the precise model
(:class:`sieve.pim.cost.EngineCostModel`) runs the calibrated GPU kernels one after another and
the PIM program on the cycle-accurate engine. A scheduler handed either one calls the same
methods (:mod:`sieve.sched`).

Time unit: every method returns nanoseconds (float). Nanoseconds are the simulator's one time
unit (the engine's natural unit); conversion to seconds, ms or tokens/s happens only in result
tables and plots, whose column names say the unit.

This module owns the operation types and the protocol. It computes nothing and imports no
time model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from sieve.errors import ConfigError
from sieve.validate import check_number

if TYPE_CHECKING:  # pragma: no cover
    from sieve.hw.system import SystemConfig

__all__ = [
    "COLLECTIVES",
    "EP_EXCHANGES",
    "PIM_MAPPINGS",
    "PIM_ORDERS",
    "Collective",
    "CommOp",
    "CostModel",
    "DecodeAttention",
    "EpExchange",
    "ExpertShape",
    "Gemm",
    "GpuOp",
    "GroupedExperts",
    "MemoryStream",
    "PimAttention",
    "PimExperts",
    "PimOp",
    "PrefillAttention",
    "as_ops",
    "counts_array",
]

#: Collectives of :class:`Collective`.
COLLECTIVES = ("all_gather", "all_reduce", "all_to_all", "tp_all_reduce")
#: Expert-parallel exchanges of :class:`EpExchange`.
EP_EXCHANGES = ("dispatch", "combine")
#: How experts are spread over the PIM channels: tensor parallelism over every pseudo-channel
#: (Sieve, seed §6) or expert parallelism over groups of pseudo-channels (PIMoE, seed §7).
PIM_MAPPINGS = ("tp", "ep")
#: Order of an expert's serialized GEMVs on PIM (sieve.pim.ffn): per token, per expert, per
#: layer.
PIM_ORDERS = ("token", "expert", "layer")


def _int(who: str, name: str, v: Any, lo: int = 0) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ConfigError(f"{who}: {name} must be an integer >= {lo}, got {v!r}")
    return int(v)


def counts_array(who: str, tokens: Any) -> np.ndarray:
    """A 1-D int64 array of token counts >= 0 (one per expert), or ConfigError."""
    if isinstance(tokens, (str, bytes)):
        raise ConfigError(f"{who}: token counts must be a sequence of integers, got {tokens!r}")
    arr = np.atleast_1d(np.asarray(tokens))
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu") or (
            arr.size and arr.min() < 0):
        raise ConfigError(f"{who}: token counts must be a 1-D sequence of integers >= 0, got "
                          f"{tokens!r}")
    return arr.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ExpertShape:
    """One expert FFN: gate/up ``(2I or I) x H``, down ``H x I`` (the same for every expert
    of a layer, seed §3.3)."""

    hidden: int
    intermediate: int
    gated: bool = True

    def __post_init__(self):
        for n in ("hidden", "intermediate"):
            object.__setattr__(self, n, _int("expert FFN", n, getattr(self, n), 1))
        if not isinstance(self.gated, (bool, np.bool_)):
            raise ConfigError(f"expert FFN: gated must be a bool, got {self.gated!r}")

    @property
    def up_rows(self) -> int:
        return (2 if self.gated else 1) * self.intermediate

    @property
    def weights(self) -> int:
        """Weight elements of one expert (both matrices)."""
        return (self.up_rows + self.intermediate) * self.hidden

    @property
    def weight_bytes_bf16(self) -> int:
        return 2 * self.weights

    @property
    def flops_per_token(self) -> int:
        return 2 * self.weights


# ---------------------------------------------------------------------------------------------
# GPU operations
# ---------------------------------------------------------------------------------------------


class GpuOp:
    """Marker base of GPU operations."""


@dataclass(frozen=True, eq=False)
class GroupedExperts(GpuOp):
    """The experts of one layer that run on the GPU, as grouped GEMMs (gate/up, then down);
    ``tokens[e]`` tokens for expert ``e`` (experts with 0 tokens cost nothing). ``dtype``: the
    weights' dtype name when it differs from the system's (e.g. gpt-oss experts in mxfp4)."""

    tokens: np.ndarray
    shape: ExpertShape
    dtype: str | None = None

    def __post_init__(self):
        object.__setattr__(self, "tokens", counts_array("grouped experts", self.tokens))


@dataclass(frozen=True)
class Gemm(GpuOp):
    """A dense GEMM ``C[m, n] = A[m, k] @ W[k, n]`` with ``W`` streamed from HBM (``m`` =
    tokens): QKV/O projections, router, dense FFN, LM head."""

    m: int
    n: int
    k: int
    dtype: str | None = None  # None: the system's dtype

    def __post_init__(self):
        for f in ("m", "n", "k"):
            object.__setattr__(self, f, _int("GEMM", f, getattr(self, f)))


@dataclass(frozen=True, eq=False)
class DecodeAttention(GpuOp):
    """Decode attention on the GPU (one new token per sequence): reads every KV cache."""

    context_lens: np.ndarray
    n_q_heads: int
    n_kv_heads: int
    head_dim: int
    kv_dtype: str = "bf16"

    def __post_init__(self):
        object.__setattr__(self, "context_lens", counts_array("decode attention",
                                                              self.context_lens))
        for f in ("n_q_heads", "n_kv_heads", "head_dim"):
            object.__setattr__(self, f, _int("decode attention", f, getattr(self, f), 1))


@dataclass(frozen=True, eq=False)
class PrefillAttention(GpuOp):
    """Prefill (causal FlashAttention-style) attention of new sequences."""

    seq_lens: np.ndarray
    n_q_heads: int
    n_kv_heads: int
    head_dim: int

    def __post_init__(self):
        object.__setattr__(self, "seq_lens", counts_array("prefill attention", self.seq_lens))
        for f in ("n_q_heads", "n_kv_heads", "head_dim"):
            object.__setattr__(self, f, _int("prefill attention", f, getattr(self, f), 1))


@dataclass(frozen=True)
class MemoryStream(GpuOp):
    """A memory-bound GPU kernel that moves ``n_bytes`` through HBM (permute, combine,
    weighted sum, a weight prefetch, the GPU step between two PIM GEMVs). ``launch=False``:
    the bytes are fused into a kernel paid elsewhere (no fixed cost)."""

    n_bytes: float
    launch: bool = True

    def __post_init__(self):
        object.__setattr__(self, "n_bytes", check_number("memory stream", "n_bytes",
                                                         self.n_bytes))


# ---------------------------------------------------------------------------------------------
# Communication operations
# ---------------------------------------------------------------------------------------------


class CommOp:
    """Marker base of communication operations."""


@dataclass(frozen=True)
class Collective(CommOp):
    """An NCCL-style collective over ``n_gpus`` GPUs (None = all GPUs of the system).
    ``size_bytes`` follows nccl-tests: the full result buffer for all-gather/all-reduce, the
    per-GPU send buffer for all-to-all. ``tp_all_reduce`` is a decode step's tensor-parallel
    all-reduce as serving frameworks run it (custom all-reduce in a CUDA graph,
    :func:`sieve.hw.comm.tp_all_reduce_time_ns`)."""

    kind: str
    size_bytes: float
    n_gpus: int | None = None

    def __post_init__(self):
        if self.kind not in COLLECTIVES:
            raise ConfigError(f"collective {self.kind!r}: unknown (known: "
                              f"{', '.join(COLLECTIVES)})")
        object.__setattr__(self, "size_bytes", check_number("collective", "size_bytes",
                                                            self.size_bytes))
        if self.n_gpus is not None:
            object.__setattr__(self, "n_gpus", _int("collective", "n_gpus", self.n_gpus, 1))


@dataclass(frozen=True, eq=False)
class EpExchange(CommOp):
    """Expert-parallel dispatch or combine for an exact routing: ``copies[i, j]`` = (token,
    expert) copies GPU ``i`` sends GPU ``j`` in the dispatch (the combine returns them).
    ``payload``: bytes format per copy (``None``: fp8 dispatch, bf16 combine, as DeepEP)."""

    kind: str
    copies: np.ndarray
    hidden: int
    payload: str | None = None

    def __post_init__(self):
        if self.kind not in EP_EXCHANGES:
            raise ConfigError(f"EP exchange {self.kind!r}: unknown (known: "
                              f"{', '.join(EP_EXCHANGES)})")
        c = np.asarray(self.copies, dtype=np.float64)
        if c.ndim != 2 or c.shape[0] != c.shape[1] or not np.all(np.isfinite(c)) or (
                c.size and c.min() < 0):
            raise ConfigError(f"EP exchange: copies must be a square (n, n) array of finite "
                              f"counts >= 0, got shape {c.shape}")
        object.__setattr__(self, "copies", c)
        object.__setattr__(self, "hidden", _int("EP exchange", "hidden", self.hidden, 1))


# ---------------------------------------------------------------------------------------------
# PIM operations
# ---------------------------------------------------------------------------------------------


class PimOp:
    """Marker base of PIM operations."""


@dataclass(frozen=True, eq=False)
class PimExperts(PimOp):
    """Experts of one layer on PIM: ``tokens[e]`` tokens for expert ``e`` (0 = not run).

    Attributes:
        mapping: "tp" (every expert sharded over every pseudo-channel, run one after another;
            Sieve) or "ep" (experts placed on groups of pseudo-channels; PIMoE).
        order: order of the serialized GEMVs (:data:`PIM_ORDERS`).
        pcs_per_expert: EP group size (None = the lowering's default).
        placement: EP group of each expert (None = ``e mod n_groups``).
    """

    tokens: np.ndarray
    shape: ExpertShape
    mapping: str = "tp"
    order: str = "token"
    pcs_per_expert: int | None = None
    placement: np.ndarray | None = None

    def __post_init__(self):
        object.__setattr__(self, "tokens", counts_array("PIM experts", self.tokens))
        if self.mapping not in PIM_MAPPINGS:
            raise ConfigError(f"PIM experts: mapping {self.mapping!r} unknown (known: "
                              f"{', '.join(PIM_MAPPINGS)})")
        if self.order not in PIM_ORDERS:
            raise ConfigError(f"PIM experts: order {self.order!r} unknown (known: "
                              f"{', '.join(PIM_ORDERS)})")
        if self.placement is not None:
            object.__setattr__(self, "placement", counts_array("PIM experts placement",
                                                               self.placement))


@dataclass(frozen=True, eq=False)
class PimAttention(PimOp):
    """Decode attention of ``layer`` of ``model`` (a :class:`sieve.model.MoeModel`) for a
    batch whose requests hold ``context_lens`` cached tokens (the new one included), with the
    KV cache spread over the pseudo-channels (seed §7)."""

    model: Any
    layer: int
    context_lens: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    def __post_init__(self):
        object.__setattr__(self, "context_lens", counts_array("PIM attention",
                                                              self.context_lens))
        object.__setattr__(self, "layer", _int("PIM attention", "layer", self.layer))


# ---------------------------------------------------------------------------------------------
# The protocol
# ---------------------------------------------------------------------------------------------


def as_ops(ops: Any, base: type, who: str) -> tuple:
    """A single operation or a sequence of them, as a tuple; ConfigError for anything else."""
    if isinstance(ops, base):
        return (ops,)
    if isinstance(ops, Sequence) and not isinstance(ops, (str, bytes)):
        bad = [type(o).__name__ for o in ops if not isinstance(o, base)]
        if not bad:
            return tuple(ops)
        raise ConfigError(f"{who}: expected {base.__name__} operations, got {', '.join(bad)}")
    raise ConfigError(f"{who}: expected a {base.__name__} or a sequence of them, got "
                      f"{type(ops).__name__}")


@runtime_checkable
class CostModel(Protocol):
    """What a scheduler or the step simulator may ask of any time model (all in ns).

    Attributes:
        system: the resolved system the model times.
    """

    system: SystemConfig

    def gpu_ns(self, ops: GpuOp | Sequence[GpuOp]) -> float:
        """Time of GPU work: one operation, or a list the GPU runs as a whole."""
        ...

    def comm_ns(self, ops: CommOp | Sequence[CommOp]) -> float:
        """Time of inter-GPU communication: one collective, or a list run one after another."""
        ...

    def pim_ns(self, ops: PimOp | Sequence[PimOp]) -> float:
        """Time of PIM work on one GPU's stacks: one operation or a list run back to back."""
        ...
