"""Fitting the GPU and interconnect cost models to the measured tables, and validating them.

Owns: loading the measured rows (``sieve/calibration/data/*.csv``, transcribed from
shared/reference/ hardware.md §3.2, §3.3, §4.1, §4.2 and checked against it by the tests), the
train/hold-out split, the least-squares fits that produce the GPU calibration of
:data:`MEASURED_GPU` in :data:`sieve.hw.calibrations.CALIBRATIONS` and
:data:`sieve.hw.calibrations.COMM_CALIBRATIONS`, and per-row validation records. It never changes
a calibration in place: fits return new objects; ``benchmarks/validate_costmodels.py`` prints
them and the tables for docs/validation.md.

Time unit: nanoseconds, as everywhere in the simulator. Measured rows are read in µs (the
tables' unit) and converted once when they are loaded (:attr:`Row.measured_ns`);
:func:`predict` returns ns; :func:`validation_records` converts back to µs for the docs tables.
The fits minimise log(model / measured), which does not depend on the unit; the fitted fixed
costs are optimised in µs for conditioning and stored in seconds (the calibration fields
``t0_*_s``), converted in :func:`_gcal_from`.

Split rule (documented in docs/validation.md): within each family (dense GEMM: one dtype;
MoE: one kernel + dtype; NCCL: one GPU + collective; DeepEP: one GPU + op), rows sorted by
size; even positions train, odd positions are held out. Also held out: dense rows whose
weights are < 25 MB (may be L2-resident: the collector rotates only 5 weight copies,
hardware.md §3.2) and MoE rows of software stacks that the default model does not represent
(TRT-LLM CUTLASS BF16, SGLang Triton: slower kernels, reported for comparison).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, replace
from importlib import resources

import numpy as np
from scipy.optimize import least_squares

from sieve.hw import comm, gpu
from sieve.hw.presets import GpuSpec, get_dtype, get_gpu
from sieve.hw.system import make_system

__all__ = [
    "L2_SAFE_WEIGHT_BYTES",
    "MEASURED_GPU",
    "OVERLAP_P_GRID",
    "Row",
    "deepep_rows",
    "fit_comm",
    "fit_gpu",
    "gemm_rows",
    "load_rows",
    "moe_rows",
    "moe_token_counts",
    "nccl_rows",
    "predict",
    "summary",
]

#: The GPU the dense GEMM and MoE tables (hardware.md §3.2, §3.3; ``data/b200_*.csv``) were
#: measured on: the GPU fit is this GPU's calibration. (The NCCL and DeepEP tables name their
#: GPU per row.)
MEASURED_GPU = "b200"
#: Weights below this may stay in the 126.5 MB L2 across the collector's 5 rotating copies
#: (hardware.md §3.2: "rotates up to 5 weight copies, >= L2 size when weights >= ~25 MB").
L2_SAFE_WEIGHT_BYTES = 25e6
#: MoE software stacks the default calibration represents (best measured per dtype).
REFERENCE_MOE = {("flashinfer-trtllm-gen", "bf16"), ("trtllm-deepgemm", "fp8_block"),
                 ("trtllm-cutlass", "nvfp4")}
#: Discrete choices of the overlap exponent p tried by the GPU fit (inf = roofline max).
OVERLAP_P_GRID = (1.0, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, math.inf)


@dataclass(frozen=True)
class Row:
    family: str  # e.g. "dense bf16", "moe flashinfer-trtllm-gen bf16", "nccl b200 all_gather"
    label: str  # human-readable shape / size
    measured_ns: float
    role: str  # "train", "hold-out", "hold-out (L2 ⚠)", "hold-out (other kernel)"
    params: dict  # inputs for predict()


def load_rows(name: str) -> list[dict]:
    """Rows of ``sieve/calibration/data/<name>.csv`` (comment lines start with '#')."""
    text = resources.files("sieve.calibration").joinpath("data", f"{name}.csv").read_text()
    return list(csv.DictReader(line for line in text.splitlines() if not line.startswith("#")))


def _split(rows: list[Row]) -> list[Row]:
    out, fams = [], {}
    for r in rows:
        fams.setdefault(r.family, []).append(r)
    for fam_rows in fams.values():
        j = 0
        for r in fam_rows:  # rows arrive sorted by size within a family
            if r.role == "train":
                r = replace(r, role="train" if j % 2 == 0 else "hold-out")
                j += 1
            out.append(r)
    return out


def gemm_rows() -> list[Row]:
    """hardware.md §3.2, every B200 row."""
    rows = []
    data = sorted(load_rows("b200_gemm_measured"),
                  key=lambda r: (r["dtype"], int(r["n"]), int(r["k"]), int(r["m"])))
    for r in data:
        m, n, k = int(r["m"]), int(r["n"]), int(r["k"])
        wbytes = n * k * get_dtype(r["dtype"]).weight_bytes
        role = "train" if wbytes >= L2_SAFE_WEIGHT_BYTES else "hold-out (L2 ⚠)"
        rows.append(Row(f"dense {r['dtype']}", f"M={m} N={n} K={k}", _ns(r["t_us"]),
                        role, {"kind": "gemm", "m": m, "n": n, "k": k, "dtype": r["dtype"]}))
    return _split(rows)


def moe_token_counts(experts: int, topk: int, ep: int, tokens: int) -> np.ndarray:
    """Balanced routing as the §3.3 collector: the rank holds ``E/EP`` experts and computes
    ``T k / EP`` (token, expert) pairs, spread evenly over ``min(E/EP, T k / EP)`` experts."""
    local = experts // ep
    pairs = tokens * topk // ep
    counts = np.zeros(local, dtype=np.int64)
    if pairs:
        active = min(local, pairs)
        counts[:active] = pairs // active
        counts[: pairs - (pairs // active) * active] += 1
    return counts


def moe_rows() -> list[Row]:
    """hardware.md §3.3, every row (the DeepSeek grouped-routing rows it excludes are absent)."""
    rows = []
    data = sorted(load_rows("b200_moe_measured"),
                  key=lambda r: (r["kernel"], r["dtype"], int(r["ep"]), int(r["tokens"])))
    for r in data:
        h, i, e, k, ep, t = (int(r[x]) for x in
                             ("hidden", "inter", "experts", "topk", "ep", "tokens"))
        role = "train" if (r["kernel"], r["dtype"]) in REFERENCE_MOE else "hold-out (other kernel)"
        rows.append(Row(f"moe {r['kernel']} {r['dtype']}",
                        f"H={h} I={i} E={e} k={k} EP={ep} T={t}", _ns(r["t_us"]), role,
                        {"kind": "moe", "counts": moe_token_counts(e, k, ep, t), "hidden": h,
                         "inter": i, "dtype": r["dtype"]}))
    return _split(rows)


def nccl_rows() -> list[Row]:
    """hardware.md §4.1, every row (8 GPUs in one node)."""
    data = sorted(load_rows("nccl_measured"),
                  key=lambda r: (r["gpu"], r["collective"], int(r["size_bytes"])))
    return _split([Row(f"nccl {r['gpu']} {r['collective']}", _size_label(int(r["size_bytes"])),
                       _ns(r["t_us"]), "train",
                       {"kind": r["collective"], "gpu": r["gpu"], "n": int(r["n_gpus"]),
                        "size": int(r["size_bytes"])}) for r in data])


def deepep_rows() -> list[Row]:
    """hardware.md §4.2, every row (EP8 in one node, H=7168, top-8)."""
    data = sorted(load_rows("deepep_measured"),
                  key=lambda r: (r["gpu"], r["op"], int(r["tokens"])))
    return _split([Row(f"deepep {r['gpu']} {r['op']}", f"{r['tokens']} tok/rank",
                       _ns(r["t_us"]), "train",
                       {"kind": f"ep_{r['op']}", "gpu": r["gpu"], "n": int(r["ep"]),
                        "tokens": int(r["tokens"]), "hidden": int(r["hidden"]),
                        "topk": int(r["topk"])}) for r in data])


def _ns(t_us: str) -> float:
    """A measured time from the tables (µs) in ns."""
    return float(t_us) * 1e3


def _size_label(b: int) -> str:
    return f"{b >> 20} MB" if b >= 1 << 20 else f"{b >> 10} KB"


def measured_gpu() -> GpuSpec:
    """The :class:`GpuSpec` of :data:`MEASURED_GPU`."""
    return get_gpu(MEASURED_GPU)


def predict(row: Row, gcal: gpu.GpuCalibration | None = None,
            ccal: comm.CommCalibration | None = None) -> float:
    """Model time (ns) of a measured row under the given (default: stored) calibrations."""
    p = row.params
    if p["kind"] in ("gemm", "moe"):
        g = measured_gpu()
        cal = gcal or gpu.get_calibration(g)
        if p["kind"] == "gemm":
            return gpu.gemm_time_ns(p["m"], p["n"], p["k"], p["dtype"], gpu=g, calib=cal)
        return gpu.moe_layer_time_ns(p["counts"], p["hidden"], p["inter"], p["dtype"], gpu=g,
                                     calib=cal)
    system = make_system(p["gpu"], p["n"])
    cal = ccal or system.comm_calibration
    if p["kind"] == "all_gather":
        return comm.all_gather_time_ns(p["size"], system, calib=cal)
    if p["kind"] == "all_reduce":
        return comm.all_reduce_time_ns(p["size"], system, calib=cal)
    if p["kind"] == "all_to_all":
        return comm.all_to_all_time_ns(p["size"], system, calib=cal)
    fn = comm.ep_dispatch_time_ns if p["kind"] == "ep_dispatch" else comm.ep_combine_time_ns
    return fn(p["tokens"], p["hidden"], p["topk"], system, calib=cal)


# ---------------------------------------------------------------------------------------------
# GPU fit
# ---------------------------------------------------------------------------------------------

_GPU_KEYS = ("eta_bw", "eta_c_bf16", "eta_c_fp8", "eta_c_fp4", "t0_gemm_bf16_s",
             "t0_gemm_fp8_s", "t0_gemm_fp4_s", "t0_moe_bf16_s", "t0_moe_fp8_s", "t0_moe_fp4_s")
_US = 1e-6  # t0 parameters are fitted in microseconds for conditioning, stored in s


def _gcal_from(x: np.ndarray, p: float, base: gpu.GpuCalibration) -> gpu.GpuCalibration:
    vals = {k: float(v) * (_US if k.endswith("_s") else 1.0) for k, v in zip(_GPU_KEYS, x)}
    return replace(base, overlap_p=p, **vals)


def fit_gpu(rows: list[Row] | None = None, p_grid=OVERLAP_P_GRID) -> dict:
    """Least-squares fit of the B200 GPU calibration on the training rows.

    Minimises the sum of squared log errors ``log(model / measured)`` over the 10 continuous
    parameters (``eta_bw``, ``eta_c`` x 3 compute classes, ``t0_gemm`` x 3, ``t0_moe`` x 3) for
    each ``overlap_p`` in ``p_grid`` and keeps the best. Returns ``{"calibration", "rms_log",
    "cost_by_p", "n_train"}``.
    """
    rows = rows if rows is not None else gemm_rows() + moe_rows()
    train = [r for r in rows if r.role == "train"]
    meas = np.log([r.measured_ns for r in train])
    base = gpu.get_calibration(measured_gpu())
    x0 = np.array([0.75, 0.75, 0.65, 0.5, 3.0, 8.0, 12.0, 8.0, 20.0, 30.0])
    lo = np.array([0.05] * 4 + [0.0] * 6)
    hi = np.array([1.0] * 4 + [200.0] * 6)
    best, cost_by_p = None, {}
    for p in p_grid:
        def resid(x, p=p):
            cal = _gcal_from(x, p, base)
            return np.log([predict(r, gcal=cal) for r in train]) - meas

        sol = least_squares(resid, x0, bounds=(lo, hi), x_scale="jac")
        cost_by_p[p] = float(np.sqrt(np.mean(sol.fun ** 2)))
        if best is None or cost_by_p[p] < cost_by_p[best[0]]:
            best = (p, sol)
    p, sol = best
    cal = _gcal_from(sol.x, p, base)
    return {"calibration": cal, "rms_log": cost_by_p[p], "cost_by_p": cost_by_p,
            "n_train": len(train)}


# ---------------------------------------------------------------------------------------------
# Comm fit
# ---------------------------------------------------------------------------------------------


def fit_comm(rows: list[Row] | None = None) -> dict:
    """Least-squares fit of ``alpha_us`` and ``eta`` per (GPU, operation) on training rows
    (log-error residuals). Returns ``{gpu: {op: (AlphaBeta, rms_log, n_train)}}``."""
    rows = rows if rows is not None else nccl_rows() + deepep_rows()
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        if r.role == "train":
            groups.setdefault((r.params["gpu"], r.params["kind"]), []).append(r)
    out: dict[str, dict] = {}
    for (g, kind), rs in sorted(groups.items()):
        meas = np.log([r.measured_ns for r in rs])
        template = comm.get_comm_calibration(g)

        def resid(x, kind=kind, template=template, rs=rs, meas=meas):
            cal = replace(template, **{kind: comm.AlphaBeta(float(x[0]), float(x[1]))})
            return np.log([predict(r, ccal=cal) for r in rs]) - meas

        sol = least_squares(resid, [10.0, 0.6], bounds=([0.0, 0.01], [1000.0, 1.0]))
        rms = float(np.sqrt(np.mean(sol.fun ** 2)))
        out.setdefault(g, {})[kind] = (comm.AlphaBeta(float(sol.x[0]), float(sol.x[1])), rms,
                                       len(rs))
    return out


def summary(errors_pct) -> tuple[float, float, int]:
    """(median |error| %, max |error| %, count)."""
    e = np.abs(np.asarray(list(errors_pct), dtype=float))
    if e.size == 0:
        return (float("nan"), float("nan"), 0)
    return float(np.median(e)), float(e.max()), int(e.size)



def validation_records(which: str) -> list[dict]:
    """Tidy per-row records for docs: ``which`` in {"gpu", "comm"}.

    Each record: family, label, role, measured_us, model_us, error_pct, and for GPU rows the
    seed's cheap estimate (``estimate_us``, ``estimate_error_pct``; :mod:`sieve.hw.estimates`).
    """
    from sieve.hw import estimates

    g = measured_gpu()
    if which not in ("gpu", "comm"):
        raise ValueError(f"validation_records: which must be 'gpu' or 'comm', not {which!r}")
    rows = gemm_rows() + moe_rows() if which == "gpu" else nccl_rows() + deepep_rows()
    out = []
    for r in rows:
        model = predict(r)
        rec = {"family": r.family, "label": r.label, "role": r.role,
               "measured_us": r.measured_ns / 1e3, "model_us": model / 1e3,
               "error_pct": (model / r.measured_ns - 1) * 100}
        p = r.params
        if p["kind"] == "gemm":
            d = get_dtype(p["dtype"])
            nbytes = p["n"] * p["k"] * d.weight_bytes + p["m"] * p["k"] * d.act_bytes \
                + 2 * p["m"] * p["n"]
            est = max(estimates.t_offchip_ns(nbytes, gpu=g),
                      estimates.t_comp_ns(2 * p["m"] * p["n"] * p["k"], p["dtype"], gpu=g))
        elif p["kind"] == "moe":
            est = estimates.t_gpu_experts_ns(p["counts"], p["hidden"], p["inter"], p["dtype"],
                                             gpu=g)
        else:
            est = None
        if est is not None:
            rec["estimate_us"] = est / 1e3
            rec["estimate_error_pct"] = (est / r.measured_ns - 1) * 100
        out.append(rec)
    return out
