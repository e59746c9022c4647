"""Fitted efficiency parameters of the GPU and interconnect time models (data).

:class:`GpuCalibration` (used by :mod:`sieve.hw.gpu`) and :class:`CommCalibration` (used by
:mod:`sieve.hw.comm`), with the stored fits per GPU. The fits are made offline by
:mod:`sieve.calibration.costmodels` (``python benchmarks/validate_costmodels.py --fit``); tests
re-run them and check they reproduce the stored numbers. A :class:`~sieve.hw.system.SystemConfig`
carries the calibrations of its GPU, resolved once. Times inside a calibration are data and
carry their unit in the field name (``t0_*_s`` seconds, ``alpha_us`` microseconds); the time
models convert them to nanoseconds where they use them (:meth:`GpuCalibration.t0_gemm_ns`,
:func:`sieve.hw.comm.tier_time_ns`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from sieve.errors import ConfigError, choices, lookup
from sieve.hw.presets import DType, GpuSpec
from sieve.validate import override_fields

__all__ = [
    "CALIBRATIONS",
    "COMM_CALIBRATIONS",
    "CUSTOM_ALL_REDUCE",
    "AlphaBeta",
    "CommCalibration",
    "GpuCalibration",
    "get_calibration",
    "get_comm_calibration",
]

#: Nanoseconds per second and per microsecond: the conversions from the calibration fields'
#: units to the simulator's time unit.
NS_PER_S = 1e9
NS_PER_US = 1e3


@dataclass(frozen=True, slots=True)
class GpuCalibration:
    """Achievable-efficiency parameters of the GPU model (dimensionless unless named _s)."""

    name: str
    eta_bw: float  # achieved fraction of the HBM spec bandwidth in streaming kernels
    eta_c_bf16: float  # achieved fraction of the dense BF16 peak on full tiles
    eta_c_fp8: float  # ... FP8 peak
    eta_c_fp4: float  # ... FP4 peak
    overlap_p: float  # p of combine_p(t_mem, t_comp); math.inf = roofline max
    t0_gemm_bf16_s: float  # fixed cost per dense/grouped GEMM kernel, BF16 path
    t0_gemm_fp8_s: float  # ... FP8 path (includes the activation-quantisation kernel)
    t0_gemm_fp4_s: float  # ... FP4 path (includes the activation-quantisation kernel)
    t0_moe_bf16_s: float  # extra fixed cost per MoE layer (routing, permute, finalize), BF16
    t0_moe_fp8_s: float
    t0_moe_fp4_s: float
    tile_n: int = 128  # output-tile width along the weight's N dimension
    tile_m_max: int = 128  # output-tile height along tokens, large-M kernels
    tile_m_min: int = 16  # smallest token tile (MMA N >= 16 with swap-AB) ⚠
    source: str = ""

    def eta_c(self, d: DType) -> float:
        return {"bf16": self.eta_c_bf16, "fp8": self.eta_c_fp8, "fp4": self.eta_c_fp4}[d.compute]

    def t0_gemm_ns(self, d: DType) -> float:
        """Fixed cost of one GEMM kernel of the dtype's compute class, in ns."""
        return {"bf16": self.t0_gemm_bf16_s, "fp8": self.t0_gemm_fp8_s,
                "fp4": self.t0_gemm_fp4_s}[d.compute] * NS_PER_S

    def t0_moe_ns(self, d: DType) -> float:
        """Extra fixed cost of one MoE layer of the dtype's compute class, in ns."""
        return {"bf16": self.t0_moe_bf16_s, "fp8": self.t0_moe_fp8_s,
                "fp4": self.t0_moe_fp4_s}[d.compute] * NS_PER_S

    def override(self, values: Mapping[str, Any] | None = None, **kw: Any) -> GpuCalibration:
        return override_fields(self, "GPU calibration", values, kw)

    def validate(self) -> GpuCalibration:
        what = f"GPU calibration {self.name!r}"
        for n in ("eta_bw", "eta_c_bf16", "eta_c_fp8", "eta_c_fp4"):
            v = getattr(self, n)
            if not 0 < v <= 1:
                raise ConfigError(f"{what}: {n} must be in (0, 1], got {v!r}")
        if not self.overlap_p >= 1:
            raise ConfigError(f"{what}: overlap_p must be >= 1 (inf = max), got "
                              f"{self.overlap_p!r}")
        for f in fields(self):
            if f.name.startswith("t0_") and not getattr(self, f.name) >= 0:
                raise ConfigError(f"{what}: {f.name} must be >= 0")
        if not 1 <= self.tile_m_min <= self.tile_m_max or self.tile_n < 1:
            raise ConfigError(f"{what}: need 1 <= tile_m_min <= tile_m_max and tile_n >= 1")
        return self


# B200: least-squares fit to hardware.md §3.2 + §3.3 training rows. Regenerate with
# `python benchmarks/validate_costmodels.py --fit`; tests/test_gpu.py checks that a fresh fit
# reproduces these numbers, so they cannot drift from the data silently.
_B200_FIT = GpuCalibration(
    name="b200",
    eta_bw=0.7225, eta_c_bf16=0.7732, eta_c_fp8=0.6435, eta_c_fp4=0.4713, overlap_p=3.0,
    t0_gemm_bf16_s=2.556e-6, t0_gemm_fp8_s=8.117e-6, t0_gemm_fp4_s=11.96e-6,
    t0_moe_bf16_s=8.515e-6, t0_moe_fp8_s=22.66e-6, t0_moe_fp4_s=29.24e-6,
    source="least-squares fit to hardware.md §3.2/§3.3 training rows "
    "(sieve.calibration.costmodels)",
)

# H100/H200: no per-row GEMM table in hardware.md; its §3.2 text gives bf16 fits t0 4.2-5.7 us
# and 85 % of spec BW (R^2 >= 0.98), and MAMF ceilings H100 BF16 80.3 %, FP8 70.9 %, H200 FP8
# 73.4 %. Everything else (p, MoE overheads, FP8 t0) is borrowed from the B200 fit ⚠.
_HOPPER_QUOTED = replace(
    _B200_FIT, name="hopper", eta_bw=0.85, eta_c_bf16=0.803, eta_c_fp8=0.709,
    t0_gemm_bf16_s=4.5e-6,
    source="hardware.md §3.2 text (H100/H200 bf16 fits, MAMF); rest borrowed from b200 ⚠",
)

CALIBRATIONS: dict[str, GpuCalibration] = {
    "b200": _B200_FIT.validate(),
    "h200": replace(_HOPPER_QUOTED, name="h200", eta_c_fp8=0.734).validate(),
    "h100": replace(_HOPPER_QUOTED, name="h100").validate(),
}


def get_calibration(name: str | GpuCalibration | GpuSpec) -> GpuCalibration:
    """Calibration by name, or the one belonging to a GPU preset."""
    if isinstance(name, GpuCalibration):
        return name
    if isinstance(name, GpuSpec):
        name = name.name
    return lookup(CALIBRATIONS, name, "GPU calibration")


@dataclass(frozen=True, slots=True)
class AlphaBeta:
    alpha_us: float  # latency floor of the operation (software + hardware), microseconds
    eta: float  # achieved fraction of the per-direction link bandwidth, (0, 1]


@dataclass(frozen=True, slots=True)
class CommCalibration:
    """Fitted ``alpha``/``eta`` per operation for one GPU/software stack."""

    name: str
    all_gather: AlphaBeta
    all_to_all: AlphaBeta
    all_reduce: AlphaBeta
    ep_dispatch: AlphaBeta
    ep_combine: AlphaBeta
    source: str = ""

    def op(self, name: str) -> AlphaBeta:
        return getattr(self, name)

    def override(self, values: Mapping[str, Any] | None = None, **kw: Any) -> CommCalibration:
        """Keys: ``<op>.alpha_us`` / ``<op>.eta`` (op = all_gather, all_to_all, all_reduce,
        ep_dispatch, ep_combine), ``name``, ``source``."""
        items = dict(values or {})
        items.update(kw)
        ops = [f.name for f in fields(self) if f.type in ("AlphaBeta", AlphaBeta)]
        valid = [f"{o}.{p}" for o in ops for p in ("alpha_us", "eta")] + ["name", "source"]
        new = {}
        for key, v in items.items():
            if key not in valid:
                raise ConfigError(f"comm calibration {self.name!r}: unknown override {key!r} "
                                  f"(valid: {choices(valid)})")
            if "." in key:
                o, p = key.split(".")
                new[o] = replace(new.get(o, getattr(self, o)), **{p: v})
            else:
                new[key] = v
        return replace(self, **new).validate()

    def validate(self) -> CommCalibration:
        for f in fields(self):
            ab = getattr(self, f.name)
            if isinstance(ab, AlphaBeta):
                if not 0 < ab.eta <= 1:
                    raise ConfigError(f"comm calibration {self.name!r}: {f.name}.eta must be in "
                                      f"(0, 1], got {ab.eta!r}")
                if not ab.alpha_us >= 0:
                    raise ConfigError(f"comm calibration {self.name!r}: {f.name}.alpha_us must "
                                      f"be >= 0, got {ab.alpha_us!r}")
        return self

# Least-squares fits to hardware.md §4.1/§4.2 training rows (sieve.calibration.costmodels;
# regenerate with `python benchmarks/validate_costmodels.py --fit`; tests/test_comm.py checks
# they reproduce).
COMM_CALIBRATIONS: dict[str, CommCalibration] = {c.name: c.validate() for c in (
    CommCalibration(
        "b200",
        all_gather=AlphaBeta(18.38, 0.4552), all_to_all=AlphaBeta(13.45, 0.5551),
        all_reduce=AlphaBeta(27.38, 0.6704), ep_dispatch=AlphaBeta(21.53, 0.5928),
        ep_combine=AlphaBeta(21.51, 0.6976),
        source="fit: NCCL 2.29.2 (hardware.md §4.1), DeepEP LL SGLang 0.5.12 (§4.2)"),
    CommCalibration(
        "h200",
        all_gather=AlphaBeta(11.74, 0.6727), all_to_all=AlphaBeta(9.04, 0.5825),
        all_reduce=AlphaBeta(18.90, 0.8392), ep_dispatch=AlphaBeta(11.29, 0.6048),
        ep_combine=AlphaBeta(11.87, 0.5086),
        source="fit: NCCL 2.29.2 (hardware.md §4.1), DeepEP LL SGLang 0.5.12 (§4.2)"),
    # H100 has only all-to-all in §4.1; all-gather/all-reduce borrow H200's fit (same NVLink 4
    # and NVSwitch-3 fabric, hardware.md §1) ⚠.
    CommCalibration(
        "h100",
        all_gather=AlphaBeta(11.74, 0.6727), all_to_all=AlphaBeta(9.48, 0.5877),
        all_reduce=AlphaBeta(18.90, 0.8392), ep_dispatch=AlphaBeta(12.58, 0.5933),
        ep_combine=AlphaBeta(13.49, 0.5010),
        source="fit (all_to_all, DeepEP); all_gather/all_reduce borrowed from h200 ⚠"),
)}


def get_comm_calibration(name: str | CommCalibration | GpuSpec) -> CommCalibration:
    """Calibration by name, or the one for a GPU preset."""
    if isinstance(name, CommCalibration):
        return name
    if isinstance(name, GpuSpec):
        name = name.name
    return lookup(COMM_CALIBRATIONS, name, "comm calibration")


#: Measured latency of the tensor-parallel all-reduce that serving frameworks run inside CUDA
#: graphs for decode (vLLM's custom one-/two-shot all-reduce, not NCCL's ring), per GPU and TP
#: size: ``(message bytes, us)`` points. Source: NVIDIA aiconfigurator@095f58a
#: aic-core/src/aiconfigurator_core/systems/data/<gpu>/comm/vllm/0.19.0/
#: custom_allreduce_perf.parquet (collector/network/collect_all_reduce.py: five back-to-back
#: calls captured in a CUDA graph), bf16 messages of 8K/16K/64K/256K elements. These are
#: measurements used as data (interpolated, sieve.hw.comm.tp_all_reduce_time_ns), not a fit.
#: H100 has no table there: it borrows H200's (same NVLink 4 / NVSwitch-3 fabric) ⚠.
_AR_SIZES = (16_384, 32_768, 131_072, 524_288)
CUSTOM_ALL_REDUCE: dict[str, dict[int, tuple[tuple[int, float], ...]]] = {
    "b200": {2: tuple(zip(_AR_SIZES, (7.1, 7.0, 7.4, 9.4))),
             4: tuple(zip(_AR_SIZES, (7.4, 7.4, 8.1, 18.0))),
             8: tuple(zip(_AR_SIZES, (8.1, 8.2, 9.4, 26.0)))},
    "h200": {2: tuple(zip(_AR_SIZES, (4.5, 4.5, 4.8, 6.3))),
             4: tuple(zip(_AR_SIZES, (4.8, 5.0, 5.8, 10.5))),
             8: tuple(zip(_AR_SIZES, (5.2, 5.7, 8.0, 11.1)))},
}
CUSTOM_ALL_REDUCE["h100"] = CUSTOM_ALL_REDUCE["h200"]
