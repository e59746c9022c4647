"""The Sieve scheduler's cheap estimates (seed §5 "Timing Models"); never used for reported
numbers.

The scheduler runs on the critical path, so the seed prefers lightweight estimates over precise
ones: ``T_offchip`` = bytes moved between HBM and the GPU / HBM bandwidth, ``T_comp`` = GPU
operations / peak compute throughput, ``T_GPU(G) = max(T_offchip, T_comp)`` with the GPU-side
experts batched as one grouped GEMM, and ``T_comm`` = inter-GPU bytes / interconnect bandwidth.
They use *spec* peaks (no efficiency, no launch cost, no tile quantisation). Reported times come
from :mod:`sieve.hw.gpu`, :mod:`sieve.hw.comm` and the PIM engine; docs/validation.md compares both
against the measured tables so the gap between estimate and model is visible.
"""

from __future__ import annotations

from sieve.hw.gpu import expert_gemm_cost
from sieve.hw.presets import GpuSpec, SystemSpec, get_dtype, get_gpu, get_system

__all__ = ["t_comm_s", "t_comp_s", "t_dispatch_combine_s", "t_gpu_experts_s", "t_offchip_s"]


def t_offchip_s(n_bytes: float, gpu: str | GpuSpec = "b200") -> float:
    """Seed ``T_offchip``: bytes / HBM spec bandwidth (seconds)."""
    return float(n_bytes) / get_gpu(gpu).hbm_bw_bytes_per_s


def t_comp_s(flops: float, dtype: str = "bf16", gpu: str | GpuSpec = "b200") -> float:
    """Seed ``T_comp``: FLOPs / dense tensor peak of the dtype's compute class (seconds)."""
    g = get_gpu(gpu)
    return float(flops) / (g.peak_tflops(get_dtype(dtype)) * 1e12)


def t_gpu_experts_s(tokens_per_expert, hidden: int, intermediate: int, dtype: str = "bf16",
                    gpu: str | GpuSpec = "b200", gated: bool = True) -> float:
    """Seed ``T_GPU(G) = max(T_offchip, T_comp)`` for the experts in G (one grouped GEMM)."""
    nbytes, flops = expert_gemm_cost(tokens_per_expert, hidden, intermediate, dtype, gated)
    return max(t_offchip_s(nbytes, gpu), t_comp_s(flops, dtype, gpu))


def t_comm_s(n_bytes: float, system: str | SystemSpec = "8xb200") -> float:
    """Seed ``T_Comm``: bytes / interconnect bandwidth; the slower tier's (IB) when the system
    spans nodes, NVLink otherwise (per GPU, per direction)."""
    s = get_system(system)
    link = s.inter_link if s.n_nodes > 1 else s.intra_link
    return float(n_bytes) / link.bw_bytes_per_s


def t_dispatch_combine_s(tokens_per_gpu: float, hidden: int, topk: int,
                         system: str | SystemSpec = "8xb200", act_bytes: float = 2.0) -> float:
    """``T_Comm`` of one layer's EP dispatch + combine under uniform routing: every
    (token, expert) copy that leaves the GPU, out and back, at ``act_bytes`` per element."""
    s = get_system(system)
    n = s.n_gpus
    if n == 1:
        return 0.0
    remote = float(tokens_per_gpu) * topk * (n - 1) / n
    return t_comm_s(2.0 * remote * hidden * act_bytes, s)
