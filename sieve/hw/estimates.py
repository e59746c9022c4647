"""The Sieve scheduler's cheap estimates (seed §5 "Timing Models"); never used for reported
numbers.

The scheduler runs on the critical path, so the seed prefers lightweight estimates over precise
ones: ``T_offchip`` = bytes moved between HBM and the GPU / HBM bandwidth, ``T_comp`` = GPU
operations / peak compute throughput, ``T_GPU(G) = max(T_offchip, T_comp)`` with the GPU-side
experts batched as one grouped GEMM, and ``T_comm`` = inter-GPU bytes / interconnect bandwidth.
They use *spec* peaks (no efficiency, no launch cost, no tile quantisation). Reported times come
from :mod:`sieve.hw.gpu`, :mod:`sieve.hw.comm` and the PIM engine; docs/validation.md compares both
against the measured tables so the gap between estimate and model is visible.

Two forms, both in nanoseconds: the functions ``t_*_ns`` (one quantity each; they take the
resolved :class:`GpuSpec` or :class:`SystemConfig`) and :class:`RooflineCostModel`, the same
estimates behind the simulator's one cost interface (:class:`sieve.hw.cost.CostModel`), so a
scheduler can be handed it or the precise model. The PIM side of the roofline is the seed's
one-time fallback for unseen token counts: operations / PIM peak throughput (attention: cache
bytes / PIM internal bandwidth).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.comm import payload_bytes
from sieve.hw.cost import (
    Collective,
    CommOp,
    DecodeAttention,
    EpExchange,
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
from sieve.hw.gpu import expert_gemm_cost
from sieve.hw.presets import DType, GpuSpec, get_dtype
from sieve.hw.system import SystemConfig, get_system

__all__ = [
    "RooflineCostModel",
    "t_comm_ns",
    "t_comp_ns",
    "t_dispatch_combine_ns",
    "t_gpu_experts_ns",
    "t_offchip_ns",
]


def _gpu(who: str, gpu: Any) -> GpuSpec:
    if not isinstance(gpu, GpuSpec):
        raise ConfigError(f"{who}: gpu must be a GpuSpec (resolve a preset name once with "
                          f"sieve.hw.get_gpu, or pass SystemConfig.gpu), got {gpu!r}")
    return gpu


def _system(who: str, system: Any) -> SystemConfig:
    if not isinstance(system, SystemConfig):
        raise ConfigError(f"{who}: system must be a SystemConfig (resolve a preset name or "
                          f"file once with sieve.hw.get_system), got {system!r}")
    return system


def t_offchip_ns(n_bytes: float, *, gpu: GpuSpec) -> float:
    """Seed ``T_offchip``: bytes / HBM spec bandwidth (ns; GB/s = bytes/ns)."""
    return float(n_bytes) / _gpu("T_offchip", gpu).hbm_bw_gbs


def t_comp_ns(flops: float, dtype: str | DType = "bf16", *, gpu: GpuSpec) -> float:
    """Seed ``T_comp``: FLOPs / dense tensor peak of the dtype's compute class (ns; TFLOPS x 1e3
    = FLOP/ns). ``dtype`` defaults to the seed's bf16 (§7)."""
    g = _gpu("T_comp", gpu)
    return float(flops) / (g.peak_tflops(get_dtype(dtype)) * 1e3)


def t_gpu_experts_ns(tokens_per_expert, hidden: int, intermediate: int,
                     dtype: str | DType = "bf16", *, gpu: GpuSpec, gated: bool = True) -> float:
    """Seed ``T_GPU(G) = max(T_offchip, T_comp)`` for the experts in G (one grouped GEMM), ns."""
    nbytes, flops = expert_gemm_cost(tokens_per_expert, hidden, intermediate, dtype, gated)
    return max(t_offchip_ns(nbytes, gpu=gpu), t_comp_ns(flops, dtype, gpu=gpu))


def t_comm_ns(n_bytes: float, system: SystemConfig) -> float:
    """Seed ``T_Comm``: bytes / interconnect bandwidth; the slower tier's (IB) when the system
    spans nodes, NVLink otherwise (per GPU, per direction), ns."""
    s = _system("T_comm", system)
    link = s.inter_link if s.n_nodes > 1 else s.intra_link
    return float(n_bytes) / link.bw_gbs  # GB/s = bytes/ns


def t_dispatch_combine_ns(tokens_per_gpu: float, hidden: int, topk: int, system: SystemConfig,
                          act_bytes: float = 2.0) -> float:
    """``T_Comm`` of one layer's EP dispatch + combine under uniform routing: every
    (token, expert) copy that leaves the GPU, out and back, at ``act_bytes`` per element
    (default 2: bf16, seed §7), ns."""
    s = _system("T_comm (dispatch + combine)", system)
    n = s.n_gpus
    if n == 1:
        return 0.0
    remote = float(tokens_per_gpu) * topk * (n - 1) / n
    return t_comm_ns(2.0 * remote * hidden * act_bytes, s)


class RooflineCostModel:
    """The seed's lightweight estimates as a :class:`sieve.hw.cost.CostModel` (ns).

    * GPU: ``max(sum bytes / HBM spec BW, sum FLOPs / dense spec peak)`` over the operations
      (the seed's ``T_GPU = max(T_offchip, T_comp)``, every GPU operation in one sum).
    * Communication: bytes per GPU / link bandwidth per operation and link tier (NVLink inside
      a node, the inter-node link across nodes, in parallel), summed over operations.
    * PIM: FLOPs / PIM peak for experts (TP: all pseudo-channels; EP: the busiest group on its
      share of the peak), cache bytes / PIM internal bandwidth for attention, summed.

    With ``achievable=False`` (default) the GPU and link rates are the spec peaks: no
    efficiency, launch cost or DRAM timing, so every estimate is a lower bound of the precise
    model. ``achievable=True`` divides by the calibrated achievable rates instead (HBM
    ``eta_bw`` x spec bandwidth, ``eta_c`` x tensor peak, link ``eta`` of the AllGather fit):
    the same closed form, still no launch cost or tile quantisation, but not optimistic by the
    GPU's whole efficiency gap (docs/schedulers.md discusses which one the scheduler uses).
    """

    def __init__(self, system: str | SystemConfig, *, achievable: bool = False):
        self.system = get_system(system)
        s = self.system
        self.achievable = bool(achievable)
        cal = s.gpu_calibration
        eta_bw = cal.eta_bw if achievable else 1.0
        eta_c = cal.eta_c(s.gpu.run_dtype(s.dtype)) if achievable else 1.0
        self._hbm_bytes_per_ns = s.gpu.hbm_bw_gbs * eta_bw  # GB/s = bytes/ns
        self._flops_per_ns = s.gpu.peak_tflops(s.dtype) * 1e3 * eta_c
        self._link_eta = s.comm_calibration.ep_dispatch.eta if achievable else 1.0
        self._w = s.dtype.weight_bytes
        self._a = s.dtype.act_bytes
        mem = s.memory
        self._pim_flops_per_ns = mem.pim_peak_tflops * 1e3  # all PCs of one GPU
        self._pim_bytes_per_ns = mem.pim_internal_bandwidth_gbs
        self._n_pcs = mem.org.total_pseudochannels

    def __repr__(self) -> str:
        extra = ", achievable=True" if self.achievable else ""
        return f"RooflineCostModel({self.system.name!r}{extra})"

    # ---- GPU ----------------------------------------------------------------------------------
    def gpu_terms(self, op: GpuOp) -> tuple[float, float]:
        """(HBM bytes, FLOPs) of one GPU operation. An operation in another dtype than the
        system's reports its FLOPs scaled to the system dtype's peak (so that one sum of FLOPs
        divided by that peak gives the compute time)."""
        b, f = self._terms(op)
        dt = getattr(op, "dtype", None)
        if dt is not None and f:
            d = self.system.gpu.run_dtype(get_dtype(dt))
            eta = self.system.gpu_calibration.eta_c(d) if self.achievable else 1.0
            f *= self._flops_per_ns / (self.system.gpu.peak_tflops(d) * 1e3 * eta)
        return b, f

    def _terms(self, op: GpuOp) -> tuple[float, float]:
        w, a = self._w, self._a
        if isinstance(op, GroupedExperts):
            sh = op.shape
            return expert_gemm_cost(op.tokens, sh.hidden, sh.intermediate,
                                    op.dtype or self.system.dtype, sh.gated)
        if isinstance(op, Gemm):
            m, n, k = op.m, op.n, op.k
            if op.dtype is not None:
                d = get_dtype(op.dtype)
                w, a = d.weight_bytes, d.act_bytes
            if m == 0 or n == 0 or k == 0:
                return 0.0, 0.0
            return n * k * w + m * k * a + m * n * 2.0, 2.0 * m * n * k
        if isinstance(op, DecodeAttention):
            ctx = float(op.context_lens.sum())
            kv = 2 if op.kv_dtype in ("bf16", "fp16") else 1
            nbytes = ctx * 2 * op.n_kv_heads * op.head_dim * kv
            nbytes += op.context_lens.size * 2 * op.n_q_heads * op.head_dim * 2.0
            return nbytes, 4.0 * op.n_q_heads * op.head_dim * ctx
        if isinstance(op, PrefillAttention):
            s = op.seq_lens.astype(np.float64)
            flops = 2.0 * op.n_q_heads * op.head_dim * float((s * s).sum())  # causal half
            nbytes = float(s.sum()) * op.head_dim * (2 * op.n_q_heads + 2 * op.n_kv_heads) * a
            return nbytes, flops
        if isinstance(op, MemoryStream):
            return float(op.n_bytes), 0.0
        raise ConfigError(f"roofline cost model: no GPU estimate for {type(op).__name__}")

    def gpu_ns(self, ops: GpuOp | Sequence[GpuOp]) -> float:
        nbytes = flops = 0.0
        for op in as_ops(ops, GpuOp, "roofline cost model (GPU)"):
            b, f = self.gpu_terms(op)
            nbytes += b
            flops += f
        return max(nbytes / self._hbm_bytes_per_ns, flops / self._flops_per_ns)

    # ---- communication -------------------------------------------------------------------------
    def _tiers_ns(self, intra_bytes: float, inter_bytes: float) -> float:
        """Bytes per GPU over NVLink and over the inter-node link, in parallel (max)."""
        s, eta = self.system, self._link_eta
        return max(intra_bytes / (eta * s.intra_link.bw_gbs),
                   inter_bytes / (eta * s.inter_link.bw_gbs))

    def comm_ns(self, ops: CommOp | Sequence[CommOp]) -> float:
        """Per operation: bytes per GPU per link tier / tier bandwidth (the byte accounting of
        :mod:`sieve.hw.comm` without latency or efficiency), summed over operations."""
        s = self.system
        total = 0.0
        for op in as_ops(ops, CommOp, "roofline cost model (communication)"):
            if isinstance(op, Collective):
                n = s.n_gpus if op.n_gpus is None else min(op.n_gpus, s.n_gpus)
                if n <= 1:
                    continue
                g = min(n, s.gpus_per_node)
                if op.kind == "all_to_all":
                    intra, inter = op.size_bytes * (g - 1) / n, op.size_bytes * (n - g) / n
                else:
                    factor = 2.0 if op.kind in ("all_reduce", "tp_all_reduce") else 1.0
                    intra = factor * op.size_bytes * (n - 1) / n  # ring bus bytes
                    inter = intra / g if n > g else 0.0  # one NIC per GPU, parallel rings
                total += self._tiers_ns(intra, inter)
            elif isinstance(op, EpExchange):
                c = op.copies if op.kind == "dispatch" else op.copies.T
                n = c.shape[0]
                if n <= 1:
                    continue
                fmt = op.payload or ("fp8" if op.kind == "dispatch" else "bf16")
                b = payload_bytes(fmt, op.hidden)
                node = np.arange(n) // s.gpus_per_node
                same = node[:, None] == node[None, :]
                intra = np.where(same & ~np.eye(n, dtype=bool), c, 0.0) * b
                inter = np.where(~same, c, 0.0) * b
                total += self._tiers_ns(
                    float(np.maximum(intra.sum(1), intra.sum(0)).max()),
                    float(np.maximum(inter.sum(1), inter.sum(0)).max()))
            else:
                raise ConfigError(f"roofline cost model: no communication estimate for "
                                  f"{type(op).__name__}")
        return total

    # ---- PIM ---------------------------------------------------------------------------------
    def pim_expert_ns(self, shape, n_tokens) -> np.ndarray:
        """The seed's fallback per expert under TP: ``2 * weights * N / PIM peak`` (ns)."""
        n = np.asarray(n_tokens, dtype=np.float64)
        return shape.flops_per_token * n / self._pim_flops_per_ns

    def pim_ns(self, ops: PimOp | Sequence[PimOp]) -> float:
        if self._pim_flops_per_ns <= 0:
            raise ConfigError(f"roofline cost model: system {self.system.name!r} has no PIM "
                              f"units (memory {self.system.memory.name!r})")
        total = 0.0
        for op in as_ops(ops, PimOp, "roofline cost model (PIM)"):
            if isinstance(op, PimExperts):
                t = self.pim_expert_ns(op.shape, op.tokens)
                if op.mapping == "tp":
                    total += float(t.sum())
                else:
                    g = op.pcs_per_expert or _ep_group(self._n_pcs, t.size)
                    n_groups = max(self._n_pcs // g, 1)
                    place = (np.arange(t.size) % n_groups if op.placement is None
                             else op.placement)
                    loads = np.bincount(place, weights=t, minlength=n_groups)
                    total += float(loads.max()) * n_groups  # a group has 1/n_groups of peak
            elif isinstance(op, PimAttention):
                m = op.model
                nbytes = sum(m.kv_bytes(op.layer, int(c)) for c in op.context_lens)
                total += nbytes / self._pim_bytes_per_ns
            else:
                raise ConfigError(f"roofline cost model: no PIM estimate for "
                                  f"{type(op).__name__}")
        return total


def _ep_group(n_pcs: int, n_experts: int) -> int:
    """Default EP group size: the largest power of two <= PCs / experts dividing the PC count
    (the same rule as :func:`sieve.pim.ffn.default_pcs_per_expert`)."""
    g = 1
    while g * 2 <= n_pcs // max(n_experts, 1) and n_pcs % (g * 2) == 0:
        g *= 2
    return g
