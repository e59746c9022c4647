"""GPU time model: dense GEMM/GEMV, grouped GEMM of MoE experts, attention, weight streaming.

One kernel costs ``t0 + combine_p(t_mem, t_comp)``:

* ``t_mem  = bytes / (eta_bw * HBM spec bandwidth)``: weights, activations in, outputs out;
* ``t_comp = tile- and wave-quantised FLOPs / (eta_c * dense tensor peak)``: each GEMM is cut into
  output tiles of ``tile_m x tile_n``; ``tile_m`` adapts to small token counts (a power of two
  in ``[tile_m_min, tile_m_max]``, as swap-AB small-M kernels map tokens onto the MMA N side).
  If the tiles do not fill the SMs, split-K is assumed to spread them over all SMs (time =
  padded FLOPs / rate); otherwise tiles run in waves over the SMs (AttAcc's ``core_utilization``,
  generalised to unequal tiles: sorted by work, each wave lasts as long as its largest tile);
* ``combine_p(a, b) = (a^p + b^p)^(1/p)`` with a fitted ``p``: ``p = inf`` is the plain roofline
  ``max``; finite ``p`` lets memory and compute overlap imperfectly near the ridge point, which
  the measured B200 tables show (docs/validation.md). Either way ``t >= max(t_mem, t_comp)``, so
  the time never beats the spec roofline.

``t0`` is a fixed per-kernel cost (launch, prologue/epilogue, activation quantisation); an MoE layer
adds ``t0_moe`` (routing, permutation, finalize). The efficiency parameters are a
:class:`GpuCalibration`: the B200 one is a least-squares fit to hardware.md §3.2-3.3
(:mod:`sieve.calibration.costmodels`, which also reports fit quality and hold-out error); H100/H200
use the values hardware.md quotes (⚠ not refitted here).

All times are seconds; sizes are element counts; bytes are bytes. This module must not import
the DRAM engine, and it knows nothing about PIM.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.calibrations import CALIBRATIONS, GpuCalibration, get_calibration
from sieve.hw.presets import DType, GpuSpec, get_dtype, get_gpu
from sieve.validate import check_number

__all__ = [
    "CALIBRATIONS",
    "GpuCalibration",
    "attention_decode_time_s",
    "attention_prefill_time_s",
    "expert_gemm_cost",
    "gemm_time_s",
    "gemv_time_s",
    "get_calibration",
    "grouped_gemm_time_s",
    "kernel_time_s",
    "moe_layer_time_s",
    "weight_load_time_s",
]


# ---------------------------------------------------------------------------------------------
# Core
# ---------------------------------------------------------------------------------------------


def _combine(a: float, b: float, p: float) -> float:
    hi, lo = max(a, b), min(a, b)
    if hi == 0.0:
        return 0.0
    if math.isinf(p):
        return hi
    return hi * (1.0 + (lo / hi) ** p) ** (1.0 / p)


def _token_tiles(tokens: np.ndarray, cal: GpuCalibration) -> tuple[np.ndarray, np.ndarray]:
    """Per group: number of token tiles and the tile height (rows)."""
    t = np.asarray(tokens, dtype=np.float64)
    pow2 = np.exp2(np.ceil(np.log2(np.maximum(t, 1.0))))
    tm = np.where(t >= cal.tile_m_max, cal.tile_m_max,
                  np.clip(pow2, cal.tile_m_min, cal.tile_m_max))
    return np.ceil(t / tm), tm


def _tiled_compute_s(tokens: np.ndarray, n: int, k: int, d: DType, gpu: GpuSpec,
                     cal: GpuCalibration) -> float:
    """Tile- and wave-quantised compute time of one (grouped) GEMM; 0 for no tokens."""
    tokens = np.asarray(tokens, dtype=np.float64)
    tokens = tokens[tokens > 0]
    if tokens.size == 0 or n == 0 or k == 0:
        return 0.0
    n_tiles_m, tm = _token_tiles(tokens, cal)
    per_group = n_tiles_m * math.ceil(n / cal.tile_n)  # tiles per group
    work = 2.0 * tm * cal.tile_n * k  # FLOP per tile of each group
    rate = cal.eta_c(d) * gpu.peak_tflops(d) * 1e12  # FLOP/s, whole GPU
    n_tiles = int(per_group.sum())
    if n_tiles <= gpu.sms:  # split-K spreads the few tiles over every SM
        return float((per_group * work).sum()) / rate
    tile_work = np.repeat(work, per_group.astype(np.int64))
    tile_work[::-1].sort()  # descending
    return float(tile_work[:: gpu.sms].sum()) / (rate / gpu.sms)  # one head tile per wave


def kernel_time_s(bytes_moved: float, compute_s: float, *, gpu: str | GpuSpec = "b200",
                  calib: str | GpuCalibration | None = None, t0_s: float = 0.0) -> float:
    """Generic kernel: ``t0 + combine_p(bytes / (eta_bw BW), compute_s)``.

    Args:
        bytes_moved: HBM bytes read + written.
        compute_s: compute time at the achievable rate (already divided by ``eta_c * peak``).
        gpu, calib: GPU preset and calibration (default: the GPU's own).
        t0_s: fixed cost.
    """
    g = get_gpu(gpu)
    cal = get_calibration(calib or g)
    b = check_number("GPU kernel", "bytes_moved", bytes_moved)
    c = check_number("GPU kernel", "compute_s", compute_s)
    return t0_s + _combine(b / (cal.eta_bw * g.hbm_bw_bytes_per_s), c, cal.overlap_p)


def _resolve(gpu, calib, dtype):
    g = get_gpu(gpu)
    cal = get_calibration(calib or g)
    d = get_dtype(dtype)
    g.peak_tflops(d)  # raises ConfigError if the GPU lacks this compute class
    return g, cal, d


def gemm_time_s(m: int, n: int, k: int, dtype: str = "bf16", *, gpu: str | GpuSpec = "b200",
                calib: str | GpuCalibration | None = None) -> float:
    """Dense GEMM ``C[m,n] = A[m,k] @ W[k,n]`` with W streamed from HBM (seconds).

    Bytes = ``n k w + m k a + m n 2`` (weights, activations in, BF16 out), as hardware.md §3.2.
    ``m`` = tokens. Returns 0 for an empty GEMM.

    Raises:
        ConfigError: negative/non-numeric sizes, unknown dtype or GPU.
    """
    g, cal, d = _resolve(gpu, calib, dtype)
    m, n, k = (check_number("GEMM", nm, v) for nm, v in (("m", m), ("n", n), ("k", k)))
    if m == 0 or n == 0 or k == 0:
        return 0.0
    nbytes = n * k * d.weight_bytes + m * k * d.act_bytes + m * n * 2.0
    tc = _tiled_compute_s(np.array([m]), int(n), int(k), d, g, cal)
    return kernel_time_s(nbytes, tc, gpu=g, calib=cal, t0_s=cal.t0_gemm_s(d))


def gemv_time_s(n: int, k: int, dtype: str = "bf16", **kw: Any) -> float:
    """GEMV = GEMM with one token (seconds)."""
    return gemm_time_s(1, n, k, dtype, **kw)


def expert_gemm_cost(tokens_per_expert, hidden: int, intermediate: int, dtype: str = "bf16",
                     gated: bool = True) -> tuple[float, float]:
    """HBM bytes and (unpadded) FLOPs of the experts that receive tokens.

    Gated FFN (SwiGLU): up-projection ``[H -> 2I]``, down-projection ``[I -> H]``; weights
    ``(2 or 1 + 1) H I w`` per *active* expert; activations per token-expert pair.
    """
    d = get_dtype(dtype)
    counts = _counts("grouped GEMM", tokens_per_expert)
    h = check_number("grouped GEMM", "hidden", hidden)
    i = check_number("grouped GEMM", "intermediate", intermediate)
    active = float(np.count_nonzero(counts))
    pairs = float(counts.sum())
    up_n = (2 if gated else 1) * i
    wbytes = active * (up_n * h + i * h) * d.weight_bytes
    abytes = pairs * (h * d.act_bytes + up_n * 2.0 + i * d.act_bytes + h * 2.0)
    flops = 2.0 * pairs * (up_n * h + i * h)
    return wbytes + abytes, flops


def _counts(what: str, tokens_per_expert) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(tokens_per_expert))
    if arr.ndim != 1:
        raise ConfigError(f"{what}: tokens_per_expert must be 1-D, got shape {arr.shape}")
    if arr.size and (not np.issubdtype(arr.dtype, np.number) or not np.all(np.isfinite(arr))
                     or arr.min() < 0):
        raise ConfigError(f"{what}: tokens_per_expert must be finite counts >= 0")
    return arr.astype(np.float64)


def grouped_gemm_time_s(tokens_per_expert, hidden: int, intermediate: int,
                        dtype: str = "bf16", *, gated: bool = True,
                        gpu: str | GpuSpec = "b200",
                        calib: str | GpuCalibration | None = None) -> float:
    """All GPU-side experts of one MoE layer as grouped GEMMs (seconds).

    Two grouped kernels (gate/up, then down), each covering every expert with > 0 tokens:
    their weights are streamed once, their tokens tiled per expert. Experts with 0 tokens
    cost nothing. Does not include routing/permute/finalize (see :func:`moe_layer_time_s`).

    Args:
        tokens_per_expert: tokens routed to each expert on this GPU (1-D, >= 0).
        hidden, intermediate: model dims H and I (per expert).
        dtype: weight/activation dtype name.
        gated: SwiGLU-style ``[H -> 2I]`` up-projection (False: ``[H -> I]``).
    """
    g, cal, d = _resolve(gpu, calib, dtype)
    counts = _counts("grouped GEMM", tokens_per_expert)
    h = int(check_number("grouped GEMM", "hidden", hidden))
    i = int(check_number("grouped GEMM", "intermediate", intermediate))
    live = counts[counts > 0]
    if live.size == 0 or h == 0 or i == 0:
        return 0.0
    pairs, active = float(live.sum()), float(live.size)
    up_n = (2 if gated else 1) * i
    total = 0.0
    for n, k in ((up_n, h), (h, i)):  # gate/up, then down
        nbytes = active * n * k * d.weight_bytes + pairs * (k * d.act_bytes + n * 2.0)
        tc = _tiled_compute_s(live, n, k, d, g, cal)
        total += kernel_time_s(nbytes, tc, gpu=g, calib=cal, t0_s=cal.t0_gemm_s(d))
    return total


def moe_layer_time_s(tokens_per_expert, hidden: int, intermediate: int, dtype: str = "bf16",
                     **kw: Any) -> float:
    """MoE expert layer as the §3.3 measurements define it: routing + permute + grouped GEMMs
    + finalize = ``t0_moe + grouped_gemm_time_s`` (seconds; 0 if no expert has tokens)."""
    t = grouped_gemm_time_s(tokens_per_expert, hidden, intermediate, dtype, **kw)
    if t == 0.0:
        return 0.0
    g = get_gpu(kw.get("gpu", "b200"))
    cal = get_calibration(kw.get("calib") or g)
    return t + cal.t0_moe_s(get_dtype(dtype))


def attention_decode_time_s(context_lens, n_q_heads: int, n_kv_heads: int, head_dim: int,
                            kv_dtype: str = "bf16", *, gpu: str | GpuSpec = "b200",
                            calib: str | GpuCalibration | None = None) -> float:
    """Decode attention on the GPU for a batch (one new token per sequence), seconds.

    Reads the KV cache (``2 n_kv d ctx`` elements per sequence) once; FLOPs ``4 n_q d ctx``
    (QK^T and PV), with the GQA group ``n_q / n_kv`` padded to ``tile_m_min`` rows on the tensor
    cores. ⚠ Not validated: hardware.md has no measured attention rows; it reuses the GEMM
    calibration (one kernel launch ``t0_gemm``).
    """
    g, cal, d = _resolve(gpu, calib, kv_dtype)
    ctx = _counts("decode attention", context_lens)
    hq, hkv, hd = (int(check_number("decode attention", nm, v)) for nm, v in
                   (("n_q_heads", n_q_heads), ("n_kv_heads", n_kv_heads), ("head_dim", head_dim)))
    if ctx.sum() == 0 or hq == 0 or hd == 0:
        return 0.0
    if hkv == 0 or hq % hkv:
        raise ConfigError(f"decode attention: n_q_heads ({hq}) must be a multiple of "
                          f"n_kv_heads ({hkv})")
    group_rows = max(hq // hkv, cal.tile_m_min)
    kv_bytes = float(ctx.sum()) * 2 * hkv * hd * d.weight_bytes
    qo_bytes = ctx.size * 2 * hq * hd * 2.0
    flops = 4.0 * hkv * group_rows * hd * float(ctx.sum())
    tc = flops / (cal.eta_c(d) * g.peak_tflops(d) * 1e12)
    return kernel_time_s(kv_bytes + qo_bytes, tc, gpu=g, calib=cal, t0_s=cal.t0_gemm_s(d))


def attention_prefill_time_s(seq_lens, n_q_heads: int, n_kv_heads: int, head_dim: int,
                             dtype: str = "bf16", *, causal: bool = True,
                             gpu: str | GpuSpec = "b200",
                             calib: str | GpuCalibration | None = None) -> float:
    """Prefill (FlashAttention-style) attention for new sequences, seconds.

    FLOPs ``4 n_q d S^2`` per sequence (halved when causal); bytes = Q, K, V read + O written
    once. FLOP-bound for long S. ⚠ Not validated against measurements (none in hardware.md);
    uses the GEMM ``eta_c``.
    """
    g, cal, d = _resolve(gpu, calib, dtype)
    s = _counts("prefill attention", seq_lens)
    hq, hkv, hd = (int(check_number("prefill attention", nm, v)) for nm, v in
                   (("n_q_heads", n_q_heads), ("n_kv_heads", n_kv_heads), ("head_dim", head_dim)))
    if s.sum() == 0 or hq == 0 or hd == 0:
        return 0.0
    flops = 4.0 * hq * hd * float((s * s).sum()) * (0.5 if causal else 1.0)
    nbytes = float(s.sum()) * hd * (2 * hq + 2 * hkv) * d.act_bytes
    tc = flops / (cal.eta_c(d) * g.peak_tflops(d) * 1e12)
    return kernel_time_s(nbytes, tc, gpu=g, calib=cal, t0_s=cal.t0_gemm_s(d))


def weight_load_time_s(n_bytes: float, *, gpu: str | GpuSpec = "b200",
                       calib: str | GpuCalibration | None = None) -> float:
    """Streaming ``n_bytes`` from HBM inside a running kernel (no launch cost), seconds."""
    g = get_gpu(gpu)
    cal = get_calibration(calib or g)
    return check_number("weight load", "n_bytes", n_bytes) / (cal.eta_bw * g.hbm_bw_bytes_per_s)
