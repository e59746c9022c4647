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

Every function takes the resolved GPU and calibration (``gpu=``, ``calib=``: a
:class:`GpuSpec` and a :class:`GpuCalibration`, e.g. ``system.gpu`` and
``system.gpu_calibration`` of a :class:`~sieve.hw.system.SystemConfig`); none looks a preset
name up.

All times are nanoseconds (the simulator's one time unit): bandwidths in GB/s are bytes/ns and
peaks in TFLOPS are 1e3 FLOP/ns; the calibration's fixed costs (stored in seconds, ``t0_*_s``)
are converted where they are used (:meth:`GpuCalibration.t0_gemm_ns`). Sizes are element
counts; bytes are bytes. This module must not import the DRAM engine, and it knows nothing
about PIM.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.calibrations import CALIBRATIONS, GpuCalibration, get_calibration
from sieve.hw.presets import DType, GpuSpec, get_dtype
from sieve.validate import check_number

__all__ = [
    "CALIBRATIONS",
    "GpuCalibration",
    "attention_decode_time_ns",
    "attention_prefill_time_ns",
    "expert_gemm_cost",
    "gemm_time_ns",
    "gemv_time_ns",
    "get_calibration",
    "grouped_gemm_time_ns",
    "kernel_time_ns",
    "moe_layer_time_ns",
    "token_tiles",
    "weight_load_time_ns",
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


def token_tiles(tokens: np.ndarray, tile_min: float, tile_max: float
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per group of a grouped GEMM: the number of token tiles and the tile height (rows):
    ``tile_max`` rows from ``tile_max`` tokens on, else the next power of two within
    ``[tile_min, tile_max]`` (the calibration's ``tile_m_min`` / ``tile_m_max``;
    sieve.sched.cp prices its GPU experts with the same tiles)."""
    t = np.asarray(tokens, dtype=np.float64)
    pow2 = np.exp2(np.ceil(np.log2(np.maximum(t, 1.0))))
    tm = np.where(t >= tile_max, tile_max, np.clip(pow2, tile_min, tile_max))
    return np.ceil(t / tm), tm


def _token_tiles(tokens: np.ndarray, cal: GpuCalibration) -> tuple[np.ndarray, np.ndarray]:
    """Per group: number of token tiles and the tile height (rows), :func:`token_tiles` at the
    calibration's tile sizes."""
    return token_tiles(tokens, cal.tile_m_min, cal.tile_m_max)


def _flops_per_ns(d: DType, gpu: GpuSpec, cal: GpuCalibration) -> float:
    """Achievable tensor rate of the whole GPU for a dtype: ``eta_c x peak`` (TFLOPS x 1e3 =
    FLOP/ns)."""
    return cal.eta_c(d) * gpu.peak_tflops(d) * 1e3


def _tiled_compute_ns(tokens: np.ndarray, n: int, k: int, d: DType, gpu: GpuSpec,
                      cal: GpuCalibration) -> float:
    """Tile- and wave-quantised compute time of one (grouped) GEMM (ns); 0 for no tokens."""
    tokens = np.asarray(tokens, dtype=np.float64)
    tokens = tokens[tokens > 0]
    if tokens.size == 0 or n == 0 or k == 0:
        return 0.0
    n_tiles_m, tm = _token_tiles(tokens, cal)
    per_group = n_tiles_m * math.ceil(n / cal.tile_n)  # tiles per group
    work = 2.0 * tm * cal.tile_n * k  # FLOP per tile of each group
    rate = _flops_per_ns(d, gpu, cal)  # FLOP/ns, whole GPU
    n_tiles = int(per_group.sum())
    if n_tiles <= gpu.sms:  # split-K spreads the few tiles over every SM
        return float((per_group * work).sum()) / rate
    tile_work = np.repeat(work, per_group.astype(np.int64))
    tile_work[::-1].sort()  # descending
    return float(tile_work[:: gpu.sms].sum()) / (rate / gpu.sms)  # one head tile per wave


def _resolved(who: str, gpu: Any, calib: Any) -> tuple[GpuSpec, GpuCalibration]:
    """The GPU and calibration objects, or one ConfigError saying how to get them."""
    if not isinstance(gpu, GpuSpec):
        raise ConfigError(f"{who}: gpu must be a GpuSpec (resolve a preset name once with "
                          f"sieve.hw.get_gpu, or pass SystemConfig.gpu), got {gpu!r}")
    if not isinstance(calib, GpuCalibration):
        raise ConfigError(f"{who}: calib must be a GpuCalibration (sieve.hw.get_calibration, "
                          f"or SystemConfig.gpu_calibration), got {calib!r}")
    return gpu, calib


def kernel_time_ns(bytes_moved: float, compute_ns: float, *, gpu: GpuSpec,
                   calib: GpuCalibration, t0_ns: float = 0.0) -> float:
    """Generic kernel: ``t0 + combine_p(bytes / (eta_bw BW), compute)`` (ns).

    Args:
        bytes_moved: HBM bytes read + written.
        compute_ns: compute time at the achievable rate (already divided by ``eta_c * peak``).
        gpu, calib: the GPU and its calibration.
        t0_ns: fixed cost.
    """
    g, cal = _resolved("GPU kernel", gpu, calib)
    b = check_number("GPU kernel", "bytes_moved", bytes_moved)
    c = check_number("GPU kernel", "compute_ns", compute_ns)
    return t0_ns + _combine(b / (cal.eta_bw * g.hbm_bw_gbs), c, cal.overlap_p)  # GB/s = B/ns


def _resolve(who: str, gpu, calib, dtype):
    """GPU, calibration and the dtype as that GPU runs it (its weight-only fallback where the
    tensor cores lack the dtype's class, :meth:`GpuSpec.run_dtype`)."""
    g, cal = _resolved(who, gpu, calib)
    return g, cal, g.run_dtype(get_dtype(dtype))


def gemm_time_ns(m: int, n: int, k: int, dtype: str | DType = "bf16", *, gpu: GpuSpec,
                 calib: GpuCalibration) -> float:
    """Dense GEMM ``C[m,n] = A[m,k] @ W[k,n]`` with W streamed from HBM (ns).

    Bytes = ``n k w + m k a + m n 2`` (weights, activations in, BF16 out), as hardware.md §3.2.
    ``m`` = tokens. Returns 0 for an empty GEMM. ``dtype`` defaults to bf16, the seed's
    storage type (§7: "activations and parameters are stored in bfloat16").

    Raises:
        ConfigError: negative/non-numeric sizes, unknown dtype, a dtype the GPU cannot run, or
            a GPU/calibration that is not a resolved object.
    """
    g, cal, d = _resolve("GEMM", gpu, calib, dtype)
    m, n, k = (check_number("GEMM", nm, v) for nm, v in (("m", m), ("n", n), ("k", k)))
    if m == 0 or n == 0 or k == 0:
        return 0.0
    nbytes = n * k * d.weight_bytes + m * k * d.act_bytes + m * n * 2.0
    tc = _tiled_compute_ns(np.array([m]), int(n), int(k), d, g, cal)
    return kernel_time_ns(nbytes, tc, gpu=g, calib=cal, t0_ns=cal.t0_gemm_ns(d))


def gemv_time_ns(n: int, k: int, dtype: str | DType = "bf16", *, gpu: GpuSpec,
                 calib: GpuCalibration) -> float:
    """GEMV = GEMM with one token (ns)."""
    return gemm_time_ns(1, n, k, dtype, gpu=gpu, calib=calib)


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


def grouped_gemm_time_ns(tokens_per_expert, hidden: int, intermediate: int,
                         dtype: str | DType = "bf16", *, gated: bool = True, gpu: GpuSpec,
                         calib: GpuCalibration) -> float:
    """All GPU-side experts of one MoE layer as grouped GEMMs (ns).

    Two grouped kernels (gate/up, then down), each covering every expert with > 0 tokens:
    their weights are streamed once, their tokens tiled per expert. Experts with 0 tokens
    cost nothing. Does not include routing/permute/finalize (see :func:`moe_layer_time_ns`).

    Args:
        tokens_per_expert: tokens routed to each expert on this GPU (1-D, >= 0).
        hidden, intermediate: model dims H and I (per expert).
        dtype: weight/activation dtype name.
        gated: SwiGLU-style ``[H -> 2I]`` up-projection (False: ``[H -> I]``).
        gpu, calib: the GPU and its calibration.
    """
    g, cal, d = _resolve("grouped GEMM", gpu, calib, dtype)
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
        tc = _tiled_compute_ns(live, n, k, d, g, cal)
        total += kernel_time_ns(nbytes, tc, gpu=g, calib=cal, t0_ns=cal.t0_gemm_ns(d))
    return total


def moe_layer_time_ns(tokens_per_expert, hidden: int, intermediate: int,
                      dtype: str | DType = "bf16", *, gated: bool = True, gpu: GpuSpec,
                      calib: GpuCalibration) -> float:
    """MoE expert layer as the §3.3 measurements define it: routing + permute + grouped GEMMs
    + finalize = ``t0_moe + grouped_gemm_time_ns`` (ns; 0 if no expert has tokens)."""
    t = grouped_gemm_time_ns(tokens_per_expert, hidden, intermediate, dtype, gated=gated,
                             gpu=gpu, calib=calib)
    if t == 0.0:
        return 0.0
    return t + calib.t0_moe_ns(gpu.run_dtype(get_dtype(dtype)))


def attention_decode_time_ns(context_lens, n_q_heads: int, n_kv_heads: int, head_dim: int,
                             kv_dtype: str | DType = "bf16", *, gpu: GpuSpec,
                             calib: GpuCalibration) -> float:
    """Decode attention on the GPU for a batch (one new token per sequence), ns.

    Reads the KV cache (``2 n_kv d ctx`` elements per sequence) once; FLOPs ``4 n_q d ctx``
    (QK^T and PV), with the GQA group ``n_q / n_kv`` padded to ``tile_m_min`` rows on the tensor
    cores. ⚠ Not validated: hardware.md has no measured attention rows; it reuses the GEMM
    calibration (one kernel launch ``t0_gemm``).
    """
    g, cal, d = _resolve("decode attention", gpu, calib, kv_dtype)
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
    tc = flops / _flops_per_ns(d, g, cal)
    return kernel_time_ns(kv_bytes + qo_bytes, tc, gpu=g, calib=cal, t0_ns=cal.t0_gemm_ns(d))


def attention_prefill_time_ns(seq_lens, n_q_heads: int, n_kv_heads: int, head_dim: int,
                              dtype: str | DType = "bf16", *, causal: bool = True,
                              gpu: GpuSpec, calib: GpuCalibration) -> float:
    """Prefill (FlashAttention-style) attention for new sequences, ns.

    FLOPs ``4 n_q d S^2`` per sequence (halved when causal); bytes = Q, K, V read + O written
    once. FLOP-bound for long S. ⚠ Not validated against measurements (none in hardware.md);
    uses the GEMM ``eta_c``.
    """
    g, cal, d = _resolve("prefill attention", gpu, calib, dtype)
    s = _counts("prefill attention", seq_lens)
    hq, hkv, hd = (int(check_number("prefill attention", nm, v)) for nm, v in
                   (("n_q_heads", n_q_heads), ("n_kv_heads", n_kv_heads), ("head_dim", head_dim)))
    if s.sum() == 0 or hq == 0 or hd == 0:
        return 0.0
    flops = 4.0 * hq * hd * float((s * s).sum()) * (0.5 if causal else 1.0)
    nbytes = float(s.sum()) * hd * (2 * hq + 2 * hkv) * d.act_bytes
    tc = flops / _flops_per_ns(d, g, cal)
    return kernel_time_ns(nbytes, tc, gpu=g, calib=cal, t0_ns=cal.t0_gemm_ns(d))


def weight_load_time_ns(n_bytes: float, *, gpu: GpuSpec, calib: GpuCalibration) -> float:
    """Streaming ``n_bytes`` from HBM inside a running kernel (no launch cost), ns."""
    g, cal = _resolved("weight load", gpu, calib)
    return check_number("weight load", "n_bytes", n_bytes) / (cal.eta_bw * g.hbm_bw_gbs)
