"""The precise cost model: calibrated GPU and interconnect models, PIM on the engine (ns).

:class:`EngineCostModel` answers the simulator's three questions
(:class:`sieve.hw.cost.CostModel`) with the detailed models:

* GPU operations: :mod:`sieve.hw.gpu` (calibrated, tile- and wave-quantised roofline), one
  kernel after another for a list;
* communication: :mod:`sieve.hw.comm` (alpha-beta per tier, fitted to NCCL and DeepEP);
* PIM operations: the cycle-accurate engine through :mod:`sieve.pim.ffn` (experts, TP or EP)
  and :mod:`sieve.pim.attention`; a list runs back to back (its times add). Each PIM entry
  includes the GPU work the PIM program waits for (activation between two GEMVs, softmax) and
  its GPU tail (partial-sum reduction), as the lowering reports them (``total_ns``).

Results are memoised per operation (the engine and the models are deterministic, so an entry
equals a fresh evaluation). Everything is in nanoseconds, as the models below return it: no
conversion happens here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sieve.errors import ConfigError
from sieve.hw import comm, gpu
from sieve.hw.cost import (
    Collective,
    CommOp,
    DecodeAttention,
    EpExchange,
    ExpertShape,
    Gemm,
    GpuOp,
    GroupedExperts,
    MemoryStream,
    PimAttention,
    PimExperts,
    PimOp,
    PrefillAttention,
    as_ops,
)
from sieve.hw.system import SystemConfig, get_system
from sieve.pim.attention import run_attention
from sieve.pim.ffn import FfnShape, run_moe_ep, run_moe_tp

__all__ = ["EngineCostModel"]


def _shape(s: ExpertShape) -> FfnShape:
    return FfnShape(s.hidden, s.intermediate, s.gated)


class EngineCostModel:
    """Calibrated GPU/link models and the cycle-accurate PIM engine behind one interface.

    Args:
        system: the system (preset name, file or :class:`SystemConfig`).
        gpu_fixed_ns: fixed cost of the GPU step between two PIM GEMVs (default: the GPU
            calibration's bf16 kernel cost, :mod:`sieve.pim.host`).
    """

    def __init__(self, system: str | SystemConfig, *, gpu_fixed_ns: float | None = None):
        self.system = get_system(system)
        self.gpu_fixed_ns = gpu_fixed_ns
        self._memo: dict[tuple, float] = {}
        self.hits = 0
        self.misses = 0

    def __repr__(self) -> str:
        return f"EngineCostModel({self.system.name!r})"

    # ---- GPU ----------------------------------------------------------------------------------
    def _gpu_one(self, op: GpuOp) -> float:
        s = self.system
        kw: dict[str, Any] = {"gpu": s.gpu, "calib": s.gpu_calibration}
        d = s.dtype
        if isinstance(op, GroupedExperts):
            sh = op.shape
            return gpu.grouped_gemm_time_ns(op.tokens, sh.hidden, sh.intermediate,
                                            op.dtype or d, gated=sh.gated, **kw)
        if isinstance(op, Gemm):
            return gpu.gemm_time_ns(op.m, op.n, op.k, op.dtype or d, **kw)
        if isinstance(op, DecodeAttention):
            return gpu.attention_decode_time_ns(op.context_lens, op.n_q_heads, op.n_kv_heads,
                                                op.head_dim, op.kv_dtype, **kw)
        if isinstance(op, PrefillAttention):
            return gpu.attention_prefill_time_ns(op.seq_lens, op.n_q_heads, op.n_kv_heads,
                                                 op.head_dim, d, **kw)
        if isinstance(op, MemoryStream):
            t0 = s.gpu_calibration.t0_gemm_ns(d) if op.launch else 0.0
            return gpu.kernel_time_ns(op.n_bytes, 0.0, t0_ns=t0, **kw)
        raise ConfigError(f"engine cost model: no GPU model for {type(op).__name__}")

    def gpu_ns(self, ops: GpuOp | Sequence[GpuOp]) -> float:
        """The kernels one after another (ns)."""
        return sum(self._gpu_one(op) for op in as_ops(ops, GpuOp, "engine cost model (GPU)"))

    # ---- communication -------------------------------------------------------------------------
    def _comm_one(self, op: CommOp) -> float:
        s = self.system
        if isinstance(op, Collective):
            f = {"all_gather": comm.all_gather_time_ns, "all_reduce": comm.all_reduce_time_ns,
                 "all_to_all": comm.all_to_all_time_ns,
                 "tp_all_reduce": comm.tp_all_reduce_time_ns}[op.kind]
            return f(op.size_bytes, s, n_gpus=op.n_gpus)
        if isinstance(op, EpExchange):
            return comm.ep_exchange_time_ns(op.copies, op.hidden, s, op=op.kind,
                                            payload=op.payload)
        raise ConfigError(f"engine cost model: no communication model for {type(op).__name__}")

    def comm_ns(self, ops: CommOp | Sequence[CommOp]) -> float:
        """The operations one after another (ns)."""
        return sum(self._comm_one(op)
                   for op in as_ops(ops, CommOp, "engine cost model (communication)"))

    # ---- PIM ---------------------------------------------------------------------------------
    def _pim_key(self, op: PimOp) -> tuple:
        if isinstance(op, PimExperts):
            return ("experts", op.tokens.tobytes(), op.shape, op.mapping, op.order,
                    op.pcs_per_expert,
                    None if op.placement is None else op.placement.tobytes())
        if isinstance(op, PimAttention):
            return ("attention", id(op.model), op.model.name, op.layer,
                    op.context_lens.tobytes())
        raise ConfigError(f"engine cost model: no PIM model for {type(op).__name__}")

    def _pim_one(self, op: PimOp) -> float:
        s = self.system
        if not s.has_pim:
            raise ConfigError(f"engine cost model: system {s.name!r} has no PIM units "
                              f"(memory {s.memory.name!r})")
        key = self._pim_key(op)
        if key in self._memo:
            self.hits += 1
            return self._memo[key]
        self.misses += 1
        kw = {"gpu": s.gpu, "calib": s.gpu_calibration, "gpu_fixed_ns": self.gpu_fixed_ns}
        if isinstance(op, PimExperts):
            if not op.tokens.any():
                t = 0.0
            elif op.mapping == "tp":
                t = run_moe_tp(s.memory, _shape(op.shape), op.tokens, order=op.order,
                               **kw).total_ns
            else:
                t = run_moe_ep(s.memory, _shape(op.shape), op.tokens,
                               pcs_per_expert=op.pcs_per_expert, placement=op.placement,
                               order=op.order, **kw).total_ns
        else:
            t = 0.0 if op.context_lens.size == 0 else run_attention(
                s.memory, op.model, op.layer, op.context_lens, **kw).total_ns
        self._memo[key] = float(t)
        return self._memo[key]

    def pim_ns(self, ops: PimOp | Sequence[PimOp]) -> float:
        """The operations back to back on the engine (ns)."""
        return sum(self._pim_one(op) for op in as_ops(ops, PimOp, "engine cost model (PIM)"))
