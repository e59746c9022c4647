"""GPU, link and dtype presets (B200, H200, H100; NVLink/NVSwitch inside a node, InfiniBand
between nodes). Whole systems (GPUs x links x PIM stacks) are :mod:`sieve.hw.system`.

This module owns *data*: peak numbers from vendor sheets and device queries, each with its
source. It computes nothing about time; the GPU time model is :mod:`sieve.hw.gpu`, the
interconnect model :mod:`sieve.hw.comm`, and fitted efficiencies live there. Presets are frozen;
variants are made with ``.override(...)`` (unknown keys raise :class:`ConfigError` listing the
valid ones), never by mutation.

Units are in the names: ``_tflops`` (dense tensor TFLOPS, 1e12 FLOP/s), ``_gbs`` (GB/s decimal,
1e9 B/s; link bandwidths are *per direction, per GPU*), ``_bytes``, ``_mhz``, ``_us``.
Source tags refer to shared/reference/hardware.md (§ = section, "src X" = its source list).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

from sieve.errors import ConfigError, lookup
from sieve.validate import override_fields

__all__ = [
    "DTYPES",
    "FALLBACK_COMPUTE",
    "GPUS",
    "LINKS",
    "MAX_GPUS_PER_NODE",
    "DType",
    "GpuSpec",
    "LinkSpec",
    "get_dtype",
    "get_gpu",
    "get_link",
]

#: An NVSwitch node holds at most 8 GPUs (HGX B200 / H100 / H200 baseboards, hardware.md §0).
MAX_GPUS_PER_NODE = 8


# ---------------------------------------------------------------------------------------------
# Data types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DType:
    """Storage and compute class of a GEMM's operands."""

    name: str
    weight_bytes: float  # bytes per weight element, block scales included
    act_bytes: float  # bytes per activation element as the GEMM reads it
    compute: str  # tensor-core class whose peak applies: "bf16", "fp8" or "fp4"
    doc: str = ""


DTYPES: dict[str, DType] = {d.name: d for d in (
    DType("bf16", 2.0, 2.0, "bf16", "BF16 weights and activations (seed: 'stored in bfloat16')"),
    DType("fp16", 2.0, 2.0, "bf16", "FP16; same tensor-core rate as BF16 (hardware.md §0)"),
    DType("fp8", 1.0, 1.0, "fp8", "FP8 E4M3, per-tensor scales"),
    # DeepSeek-style block FP8: fp32 scale per 128x128 weight block, per 1x128 activation group
    # (hardware.md §3.2 `fp8_block` = DeepGEMM path).
    DType("fp8_block", 1.0 + 4 / (128 * 128), 1.0 + 4 / 128, "fp8",
          "FP8 with fp32 scales per 128x128 weight block and per 128 activations"),
    # NVFP4: FP8 scale per 16 elements -> 0.5 + 1/16 = 0.5625 B (hardware.md §3.2 bytes column).
    DType("nvfp4", 0.5625, 0.5625, "fp4", "NVFP4 weights and activations (W4A4)"),
    # MXFP4 weights (E8M0 scale per 32 -> 0.53125 B) with BF16 activations (W4A16:
    # dequantised into the BF16 tensor-core path): vLLM's Marlin MXFP4 MoE on Hopper
    # (marlin_utils_fp4.py, "Weight-only FP4 compression will be used"; InferenceX H200 runs
    # set VLLM_MXFP4_USE_MARLIN=1) and its SM100_FI_MXFP4_BF16 path on Blackwell (mxfp4.py).
    DType("mxfp4", 0.53125, 2.0, "bf16", "MXFP4 weights, BF16 activations and MMA (W4A16)"),
    # MXFP4 weights x MXFP8 activations (E8M0 per 32 -> 1.03125 B), as InferenceX serves
    # gpt-oss on B200 (VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8=1): CUTLASS SM100 kind::mxf8f6f4,
    # "2x Hopper Fp8", i.e. the FP8 rate, not FP4's (docs/hardware.md, "Precisions").
    DType("mxfp4_mxfp8", 0.53125, 1.03125, "fp8",
          "MXFP4 weights x MXFP8 activations on FP8-rate tensor cores (Blackwell)"),
)}

#: What a weight format runs as on a GPU whose tensor cores lack its compute class: the
#: weights stay in memory at their own size and are dequantised in the kernel to BF16, which
#: the BF16 tensor cores multiply with BF16 activations (weight-only quantisation: vLLM's
#: Marlin kernels, marlin_utils_fp4.py: "Your GPU does not have native support for FP4
#: computation ... Weight-only FP4 compression will be used"). ⚠ The dequantisation's own cost
#: is not modelled (decode is bandwidth-bound; docs/hardware.md).
FALLBACK_COMPUTE = "bf16"


def get_dtype(name: str | DType) -> DType:
    """Resolve a dtype name (``bf16``, ``fp8``, ``fp8_block``, ``nvfp4``, ``mxfp4``, ``fp16``)."""
    if isinstance(name, DType):
        return name
    return lookup(DTYPES, name, "dtype")


# ---------------------------------------------------------------------------------------------
# Specs
# ---------------------------------------------------------------------------------------------


def _positive(what: str, name: str, value: float, allow_zero: bool = False) -> None:
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not numeric or not (value >= 0 if allow_zero else value > 0) or value == float("inf"):
        raise ConfigError(f"{what}: {name} must be {'>= 0' if allow_zero else '> 0'}, "
                          f"got {value!r}")


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One GPU: tensor-core peaks, SMs, caches, HBM and NVLink (all spec-sheet values)."""

    name: str
    description: str
    bf16_tflops: float  # dense BF16/FP16 tensor TFLOPS (no 2:4 sparsity)
    fp8_tflops: float  # dense FP8 tensor TFLOPS
    fp4_tflops: float  # dense FP4 tensor TFLOPS; 0 = no FP4 tensor cores
    sms: int  # streaming multiprocessors
    sm_clock_mhz: float  # max SM clock (device-reported)
    tensor_clock_mhz: float  # clock implied by the TFLOPS figure (derived)
    l2_bytes: float  # L2 cache
    hbm_stacks: int  # HBM stacks attached to this GPU
    hbm_physical_bytes: float  # HBM capacity on the package
    hbm_usable_bytes: float  # HBM capacity enabled for software
    hbm_bw_gbs: float  # HBM bandwidth, vendor spec
    hbm_bw_achievable_gbs: float  # HBM bandwidth measured on large weight-streaming kernels
    nvlink_gen: int  # NVLink generation
    nvlink_links: int  # NVLink links per GPU
    nvlink_bw_gbs: float  # NVLink bandwidth per GPU, per direction
    nvlink_latency_us: float  # hardware hop latency over NVLink/NVSwitch
    pcie_bw_gbs: float  # host PCIe bandwidth per direction
    memory_spec: str = "b200-hbm3e-pim"  # DRAM/PIM preset of the stacks (sieve.dram.spec)
    memory_overrides: tuple[tuple[str, Any], ...] = ()  # applied to memory_spec
    sources: Mapping[str, str] = field(default_factory=dict)

    def peak_tflops(self, dtype: str | DType) -> float:
        """Dense tensor-core peak of the class a dtype runs as on this GPU (TFLOPS): its own
        compute class when the tensor cores have it, else the weight-only fallback's
        (:meth:`run_dtype`)."""
        return self.peak_tflops_or_zero(self.run_dtype(dtype))

    def peak_tflops_or_zero(self, d: DType) -> float:
        return {"bf16": self.bf16_tflops, "fp8": self.fp8_tflops, "fp4": self.fp4_tflops}[
            d.compute]

    @property
    def native_compute(self) -> tuple[str, ...]:
        """Tensor-core compute classes this GPU runs natively (peak > 0)."""
        return tuple(c for c, v in (("bf16", self.bf16_tflops), ("fp8", self.fp8_tflops),
                                    ("fp4", self.fp4_tflops)) if v > 0)

    def run_dtype(self, dtype: str | DType) -> DType:
        """The dtype as this GPU runs it: itself when its compute class is native, else the
        weight-only fallback (:data:`FALLBACK_COMPUTE`): weights at their own bytes, BF16
        activations, BF16 tensor cores (e.g. NVFP4 or MXFP4 x MXFP8 on an H200)."""
        d = get_dtype(dtype)
        if self.peak_tflops_or_zero(d) > 0:
            return d
        if FALLBACK_COMPUTE not in self.native_compute:
            raise ConfigError(f"GPU {self.name!r}: dtype {d.name!r} needs {d.compute} tensor "
                              f"cores, and the GPU has neither them nor {FALLBACK_COMPUTE} ones "
                              f"for a weight-only fallback")
        return DType(f"{d.name}>w-only", d.weight_bytes, 2.0, FALLBACK_COMPUTE,
                     f"{d.name} weights dequantised to {FALLBACK_COMPUTE} in the kernel "
                     f"({self.name} has no {d.compute} tensor cores)")

    @property
    def hbm_bw_bytes_per_s(self) -> float:
        return self.hbm_bw_gbs * 1e9

    @property
    def nvlink_bw_bytes_per_s(self) -> float:
        return self.nvlink_bw_gbs * 1e9

    def dram_spec(self):
        """The :class:`sieve.dram.spec.DramSpec` of the attached (PIM) stacks."""
        from sieve.dram.presets import get_spec

        return get_spec(self.memory_spec, dict(self.memory_overrides) or None)

    def override(self, values: Mapping[str, Any] | None = None, **kw: Any) -> GpuSpec:
        """Copy with some fields replaced (keys = field names)."""
        return override_fields(self, "GPU", values, kw)

    def validate(self) -> GpuSpec:
        what = f"GPU {self.name!r}"
        for n in ("bf16_tflops", "fp8_tflops", "sm_clock_mhz", "tensor_clock_mhz", "l2_bytes",
                  "hbm_physical_bytes", "hbm_usable_bytes", "hbm_bw_gbs",
                  "hbm_bw_achievable_gbs", "nvlink_bw_gbs", "pcie_bw_gbs"):
            _positive(what, n, getattr(self, n))
        _positive(what, "fp4_tflops", self.fp4_tflops, allow_zero=True)
        _positive(what, "nvlink_latency_us", self.nvlink_latency_us, allow_zero=True)
        for n in ("sms", "hbm_stacks", "nvlink_gen", "nvlink_links"):
            v = getattr(self, n)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{what}: {n} must be a positive integer, "
                                  f"got {getattr(self, n)!r}")
        if self.hbm_bw_achievable_gbs > self.hbm_bw_gbs:
            raise ConfigError(f"{what}: hbm_bw_achievable_gbs ({self.hbm_bw_achievable_gbs}) "
                              f"exceeds hbm_bw_gbs ({self.hbm_bw_gbs})")
        if self.hbm_usable_bytes > self.hbm_physical_bytes:
            raise ConfigError(f"{what}: hbm_usable_bytes exceeds hbm_physical_bytes")
        if not self.memory_spec.lower().endswith((".json", ".toml")):
            from sieve.dram.presets import PRESETS

            lookup(PRESETS, self.memory_spec, f"{what}: memory_spec")
        return self

    def describe(self) -> list[tuple[str, str, str]]:
        """Rows (field, value with unit, source) for ``sieve hardware NAME``."""
        rows = []
        for f in fields(self):
            if f.name in ("sources",):
                continue
            v = getattr(self, f.name)
            rows.append((f.name, _fmt(f.name, v), self.sources.get(f.name, "")))
        rows.append(("tensor cores", ", ".join(self.native_compute), "native compute classes "
                     "(peak > 0)"))
        for name, d in DTYPES.items():
            r = self.run_dtype(d)
            if r is not d:
                rows.append((f"dtype {name}", f"runs as {r.compute} (weights "
                             f"{r.weight_bytes:g} B, activations {r.act_bytes:g} B)",
                             "weight-only fallback: dequantised in the kernel (vLLM Marlin)"))
        return rows


@dataclass(frozen=True, slots=True)
class LinkSpec:
    """A link tier: bandwidth per GPU per direction and hardware hop latency."""

    name: str
    description: str
    bw_gbs: float  # per GPU, per direction
    latency_us: float  # hardware hop latency (software floors are fitted in sieve.hw.comm)
    sources: Mapping[str, str] = field(default_factory=dict)

    @property
    def bw_bytes_per_s(self) -> float:
        return self.bw_gbs * 1e9

    def override(self, values: Mapping[str, Any] | None = None, **kw: Any) -> LinkSpec:
        return override_fields(self, "link", values, kw)

    def validate(self) -> LinkSpec:
        _positive(f"link {self.name!r}", "bw_gbs", self.bw_gbs)
        _positive(f"link {self.name!r}", "latency_us", self.latency_us, allow_zero=True)
        return self


def _fmt(name: str, v: Any) -> str:
    if name.endswith("_bytes"):
        return f"{v / 1e9:g} GB" if v >= 1e9 else f"{v / 1e6:g} MB"
    for suffix, unit in (("_tflops", "TFLOPS"), ("_gbs", "GB/s"), ("_mhz", "MHz"), ("_us", "us")):
        if name.endswith(suffix):
            return f"{v:g} {unit}"
    return str(v)


# ---------------------------------------------------------------------------------------------
# Presets. Every value cites shared/reference/hardware.md (§ and source letter).
# ---------------------------------------------------------------------------------------------

_B200 = GpuSpec(
    name="b200",
    description="NVIDIA B200 SXM (HGX, 1000 W), 8 HBM3E(-PIM) stacks, NVLink 5",
    bf16_tflops=2250.0,  # §0 "dense BF16/FP16 tensor", src A (DGX B200 datasheet, HGX table)
    fp8_tflops=4500.0,  # §0 "dense FP8", src A
    fp4_tflops=9000.0,  # §0 "dense FP4"; src A (ml-eng's 10000 for NVFP4 is not reproduced ⚠)
    sms=148,  # §1: 2 dies x 74 of 80 SMs; src C (device query), D
    sm_clock_mhz=1965.0,  # §0 "SM clock (max, device-reported)", src B
    tensor_clock_mhz=1856.0,  # §1 ⚠ derived: 2250e12 / (148 SMs x 8192 FLOP/clk)
    l2_bytes=126.5e6,  # §0 "L2", src C (device query 126.50 MB)
    hbm_stacks=8,  # §0 "HBM: 8 stacks (4/die)", src B, E, F
    hbm_physical_bytes=192e9,  # §0 "192 GB physical", src E (8 x 24 GB)
    hbm_usable_bytes=180e9,  # §0 "180 GB usable on HGX/DGX", src E ⚠ (192 x 15/16)
    hbm_bw_gbs=8000.0,  # §0 "HBM BW (spec) 8.0 TB/s", src B
    hbm_bw_achievable_gbs=6200.0,  # §0 "achieved HBM BW, big GEMV": 6.2-6.9 TB/s; lower end
    nvlink_gen=5,  # §0 "NVLink 5", src H
    nvlink_links=18,  # §0 "18 links", src H
    nvlink_bw_gbs=900.0,  # §0 "900 GB/s per direction", src H (aiconfigurator intra_node_bw)
    nvlink_latency_us=0.8,  # pim-simulators.md §2: LLMSimulator NVLink latency 0.8 us ⚠ (H100)
    pcie_bw_gbs=128.0,  # §1 "PCIe Gen6 x16 (~128 GB/s per direction)", aiconfigurator yaml
    memory_spec="b200-hbm3e-pim",  # sieve.dram.spec default: 8 stacks HBM3E 8 Gb/s with PIM
    sources={
        "bf16_tflops": "hardware.md §0, src A", "fp8_tflops": "hardware.md §0, src A",
        "fp4_tflops": "hardware.md §0, src A", "sms": "hardware.md §1, src C/D",
        "sm_clock_mhz": "hardware.md §0, src B", "tensor_clock_mhz": "hardware.md §1 (derived)",
        "l2_bytes": "hardware.md §0, src C", "hbm_stacks": "hardware.md §0",
        "hbm_physical_bytes": "hardware.md §0, src E",
        "hbm_usable_bytes": "hardware.md §0, src E (192 x 15/16)",
        "hbm_bw_gbs": "hardware.md §0, src B",
        "hbm_bw_achievable_gbs": "hardware.md §0/§3.2 big-GEMV range 6.2-6.9 TB/s (low end)",
        "nvlink_gen": "hardware.md §0, src H", "nvlink_links": "hardware.md §0, src H",
        "nvlink_bw_gbs": "hardware.md §0, src H", "nvlink_latency_us":
        "pim-simulators.md §2 (LLMSimulator preset)", "pcie_bw_gbs": "hardware.md §1",
        "memory_spec": "sieve.dram.spec default preset (hardware.md §5 derived B200 HBM3E-PIM)",
    },
)

_H200 = replace(
    _B200,
    name="h200",
    description="NVIDIA H200 SXM, 6 HBM3E stacks, NVLink 4",
    bf16_tflops=989.0, fp8_tflops=1979.0, fp4_tflops=0.0,  # §0, src A/B; no FP4 tensor cores
    sms=132, sm_clock_mhz=1830.0,  # §0, src B/F
    tensor_clock_mhz=1830.0,  # §1: 989.4e12 / (132 x 4096) = 1.83 GHz
    l2_bytes=50e6,  # §0 "50 MB", src B
    hbm_stacks=6, hbm_physical_bytes=141e9, hbm_usable_bytes=141e9,  # §0, src B/F ⚠ (yobitel)
    hbm_bw_gbs=4800.0,  # §0, src B
    hbm_bw_achievable_gbs=4100.0,  # §0 "achieved HBM BW, big GEMV 4.1 TB/s (85 %)"
    nvlink_gen=4, nvlink_links=18, nvlink_bw_gbs=450.0,  # §0 NVLink 4: 900 bidir = 450/dir
    pcie_bw_gbs=64.0,  # ⚠ PCIe Gen5 x16 (not in hardware.md; 64 GB/s/dir is the Gen5 x16 rate)
    # No H200-PIM preset exists: AttAcc's HBM3-PIM (5.2 Gb/s/pin) with 6 stacks gives
    # 4.0 TB/s external vs the 4.8 TB/s spec (H200 pins ~6.25 Gb/s, §0) ⚠ 17 % low.
    memory_spec="attacc-hbm3-pim", memory_overrides=(("stacks", 6),),
    sources={**_B200.sources,
             "bf16_tflops": "hardware.md §0, src A/B", "fp8_tflops": "hardware.md §0, src A/B",
             "fp4_tflops": "hardware.md §0 (n/a)", "sms": "hardware.md §0, src C/D/F",
             "sm_clock_mhz": "hardware.md §0, src B", "tensor_clock_mhz": "hardware.md §1",
             "l2_bytes": "hardware.md §0, src B", "hbm_physical_bytes": "hardware.md §0, src F",
             "hbm_usable_bytes": "hardware.md §0", "hbm_bw_gbs": "hardware.md §0, src B",
             "hbm_bw_achievable_gbs": "hardware.md §0 (4.1 TB/s, 85 %)",
             "nvlink_bw_gbs": "hardware.md §0, src H (h200_sxm.yaml 450 GB/s)",
             "pcie_bw_gbs": "PCIe Gen5 x16 nominal ⚠ (not in hardware.md)",
             "memory_spec": "⚠ AttAcc HBM3-PIM with 6 stacks: 4.0 TB/s vs 4.8 TB/s spec"},
)

_H100 = replace(
    _H200,
    name="h100",
    description="NVIDIA H100 SXM, 5 active HBM3 stacks, NVLink 4",
    hbm_stacks=5, hbm_physical_bytes=80e9, hbm_usable_bytes=80e9,  # §0, src F
    hbm_bw_gbs=3350.0,  # §0, src B
    hbm_bw_achievable_gbs=2850.0,  # §0 "2.85 TB/s (85 %)"
    # AttAcc's HBM3-PIM is specified for exactly this device: 5 stacks x 670.4 GB/s = 3.35 TB/s
    # (pim-simulators.md §2, AttAcc make_xpu_config H100).
    memory_spec="attacc-hbm3-pim", memory_overrides=(),
    sources={**_H200.sources,
             "hbm_physical_bytes": "hardware.md §0, src F", "hbm_bw_gbs": "hardware.md §0, src B",
             "hbm_bw_achievable_gbs": "hardware.md §0 (2.85 TB/s, 85 %)",
             "memory_spec": "AttAcc HBM3-PIM (pim-simulators.md §2: 5 x 670.4 GB/s = H100)"},
)

GPUS: dict[str, GpuSpec] = {g.name: g.validate() for g in (_B200, _H200, _H100)}
DEFAULT_GPU = "b200"

LINKS: dict[str, LinkSpec] = {lk.name: lk.validate() for lk in (
    # 400 Gb/s ConnectX-7 NDR per GPU = 50 GB/s per direction: DeepEP docs/legacy.md ("CX7
    # 400 Gb/s", hardware.md §4.2) and LLMSimulator's IB 50 GB/s per device (pim-simulators.md §2).
    # Duplex's "400 GB/s InfiniBand between nodes" (pim-simulators.md §2) is read here as per
    # 8-GPU node = 8 x 50 GB/s ⚠ (my reading; the paper text does not say per GPU or per node).
    LinkSpec("ib-ndr400", "InfiniBand NDR, one 400 Gb/s ConnectX-7 per GPU", 50.0,
             0.13,  # LLMSimulator IB latency 130 ns (pim-simulators.md §2) ⚠ hardware hop only
             {"bw_gbs": "DeepEP legacy.md CX7 400 Gb/s; LLMSimulator IB 50 GB/s",
              "latency_us": "LLMSimulator hardware_config.h IB 130 ns ⚠"}),
    # Duplex read literally: 400 GB/s per GPU (a sensitivity case, not a product we can cite).
    LinkSpec("ib-duplex400", "Duplex paper's 400 GB/s inter-node link, read as per GPU ⚠", 400.0,
             0.13, {"bw_gbs": "pim-simulators.md §2 (Duplex 6_experimental_setup.tex) ⚠ per GPU",
                    "latency_us": "LLMSimulator IB 130 ns ⚠"}),
    LinkSpec("nvlink5", "NVLink 5 via NVSwitch (B200)", 900.0, 0.8,
             {"bw_gbs": "hardware.md §0, src H", "latency_us": "LLMSimulator NVLink 0.8 us ⚠"}),
    LinkSpec("nvlink4", "NVLink 4 via NVSwitch (H100/H200)", 450.0, 0.8,
             {"bw_gbs": "hardware.md §0, src H/I", "latency_us": "LLMSimulator NVLink 0.8 us"}),
)}
DEFAULT_INTER_LINK = "ib-ndr400"


def get_gpu(name: str | GpuSpec, overrides: Mapping[str, Any] | None = None) -> GpuSpec:
    """Return a GPU preset (``b200``, ``h200``, ``h100``), optionally with overrides."""
    gpu = name if isinstance(name, GpuSpec) else lookup(GPUS, name, "GPU")
    return gpu.override(overrides) if overrides else gpu


def get_link(name: str | LinkSpec, overrides: Mapping[str, Any] | None = None) -> LinkSpec:
    """Return a link preset (``ib-ndr400``, ``ib-duplex400``, ``nvlink5``, ``nvlink4``)."""
    link = name if isinstance(name, LinkSpec) else lookup(LINKS, name, "link")
    return link.override(overrides) if overrides else link
