"""One time unit: the GPU, interconnect and estimate models return nanoseconds, and the change
from seconds kept every number.

* The ``_ns`` functions equal the seconds the models returned before the change (commit
  5c64230, ``*_time_s`` / ``t_*_s``, recorded below) times 1e9, to float rounding.
* The calibrations stay data in their stored units (``t0_*_s``, ``alpha_us``) and are
  converted exactly where they are used.
* The functions take resolved objects; a preset name gets one clear error.
* The precise cost model adds nothing on top of the functions (no conversion left).
"""

from __future__ import annotations

import numpy as np
import pytest

from sieve import hw
from sieve.errors import ConfigError
from sieve.hw import comm, estimates, gpu
from sieve.pim.cost import EngineCostModel

B200, H100 = hw.get_gpu("b200"), hw.get_gpu("h100")
KW = {"gpu": B200, "calib": hw.get_calibration(B200)}
S8, S16 = hw.get_system("8xb200"), hw.get_system("16xb200")
COUNTS = [5, 1, 0, 37, 200]

# (call in ns, seconds returned by the previous *_s function for the same arguments)
PINNED = {
    "gemm bf16 1x7168x2048": (lambda: gpu.gemm_time_ns(1, 7168, 2048, "bf16", **KW),
                              7.639049864526935e-06),
    "gemm fp8_block 256x4096x7168": (
        lambda: gpu.gemm_time_ns(256, 4096, 7168, "fp8_block", **KW), 1.5042062195113374e-05),
    "gemm nvfp4 4096^3": (lambda: gpu.gemm_time_ns(4096, 4096, 4096, "nvfp4", **KW),
                          4.497144677065206e-05),
    "grouped bf16": (lambda: gpu.grouped_gemm_time_ns(COUNTS, 4096, 1536, "bf16", **KW),
                     3.286875122239621e-05),
    "moe layer fp8": (lambda: gpu.moe_layer_time_ns(COUNTS, 4096, 1536, "fp8", **KW),
                      5.32405946193869e-05),
    "decode attention": (lambda: gpu.attention_decode_time_ns([100, 2048, 4096], 32, 8, 128,
                                                              **KW), 6.9895383483178495e-06),
    "prefill attention": (lambda: gpu.attention_prefill_time_ns([512, 8192], 32, 8, 128, **KW),
                          0.0003198936249304728),
    "weight load": (lambda: gpu.weight_load_time_ns(3e8, **KW), 5.190311418685121e-05),
    "h100 gemv": (lambda: gpu.gemv_time_ns(16384, 7168, gpu=H100,
                                           calib=hw.get_calibration(H100)),
                  8.700848233668378e-05),
    "all-gather 8": (lambda: comm.all_gather_time_ns(1 << 20, S8), 2.0619562585432528e-05),
    "all-reduce 16": (lambda: comm.all_reduce_time_ns(1 << 26, S16), 0.0004967415035799522),
    "all-to-all 16": (lambda: comm.all_to_all_time_ns(1 << 30, S16), 0.019356794267699512),
    "dispatch 8": (lambda: comm.ep_dispatch_time_ns(128, 7168, 8, S8), 3.3971085620032986e-05),
    "combine 16": (lambda: comm.ep_combine_time_ns(256, 7168, 8, S16), 0.00044251339449541285),
    "dispatch dedup 8": (lambda: comm.ep_dispatch_time_ns(256, 7168, 8, S8, n_experts=256,
                                                          dedup=True), 3.799780471625934e-05),
    "exchange 16": (lambda: comm.ep_exchange_time_ns(
        np.random.default_rng(0).integers(0, 500, (16, 16)), 7168, S16, op="combine"),
        0.001242748256880734),
    "T_offchip": (lambda: estimates.t_offchip_ns(1e9, gpu=B200), 0.000125),
    "T_comp fp8": (lambda: estimates.t_comp_ns(1e12, "fp8", gpu=B200), 0.00022222222222222223),
    "T_GPU experts": (lambda: estimates.t_gpu_experts_ns(COUNTS, 4096, 1536, gpu=B200),
                      1.9651968e-05),
    "T_comm 16": (lambda: estimates.t_comm_ns(1e8, S16), 0.002),
    "T_dispatch+combine 8": (lambda: estimates.t_dispatch_combine_ns(128, 7168, 8, S8),
                             2.8544568888888887e-05),
}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_ns_equals_the_former_seconds_times_1e9(name):
    call, seconds = PINNED[name]
    assert call() == pytest.approx(seconds * 1e9, rel=1e-12, abs=0.0)


def test_calibration_units_are_converted_where_used():
    cal = hw.get_calibration(B200)
    for d in ("bf16", "fp8", "nvfp4"):
        dt = hw.get_dtype(d)
        s = {"bf16": cal.t0_gemm_bf16_s, "fp8": cal.t0_gemm_fp8_s, "fp4": cal.t0_gemm_fp4_s}
        assert cal.t0_gemm_ns(dt) == s[dt.compute] * 1e9
        m = {"bf16": cal.t0_moe_bf16_s, "fp8": cal.t0_moe_fp8_s, "fp4": cal.t0_moe_fp4_s}
        assert cal.t0_moe_ns(dt) == m[dt.compute] * 1e9
    # a kernel that moves nothing costs exactly its fixed cost; a transfer of nothing, nothing
    assert gpu.kernel_time_ns(0, 0, t0_ns=cal.t0_gemm_ns(hw.get_dtype("bf16")), **KW) == \
        cal.t0_gemm_bf16_s * 1e9
    ab = S8.comm_calibration.all_to_all
    assert comm.tier_time_ns(ab, 1.0, 0.0, S8) == pytest.approx(
        ab.alpha_us * 1e3 + 1.0 / (ab.eta * 900.0), rel=1e-15)
    assert comm.tier_time_ns(ab, 0.0, 0.0, S8) == 0.0


def test_models_refuse_names_with_one_clear_message():
    with pytest.raises(ConfigError, match=r"GEMM: gpu must be a GpuSpec .*get_gpu.*'b200'"):
        gpu.gemm_time_ns(1, 10, 10, gpu="b200", calib=KW["calib"])
    with pytest.raises(ConfigError, match=r"calib must be a GpuCalibration"):
        gpu.grouped_gemm_time_ns([1], 10, 10, gpu=B200, calib="b200")
    with pytest.raises(ConfigError, match=r"GPU kernel: gpu must be a GpuSpec"):
        gpu.kernel_time_ns(1, 0, gpu=None, calib=KW["calib"])
    with pytest.raises(ConfigError, match=r"all_gather: system must be a SystemConfig .*"
                                          r"get_system.*'8xb200'"):
        comm.all_gather_time_ns(1, "8xb200")
    with pytest.raises(ConfigError, match=r"EP exchange: calib must be a CommCalibration"):
        comm.ep_exchange_time_ns(np.ones((8, 8)), 7168, S8, calib="b200")
    with pytest.raises(ConfigError, match=r"T_offchip: gpu must be a GpuSpec"):
        estimates.t_offchip_ns(1.0, gpu="b200")
    with pytest.raises(ConfigError, match=r"T_comm: system must be a SystemConfig"):
        estimates.t_comm_ns(1.0, "16xb200")


def test_a_system_override_reaches_the_model_through_the_object():
    # no name is looked up below the caller: an overridden calibration is the one used
    slow = S8.override({"comm_calibration.all_gather.eta": 0.1})
    assert comm.all_gather_time_ns(1 << 30, slow) > comm.all_gather_time_ns(1 << 30, S8)
    cal = KW["calib"].override(eta_bw=0.5)
    assert gpu.weight_load_time_ns(1e9, gpu=B200, calib=cal) == pytest.approx(1e9 / (0.5 * 8e3))


def test_engine_cost_model_adds_no_conversion():
    e = EngineCostModel(S8)
    s = e.system
    op = hw.Gemm(64, 4096, 7168)
    assert e.gpu_ns(op) == gpu.gemm_time_ns(64, 4096, 7168, s.dtype, gpu=s.gpu,
                                            calib=s.gpu_calibration)
    stream = hw.MemoryStream(1e8)
    assert e.gpu_ns(stream) == gpu.kernel_time_ns(
        1e8, 0.0, gpu=s.gpu, calib=s.gpu_calibration,
        t0_ns=s.gpu_calibration.t0_gemm_ns(s.dtype))
    copies = np.full((8, 8), 16.0)
    assert e.comm_ns(hw.EpExchange("dispatch", copies, 7168)) == comm.ep_exchange_time_ns(
        copies, 7168, s)
