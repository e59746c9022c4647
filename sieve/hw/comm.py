"""Interconnect model: collectives and expert-parallel dispatch/combine as latency + bytes/BW.

Each operation costs, per link tier, ``alpha + bytes_per_gpu / (eta * link bandwidth)``:

* inside a node, bytes cross NVLink/NVSwitch (the GPU's per-direction NVLink bandwidth);
* between nodes, bytes cross InfiniBand, one NIC per GPU (``SystemConfig.inter_link``), with
  ``alpha`` raised by the link's hop latency;
* an operation spanning nodes takes the slower tier, ``max(intra, inter)``, as LLMSimulator's
  ``MoEScatter/MoEGather`` (pim-simulators.md §2, design choice 6).

``alpha`` (software latency floor) and ``eta`` (achieved fraction of link bandwidth) are an
:class:`AlphaBeta` per operation in a :class:`CommCalibration`, fitted by least squares to the NCCL
(hardware.md §4.1) and DeepEP (§4.2) tables by :mod:`sieve.calibration.costmodels`. The inter-node
tier reuses the intra-node ``eta`` ⚠: hardware.md has no multi-node measurement.

Byte conventions (per GPU, per direction):

* all-gather / all-reduce take nccl-tests' ``size`` (the full buffer) and move
  ``size (n-1)/n`` resp. ``2 size (n-1)/n`` bytes (ring "bus bytes", nccl-tests
  doc/PERFORMANCE.md). Across nodes the ring's bytes use every NIC of the node in parallel
  rings, so each NIC carries ``bus bytes / gpus_per_node`` ⚠ (ring with one NIC per GPU).
* all-to-all takes the per-GPU send buffer ``S``: ``S (g-1)/n`` stays in the node and
  ``S (n-g)/n`` leaves it (uniform destinations; ``g`` = GPUs per node).
* EP dispatch/combine send one copy per (token, selected expert), as DeepEP's low-latency
  kernels (``tests/test_low_latency.py``): FP8 payload ``H + H/128*4 + 16`` bytes, BF16 ``2H``.

Every function takes the resolved :class:`~sieve.hw.system.SystemConfig` (``system``,
required) and an optional :class:`CommCalibration` (``calib=None``: the system's own
``comm_calibration``); none looks a preset name up.

Times are nanoseconds (the simulator's one time unit): link bandwidths in GB/s are bytes/ns;
the calibration's ``alpha_us`` and the links' ``latency_us`` are converted where they are used
(:func:`tier_time_ns`). Nothing here knows about GPUs' compute or PIM.
"""

from __future__ import annotations

import math

import numpy as np

from sieve.errors import ConfigError, lookup
from sieve.hw.calibrations import (
    COMM_CALIBRATIONS,
    CUSTOM_ALL_REDUCE,
    NS_PER_US,
    AlphaBeta,
    CommCalibration,
    get_comm_calibration,
)
from sieve.hw.system import SystemConfig
from sieve.validate import check_number

__all__ = [
    "COMM_CALIBRATIONS",
    "PAYLOADS",
    "AlphaBeta",
    "CommCalibration",
    "all_gather_time_ns",
    "all_reduce_time_ns",
    "all_to_all_time_ns",
    "ep_combine_time_ns",
    "ep_dispatch_time_ns",
    "ep_exchange_time_ns",
    "get_comm_calibration",
    "payload_bytes",
    "tier_time_ns",
    "tp_all_reduce_time_ns",
]


#: Bytes per (token, expert) copy as a function of hidden size H (DeepEP test_low_latency.py).
PAYLOADS = {
    "fp8": lambda h: h + h / 128 * 4 + 16,  # FP8 data + fp32 scale per 128 + 16 B metadata
    "bf16": lambda h: 2.0 * h,
}


def payload_bytes(payload: str, hidden: int) -> float:
    """Bytes per (token, expert) copy for ``payload`` in {fp8, bf16}."""
    f = lookup(PAYLOADS, payload, "EP payload")
    return float(f(check_number("EP payload", "hidden", hidden)))


def _resolved(what: str, system, calib) -> tuple[SystemConfig, CommCalibration]:
    """The system and calibration objects, or one ConfigError saying how to get them."""
    if not isinstance(system, SystemConfig):
        raise ConfigError(f"{what}: system must be a SystemConfig (resolve a preset name or "
                          f"file once with sieve.hw.get_system), got {system!r}")
    if calib is None:
        return system, system.comm_calibration
    if not isinstance(calib, CommCalibration):
        raise ConfigError(f"{what}: calib must be a CommCalibration "
                          f"(sieve.hw.get_comm_calibration) or None (the system's own), got "
                          f"{calib!r}")
    return system, calib


def _setup(system, calib, n_gpus, what):
    s, cal = _resolved(what, system, calib)
    n = s.n_gpus if n_gpus is None else n_gpus
    if not isinstance(n, (int, np.integer)) or n < 1 or n > s.n_gpus:
        raise ConfigError(f"{what}: n_gpus must be an integer in [1, {s.n_gpus}], got {n!r}")
    g = min(int(n), s.gpus_per_node)
    return s, cal, int(n), g


def tier_time_ns(op: AlphaBeta, intra_bytes: float, inter_bytes: float, system: SystemConfig
                 ) -> float:
    """``max`` over link tiers of ``alpha + bytes / (eta * bw)`` (ns); 0 when nothing moves."""
    if intra_bytes <= 0 and inter_bytes <= 0:
        return 0.0
    # GB/s = bytes/ns; alpha and hop latency are stored in microseconds
    t = op.alpha_us * NS_PER_US + intra_bytes / (op.eta * system.intra_link.bw_gbs)
    if inter_bytes > 0:
        ib = system.inter_link
        t_ib = (op.alpha_us + ib.latency_us) * NS_PER_US + inter_bytes / (op.eta * ib.bw_gbs)
        t = max(t, t_ib)
    return t


def _ring(kind: str, size: float, factor: float, system, calib, n_gpus) -> float:
    s, cal, n, g = _setup(system, calib, n_gpus, kind)
    size = check_number(kind, "size_bytes", size)
    if n == 1:
        return 0.0
    bus = factor * size * (n - 1) / n
    inter = bus / g if n > g else 0.0
    return tier_time_ns(cal.op(kind), bus, inter, s)


def all_gather_time_ns(size_bytes: float, system: SystemConfig, *,
                       calib: CommCalibration | None = None,
                       n_gpus: int | None = None) -> float:
    """All-gather of a ``size_bytes`` result buffer (nccl-tests size) over ``n_gpus``
    (default: all GPUs of the system), ns. E.g. the routing-map AllGather of Sieve:
    ``size_bytes = n_gpus x bytes per GPU's token counts``."""
    return _ring("all_gather", size_bytes, 1.0, system, calib, n_gpus)


def all_reduce_time_ns(size_bytes: float, system: SystemConfig, *,
                       calib: CommCalibration | None = None,
                       n_gpus: int | None = None) -> float:
    """All-reduce of a ``size_bytes`` buffer (ring bus bytes ``2 S (n-1)/n``), ns."""
    return _ring("all_reduce", size_bytes, 2.0, system, calib, n_gpus)


def tp_all_reduce_time_ns(size_bytes: float, system: SystemConfig, *,
                          calib: CommCalibration | None = None,
                          n_gpus: int | None = None) -> float:
    """The tensor-parallel all-reduce of a decode step (ns): the custom all-reduce serving
    frameworks run inside CUDA graphs, from its measured latencies
    (:data:`sieve.hw.calibrations.CUSTOM_ALL_REDUCE`), interpolated linearly in the message
    size between the measured sizes (the smallest measured value below them). Beyond the
    largest measured size the extra bytes cost the NCCL ring's bus bytes at the all-reduce
    fit's bandwidth ⚠. A TP group of a size without a table (not 2, 4 or 8), one spanning
    nodes, or a GPU without measurements takes the NCCL ring model
    (:func:`all_reduce_time_ns`)."""
    s, cal, n, g = _setup(system, calib, n_gpus, "tp_all_reduce")
    size = check_number("tp_all_reduce", "size_bytes", size_bytes)
    if n == 1 or size == 0:
        return 0.0
    table = CUSTOM_ALL_REDUCE.get(s.gpu.name, {}).get(n)
    if table is None or n > g:
        return all_reduce_time_ns(size, s, calib=cal, n_gpus=n)
    xs = [x for x, _ in table]
    ys = [y for _, y in table]
    if size <= xs[-1]:
        return float(np.interp(size, xs, ys)) * NS_PER_US
    extra = 2.0 * (size - xs[-1]) * (n - 1) / n
    return ys[-1] * NS_PER_US + extra / (cal.all_reduce.eta * s.intra_link.bw_gbs)


def all_to_all_time_ns(size_bytes: float, system: SystemConfig, *,
                       calib: CommCalibration | None = None,
                       n_gpus: int | None = None) -> float:
    """All-to-all with ``size_bytes`` per GPU send buffer, uniform destinations, ns."""
    s, cal, n, g = _setup(system, calib, n_gpus, "all_to_all")
    size = check_number("all_to_all", "size_bytes", size_bytes)
    if n == 1:
        return 0.0
    return tier_time_ns(cal.all_to_all, size * (g - 1) / n, size * (n - g) / n, s)


def _ep_uniform(op: str, tokens_per_gpu, hidden, topk, system, calib, n_gpus, payload,
                n_experts, dedup) -> float:
    s, cal, n, g = _setup(system, calib, n_gpus, f"EP {op}")
    t = check_number(f"EP {op}", "tokens_per_gpu", tokens_per_gpu)
    k = check_number(f"EP {op}", "topk", topk)
    b = payload_bytes(payload, hidden)
    if n == 1 or t == 0 or k == 0:
        return 0.0
    copies = t * k  # one copy per (token, expert), DeepEP low-latency convention
    if dedup:  # one copy per (token, destination GPU): expected distinct GPUs among k experts
        if n_experts is None or n_experts % n:
            raise ConfigError(f"EP {op}: dedup needs n_experts, a multiple of n_gpus ({n})")
        e, per = int(n_experts), int(n_experts) // n
        if k > e:
            raise ConfigError(f"EP {op}: topk ({k:g}) exceeds n_experts ({e})")
        p_miss = math.comb(e - per, int(k)) / math.comb(e, int(k))
        copies = t * n * (1.0 - p_miss)
    return tier_time_ns(cal.op(f"ep_{op}"), copies * b * (g - 1) / n, copies * b * (n - g) / n,
                        s)


def ep_dispatch_time_ns(tokens_per_gpu: float, hidden: int, topk: int, system: SystemConfig,
                        *, payload: str = "fp8", calib: CommCalibration | None = None,
                        n_gpus: int | None = None, n_experts: int | None = None,
                        dedup: bool = False) -> float:
    """Expert-parallel dispatch, uniform routing: each GPU sends its tokens to the GPUs that
    hold their top-k experts (experts spread evenly over ``n_gpus``), ns.

    ``payload`` fp8 (DeepEP default) or bf16; ``dedup=True`` sends one copy per destination GPU
    instead of per expert (DeepEP normal kernels; needs ``n_experts``).
    """
    return _ep_uniform("dispatch", tokens_per_gpu, hidden, topk, system, calib, n_gpus, payload,
                       n_experts, dedup)


def ep_combine_time_ns(tokens_per_gpu: float, hidden: int, topk: int, system: SystemConfig,
                       *, payload: str = "bf16", calib: CommCalibration | None = None,
                       n_gpus: int | None = None, n_experts: int | None = None,
                       dedup: bool = False) -> float:
    """Expert-parallel combine (expert outputs back to their tokens' GPUs; BF16 by default, as
    DeepEP), uniform routing, ns."""
    return _ep_uniform("combine", tokens_per_gpu, hidden, topk, system, calib, n_gpus, payload,
                       n_experts, dedup)


def ep_exchange_time_ns(copies, hidden: int, system: SystemConfig, *, op: str = "dispatch",
                        payload: str | None = None,
                        calib: CommCalibration | None = None) -> float:
    """Dispatch or combine for an exact routing, ns.

    Args:
        copies: ``(n, n)`` array; ``copies[i, j]`` = (token, expert) copies GPU ``i`` sends to
            GPU ``j`` in the dispatch (the diagonal stays local). For ``op="combine"`` the same
            matrix is used transposed (results return to the token's GPU).
        hidden: model hidden size H.
        op: "dispatch" or "combine"; payload defaults to fp8 resp. bf16.

    The slowest GPU decides: per GPU and tier, ``max(bytes sent, bytes received)``.
    """
    if op not in ("dispatch", "combine"):
        raise ConfigError(f"EP exchange: op {op!r} unknown (known: combine, dispatch)")
    s, cal = _resolved("EP exchange", system, calib)
    c = np.asarray(copies, dtype=np.float64)
    n = c.shape[0] if c.ndim == 2 else -1
    if c.ndim != 2 or c.shape[1] != n or n > s.n_gpus:
        raise ConfigError(f"EP exchange: copies must be a square (n, n) array with n <= "
                          f"{s.n_gpus}, got shape {c.shape}")
    if not np.all(np.isfinite(c)) or (c.size and c.min() < 0):
        raise ConfigError("EP exchange: copies must be finite and >= 0")
    if op == "combine":
        c = c.T
    b = payload_bytes(payload or ("fp8" if op == "dispatch" else "bf16"), hidden)
    node = np.arange(n) // s.gpus_per_node
    same = node[:, None] == node[None, :]
    off = ~np.eye(n, dtype=bool)
    intra = np.where(same & off, c, 0.0) * b
    inter = np.where(~same, c, 0.0) * b
    intra_g = np.maximum(intra.sum(1), intra.sum(0)).max(initial=0.0)
    inter_g = np.maximum(inter.sum(1), inter.sum(0)).max(initial=0.0)
    return tier_time_ns(cal.op(f"ep_{op}"), float(intra_g), float(inter_g), s)
