"""sieve.hw.gpu: roofline bounds, monotonicity, zero-token experts, quantisation, errors, fit.

Times are nanoseconds (GB/s = bytes/ns, TFLOPS = 1e3 FLOP/ns)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sieve.calibration import costmodels as calibrate
from sieve.errors import ConfigError
from sieve.hw import estimates, gpu
from sieve.hw.presets import get_dtype, get_gpu

B200 = get_gpu("b200")
CAL = gpu.get_calibration(B200)
KW = {"gpu": B200, "calib": CAL}  # the resolved GPU and calibration every model call takes
DTYPES_B200 = ["bf16", "fp8", "fp8_block", "nvfp4", "mxfp4"]
dims = st.integers(min_value=1, max_value=20000)
tokens = st.integers(min_value=0, max_value=4096)
counts = st.lists(st.integers(min_value=0, max_value=600), min_size=1, max_size=64)


def _spec_roofline(nbytes: float, flops: float, dtype: str, g=B200) -> float:
    """max(bytes / spec BW, FLOPs / spec peak) in ns: the bound no model time may beat."""
    return max(nbytes / g.hbm_bw_gbs, flops / (g.peak_tflops(dtype) * 1e3))


# ---- analytic bounds --------------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 8192), n=dims, k=dims, dtype=st.sampled_from(DTYPES_B200))
def test_gemm_never_beats_the_spec_roofline(m, n, k, dtype):
    d = get_dtype(dtype)
    nbytes = n * k * d.weight_bytes + m * k * d.act_bytes + 2 * m * n
    assert gpu.gemm_time_ns(m, n, k, dtype, **KW) >= _spec_roofline(nbytes, 2 * m * n * k, dtype)


@settings(max_examples=60, deadline=None)
@given(c=counts, h=st.integers(64, 8192), i=st.integers(64, 8192),
       dtype=st.sampled_from(DTYPES_B200))
def test_grouped_gemm_never_beats_the_spec_roofline_nor_the_seed_estimate(c, h, i, dtype):
    nbytes, flops = gpu.expert_gemm_cost(c, h, i, dtype)
    t = gpu.grouped_gemm_time_ns(c, h, i, dtype, **KW)
    assert t >= _spec_roofline(nbytes, flops, dtype) * (1 - 1e-12)
    assert t >= estimates.t_gpu_experts_ns(c, h, i, dtype, gpu=B200) * (1 - 1e-12)
    assert gpu.moe_layer_time_ns(c, h, i, dtype, **KW) >= t


@settings(max_examples=40, deadline=None)
@given(ctx=st.lists(st.integers(0, 32768), min_size=1, max_size=32),
       kv=st.sampled_from([1, 2, 4, 8]), group=st.sampled_from([1, 2, 4, 8, 16]),
       hd=st.sampled_from([64, 128]))
def test_decode_attention_never_beats_reading_the_kv_cache(ctx, kv, group, hd):
    t = gpu.attention_decode_time_ns(ctx, kv * group, kv, hd, **KW)
    kv_bytes = sum(ctx) * 2 * kv * hd * 2
    assert t >= kv_bytes / B200.hbm_bw_gbs
    assert t >= 4 * kv * group * hd * sum(ctx) / (B200.bf16_tflops * 1e3)


def test_prefill_attention_is_compute_bound_and_above_peak_time():
    s, hq, hkv, hd = 8192, 64, 8, 128
    t = gpu.attention_prefill_time_ns([s], hq, hkv, hd, **KW)
    flops = 4 * hq * hd * s * s / 2
    assert t >= flops / (B200.bf16_tflops * 1e3)
    assert t == pytest.approx(flops / (CAL.eta_c_bf16 * B200.bf16_tflops * 1e3), rel=0.02)


def test_weight_load_is_bytes_over_derated_bandwidth():
    assert gpu.weight_load_time_ns(1e9, **KW) == pytest.approx(1e9 / (CAL.eta_bw * 8e3))
    assert gpu.weight_load_time_ns(1e9, **KW) >= 1e9 / 8e3  # 8.0 TB/s = 8e3 bytes/ns


# ---- monotonicity -----------------------------------------------------------------------------

@settings(max_examples=80, deadline=None)
@given(m=st.integers(1, 4096), n=dims, k=dims, dm=st.integers(0, 512), dn=st.integers(0, 512),
       dk=st.integers(0, 512), dtype=st.sampled_from(["bf16", "fp8_block", "nvfp4"]))
def test_gemm_time_is_monotone_in_every_dimension(m, n, k, dm, dn, dk, dtype):
    t = gpu.gemm_time_ns(m, n, k, dtype, **KW)
    assert gpu.gemm_time_ns(m + dm, n, k, dtype, **KW) >= t
    assert gpu.gemm_time_ns(m, n + dn, k, dtype, **KW) >= t
    assert gpu.gemm_time_ns(m, n, k + dk, dtype, **KW) >= t


@settings(max_examples=80, deadline=None)
@given(c=counts, j=st.integers(0, 63), add=st.integers(1, 300),
       dtype=st.sampled_from(["bf16", "fp8_block"]))
def test_grouped_gemm_is_monotone_in_every_experts_tokens(c, j, add, dtype):
    c = np.array(c)
    more = c.copy()
    more[j % len(c)] += add  # includes 0 -> add, i.e. waking an idle expert
    h, i = 2048, 768
    assert gpu.grouped_gemm_time_ns(more, h, i, dtype, **KW) >= gpu.grouped_gemm_time_ns(
        c, h, i, dtype, **KW)
    assert gpu.moe_layer_time_ns(more, h, i, dtype, **KW) >= gpu.moe_layer_time_ns(
        c, h, i, dtype, **KW)


def test_waking_a_small_expert_never_shortens_a_multi_wave_kernel():
    # 13 x 128-token experts = 156 tiles (2 waves on 148 SMs); a 1-token expert adds 12 small
    # tiles. Averaging tile work over waves would make this *faster*; the sorted-wave rule not.
    busy = np.array([128] * 13 + [0])
    woken = np.array([128] * 13 + [1])
    assert gpu.grouped_gemm_time_ns(woken, 2048, 768, **KW) >= gpu.grouped_gemm_time_ns(
        busy, 2048, 768, **KW)
    d = get_dtype("bf16")
    assert gpu._tiled_compute_ns(woken, 1536, 2048, d, B200, CAL) >= gpu._tiled_compute_ns(
        busy, 1536, 2048, d, B200, CAL)


@settings(max_examples=30, deadline=None)
@given(c=counts, dh=st.integers(0, 1024), di=st.integers(0, 1024))
def test_grouped_gemm_is_monotone_in_model_dims(c, dh, di):
    t = gpu.grouped_gemm_time_ns(c, 2048, 768, **KW)
    assert gpu.grouped_gemm_time_ns(c, 2048 + dh, 768 + di, **KW) >= t


@settings(max_examples=30, deadline=None)
@given(ctx=st.lists(st.integers(0, 16384), min_size=1, max_size=16), j=st.integers(0, 15),
       add=st.integers(1, 4096))
def test_attention_is_monotone_in_context(ctx, j, add):
    more = list(ctx)
    more[j % len(ctx)] += add
    for fn in (gpu.attention_decode_time_ns, gpu.attention_prefill_time_ns):
        assert fn(more, 32, 8, 128, **KW) >= fn(ctx, 32, 8, 128, **KW)


# ---- zero-token experts, quantisation ---------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(c=counts, zeros=st.integers(0, 200), seed=st.integers(0, 2**31))
def test_experts_with_zero_tokens_cost_nothing(c, zeros, seed):
    padded = np.concatenate([c, np.zeros(zeros, dtype=int)])
    np.random.default_rng(seed).shuffle(padded)
    assert gpu.grouped_gemm_time_ns(padded, 4096, 1536, **KW) == pytest.approx(
        gpu.grouped_gemm_time_ns(c, 4096, 1536, **KW), rel=1e-12)


def test_no_tokens_no_time():
    assert gpu.grouped_gemm_time_ns(np.zeros(128), 4096, 1536, **KW) == 0.0
    assert gpu.moe_layer_time_ns([], 4096, 1536, **KW) == 0.0
    assert gpu.gemm_time_ns(0, 4096, 7168, **KW) == 0.0
    assert gpu.attention_decode_time_ns([0, 0], 32, 8, 128, **KW) == 0.0


def test_token_tile_adapts_to_small_expert_loads():
    n_tiles, tm = gpu._token_tiles(np.array([1, 16, 17, 100, 128, 129, 300]), CAL)
    assert tm.tolist() == [16, 16, 32, 128, 128, 128, 128]
    assert n_tiles.tolist() == [1, 1, 1, 1, 1, 2, 3]


def test_wave_quantisation_matches_hand_count():
    # M=1024, N=4096, K=7168: 8 x 32 = 256 tiles of 128x128 on 148 SMs -> 2 waves
    d = get_dtype("bf16")
    per_sm = CAL.eta_c_bf16 * 2250e3 / 148  # FLOP/ns per SM
    tile = 2 * 128 * 128 * 7168
    assert gpu._tiled_compute_ns(np.array([1024]), 4096, 7168, d, B200, CAL) == pytest.approx(
        2 * tile / per_sm)
    # 64 tiles (< 148 SMs): split-K spreads the padded FLOPs over all SMs
    assert gpu._tiled_compute_ns(np.array([256]), 4096, 7168, d, B200, CAL) == pytest.approx(
        64 * tile / (148 * per_sm))


def test_infinite_p_is_the_plain_roofline_max():
    cal = CAL.override(overlap_p=math.inf)
    t = gpu.kernel_time_ns(8e9, 0.5e6, gpu=B200, calib=cal, t0_ns=1e3)
    assert t == pytest.approx(1e3 + max(8e9 / (cal.eta_bw * 8e3), 0.5e6))


# ---- errors -----------------------------------------------------------------------------------

def test_bad_sizes_name_the_field():
    with pytest.raises(ConfigError, match=r"GEMM: m must be finite and >= 0, got -1"):
        gpu.gemm_time_ns(-1, 10, 10, **KW)
    with pytest.raises(ConfigError, match=r"GEMM: k must be a number"):
        gpu.gemm_time_ns(1, 10, "x", **KW)
    with pytest.raises(ConfigError, match=r"grouped GEMM: tokens_per_expert must be finite"):
        gpu.grouped_gemm_time_ns([1, -2], 10, 10, **KW)
    with pytest.raises(ConfigError, match=r"grouped GEMM: tokens_per_expert must be 1-D"):
        gpu.grouped_gemm_time_ns([[1, 2]], 10, 10, **KW)
    with pytest.raises(ConfigError, match=r"grouped GEMM: hidden must be finite"):
        gpu.grouped_gemm_time_ns([1], float("nan"), 10, **KW)
    with pytest.raises(ConfigError, match=r"n_q_heads \(12\) must be a multiple of n_kv_heads"):
        gpu.attention_decode_time_ns([10], 12, 8, 128, **KW)


def test_unknown_names_list_choices():
    with pytest.raises(ConfigError, match=r"dtype 'int3'.*known: bf16, fp16, fp8"):
        gpu.gemm_time_ns(1, 10, 10, "int3", **KW)
    with pytest.raises(ConfigError, match=r"GPU 'mi300'.*known: b200, h100, h200"):
        get_gpu("mi300")
    with pytest.raises(ConfigError, match=r"bf16_tflops must be > 0"):
        get_gpu("h200").override(bf16_tflops=0.0)  # every GPU has BF16 tensor cores
    with pytest.raises(ConfigError, match=r"unknown override 'eta'.*valid: .*eta_bw"):
        gpu.get_calibration("b200").override(eta=1)
    with pytest.raises(ConfigError, match=r"eta_bw must be in \(0, 1\]"):
        gpu.get_calibration("b200").override(eta_bw=1.2)


# ---- calibration provenance and validation targets --------------------------------------------

@pytest.fixture(scope="module")
def fresh_fit():
    return calibrate.fit_gpu()


def test_stored_b200_calibration_is_the_least_squares_fit(fresh_fit):
    fit, stored = fresh_fit["calibration"], gpu.get_calibration(calibrate.measured_gpu())
    assert fit.overlap_p == stored.overlap_p
    for key in calibrate._GPU_KEYS:
        assert getattr(stored, key) == pytest.approx(getattr(fit, key), rel=2e-3), key


def test_fit_quality_and_hold_out_error_stay_within_the_published_bounds():
    rows = calibrate.gemm_rows() + calibrate.moe_rows()
    err = [(r.role, (calibrate.predict(r) / r.measured_ns - 1) * 100) for r in rows]
    train = calibrate.summary(e for role, e in err if role == "train")
    hold = calibrate.summary(e for role, e in err if role == "hold-out")
    allr = calibrate.summary(e for _, e in err)
    assert train[2] == 26 and hold[2] == 21 and allr[2] == 56
    assert train[0] < 7 and hold[0] < 12 and allr[0] < 12  # docs/validation.md: 4.7 / 8.3 / 6.9
    assert train[1] < 35


def test_hopper_calibration_reproduces_the_quoted_bf16_gemv_fit():
    # hardware.md §3.2: H100 bf16 t0 ~4.2 us, ~2.8 TB/s; H200 t0 4.5-5 us, ~4.0 TB/s
    for name, bw in (("h100", 2.8e3), ("h200", 4.0e3)):  # bytes/ns
        nbytes = 16384 * 7168 * 2
        g = get_gpu(name)
        t = gpu.gemv_time_ns(16384, 7168, gpu=g, calib=gpu.get_calibration(g))
        assert t == pytest.approx(4.5e3 + nbytes / bw, rel=0.05)


def test_precisions_native_and_weight_only_fallback():
    """H200 (sm_90) has no FP4 tensor cores: NVFP4 / MXFP4 x MXFP8 weights run weight-only,
    dequantised to BF16 (vLLM Marlin), at their own weight bytes; B200 runs them natively."""
    from sieve.hw.presets import get_dtype

    h200, b200 = get_gpu("h200"), get_gpu("b200")
    assert h200.native_compute == ("bf16", "fp8")
    assert b200.native_compute == ("bf16", "fp8", "fp4")
    for name in ("nvfp4", "mxfp4_mxfp8"):
        d = get_dtype(name)
        r = h200.run_dtype(d)
        if d.compute == "fp4":
            assert (r.compute, r.weight_bytes, r.act_bytes) == ("bf16", d.weight_bytes, 2.0)
            assert h200.peak_tflops(d) == h200.bf16_tflops
        else:  # MXFP8 activations run on Hopper's FP8 tensor cores
            assert r is d
        assert b200.run_dtype(d) is d
    assert b200.peak_tflops("mxfp4_mxfp8") == b200.fp8_tflops
    # the fallback streams 4-bit weights but computes at the BF16 rate with BF16 t0
    cal = gpu.get_calibration(h200)
    t_fp4 = gpu.grouped_gemm_time_ns([4] * 8, 2880, 2880, "nvfp4", gpu=h200, calib=cal)
    t_w16 = gpu.grouped_gemm_time_ns([4] * 8, 2880, 2880, "mxfp4", gpu=h200, calib=cal)
    t_bf16 = gpu.grouped_gemm_time_ns([4] * 8, 2880, 2880, "bf16", gpu=h200, calib=cal)
    # NVFP4 weights are 0.5625 B (FP8 scale per 16), MXFP4 0.53125 B: 6 % more bytes
    assert t_w16 < t_fp4 < t_w16 * 0.5625 / 0.53125 < t_bf16
    rows = dict((k, v) for k, v, _ in h200.describe())
    assert rows["tensor cores"] == "bf16, fp8" and "runs as bf16" in rows["dtype nvfp4"]
