"""The GPU's part of a PIM round trip (activation, softmax, partial-sum reduction).

The seed's PIM units only multiply-accumulate (seed §2, §6: GWRITE, GEMV, readback), so the
non-linear steps between two GEMVs run on the GPU: results are read back (RDRES, timed by the
engine), the GPU computes, and the next GEMV's input is written (GWRITE, timed by the engine).
The GPU's share is charged as the next kernel's ``gap_ns`` (:class:`sieve.dram.GemvKernel`).

One GPU step costs :func:`sieve.hw.gpu.kernel_time_ns` with the GPU's calibrated fixed per-kernel
cost ``t0_gemm`` (bf16; 2.56 µs on the B200 fit, docs/validation.md *GPU cost model*) and the
bytes it touches (read-back results or partial sums, outputs) at the calibrated HBM rate
(``eta_bw x`` spec bandwidth). ⚠ Two assumptions: (1) a step costs as much as one launched
GPU kernel under CUDA graphs; a persistent PIM-control kernel (seed §6 "custom GPU kernel")
would only pay a device-wide barrier, so pass ``fixed_ns`` to study that; (2) read-back data
is charged at HBM rate although it may stay on chip (sieve.hw.gpu has no L2 model), which is
conservative. Partial-sum reduction is fused into the step that consumes the result
(activation, softmax, or the MoE combine that runs anyway), so it adds bytes, not a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from sieve.errors import ConfigError
from sieve.hw.calibrations import GpuCalibration, get_calibration
from sieve.hw.presets import DEFAULT_GPU, GpuSpec, get_gpu

__all__ = ["GpuStep", "gpu_step"]


@dataclass(frozen=True, eq=False)
class GpuStep:
    """Cost of one GPU step between PIM GEMVs: ``fixed_ns + ns_per_byte * bytes``.

    Holds the resolved GPU and calibration it was made from, so a system's overridden GPU or
    calibration reaches the PIM host steps."""

    gpu: GpuSpec
    calib: GpuCalibration
    fixed_ns: float
    ns_per_byte: float
    source: str

    def ns(self, n_bytes: float, *, fixed: bool = True) -> float:
        """Time of a step touching ``n_bytes`` (``fixed=False``: bytes only, for work fused
        into a step that is paid anyway)."""
        if n_bytes < 0:
            raise ConfigError(f"GPU step: bytes must be >= 0, got {n_bytes}")
        from sieve.hw.gpu import kernel_time_ns

        t0 = self.fixed_ns if fixed else 0.0
        return kernel_time_ns(n_bytes, 0.0, gpu=self.gpu, calib=self.calib, t0_ns=t0)

    def key(self) -> tuple:
        """What the step's cost depends on (for memo keys)."""
        return (self.gpu.name, self.gpu.hbm_bw_gbs, self.calib.name, self.calib.eta_bw,
                self.calib.overlap_p, self.fixed_ns)


def gpu_step(gpu: str | GpuSpec | None = None, fixed_ns: float | None = None, *,
             calib: GpuCalibration | None = None) -> GpuStep:
    """The GPU step of ``gpu`` (None: :data:`sieve.hw.presets.DEFAULT_GPU`) with ``calib``
    (None: the GPU's own calibration); default fixed cost: the calibration's bf16
    ``t0_gemm``."""
    g = get_gpu(DEFAULT_GPU if gpu is None else gpu)
    cal = get_calibration(g) if calib is None else get_calibration(calib)
    if fixed_ns is None:
        fixed = cal.t0_gemm_bf16_s * 1e9
        src = f"sieve.hw.gpu calibration {cal.name!r}: t0_gemm_bf16 (fixed cost per GPU kernel)"
    else:
        if not fixed_ns >= 0:
            raise ConfigError(f"GPU step: fixed_ns must be >= 0, got {fixed_ns!r}")
        fixed, src = float(fixed_ns), "explicit fixed_ns (user)"
    per_byte = 1e9 / (cal.eta_bw * g.hbm_bw_bytes_per_s)
    return GpuStep(gpu=g, calib=cal, fixed_ns=fixed, ns_per_byte=per_byte, source=src)
