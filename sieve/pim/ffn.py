"""Expert FFNs on PIM: tensor parallelism (Sieve) and expert parallelism (PIMoE).

An expert FFN for one token is ``down(act(gate_up x))``: a ``(2I x H)`` GEMV, the activation on
the GPU (the seed's PUs only multiply-accumulate), and an ``(H x I)`` GEMV. Each GEMV uses the
2-D layout of :mod:`sieve.pim`; the GPU step between them (read-back partial sums -> SwiGLU ->
next input) is the down kernel's ``gap_ns`` (:mod:`sieve.pim.host`). All durations come from
the engine (:func:`sieve.dram.run_pim`).

Mappings (docs/model-of-computation.md, *PIM kernels*):

* **TP** (Sieve, seed §6): every expert is sharded over every pseudo-channel at identical
  addresses; experts run one after another, each on all PCs. All PCs run the same stream, so
  one channel is simulated (exact, tests/test_pim_engine.py). A GPU step between two GEMVs
  is a barrier over every PC (``sync="all"``).
* **EP** (PIMoE, seed §7 "Parallelism Across PIM Channels"): the PCs form groups of
  ``pcs_per_expert``; expert ``e`` lives in group ``e mod n_groups`` (static placement,
  sharded TP-style inside its group); groups run different streams, so every channel is
  simulated and per-PC imbalance is reported. A GPU step is a barrier over its group only
  (``sync="group"``): groups do not wait for each other.

Every function runs on a fresh :class:`~sieve.dram.pim_device.PimDevice` started at ``start_ns``
(the refresh phase), or on the caller's ``device`` (a decode step: the state left by the
previous program carries over).

Orders of the serialized GEMVs (seed §6 "Converting Skinny GEMM to GEMV": N tokens = N
GEMVs): ``"token"`` (default, the seed's literal flow: per token GWRITE, gate/up GEMV,
readback, activation, GWRITE, down GEMV, readback; one GPU step per token), ``"expert"`` (all
N gate/up GEMVs, one GPU step, all N down GEMVs) and ``"layer"`` (every expert's gate/up
GEMVs, one GPU step for the layer, every down GEMV).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sieve.dram.pim_device import GemvKernel, PimDevice, PimResult
from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, choices
from sieve.hw.calibrations import GpuCalibration
from sieve.hw.presets import GpuSpec
from sieve.pim.host import GpuStep, gpu_step
from sieve.pim.layout import GemvLayout, gemv_layout

__all__ = [
    "ORDERS",
    "FfnShape",
    "MoePimResult",
    "default_pcs_per_expert",
    "ffn_layouts",
    "ffn_shape",
    "run_expert_ffn",
    "run_moe_ep",
    "run_moe_tp",
    "run_shared_experts",
]

#: Orders of an expert's serialized GEMVs (see module docstring).
ORDERS = ("token", "expert", "layer")


@dataclass(frozen=True)
class FfnShape:
    """One expert FFN: gate/up ``(2I or I) x H``, down ``H x I``."""

    hidden: int
    intermediate: int
    gated: bool = True

    def __post_init__(self):
        for n in ("hidden", "intermediate"):
            v = getattr(self, n)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
                raise ConfigError(f"expert FFN: {n} must be an integer >= 1, got {v!r}")

    @property
    def up_rows(self) -> int:
        return (2 if self.gated else 1) * self.intermediate

    @property
    def weight_bytes_bf16(self) -> int:
        return 2 * (self.up_rows + self.intermediate) * self.hidden

    @property
    def flops_per_token(self) -> int:
        return 2 * (self.up_rows + self.intermediate) * self.hidden


def ffn_shape(model, shared: bool = False) -> FfnShape:
    """The routed (or shared) expert shape of a model preset name or :class:`MoeModel`."""
    from sieve.model.moe import get_model

    m = get_model(model) if isinstance(model, str) else model
    g = m.shared_expert_gemv() if shared else m.expert_gemv()
    if g is None:
        raise ConfigError(f"model {m.name!r}: has no shared experts")
    return FfnShape(g.hidden_size, g.intermediate_size, gated=True)


@dataclass(frozen=True)
class MoePimResult:
    """PIM execution of the experts of one MoE layer (or a single expert)."""

    mapping: str  # "tp" or "ep"
    order: str
    time_ns: float  # until the last result is read back
    tail_ns: float  # GPU work after that (partial-sum reduction fused into the combine)
    expert_ids: np.ndarray  # experts that ran (> 0 tokens)
    tokens: np.ndarray  # their token counts
    expert_start_ns: np.ndarray
    expert_end_ns: np.ndarray  # last readback of the expert
    expert_busy_ns: np.ndarray  # sum of the expert's kernel spans (no GPU steps, no others')
    act_ns: float  # total GPU step time inside the program (gaps)
    gate_up: GemvLayout
    down: GemvLayout
    pcs_per_expert: int
    group_busy_ns: np.ndarray  # busy time per PC group (one group under TP)
    pim: PimResult

    @property
    def total_ns(self) -> float:
        return self.time_ns + self.tail_ns

    @property
    def imbalance(self) -> float:
        """max / mean busy time over PCs (1.0 = balanced)."""
        return self.pim.imbalance

    @property
    def padding(self) -> float:
        """Padding fraction of the streamed weight bytes (both GEMVs, per token)."""
        w = self.gate_up.weight_bytes + self.down.weight_bytes
        p = self.gate_up.padded_weight_bytes + self.down.padded_weight_bytes
        return 1.0 - w / p

    def to_dict(self) -> dict:
        return {"mapping": self.mapping, "order": self.order, "time_ns": self.time_ns,
                "tail_ns": self.tail_ns, "total_ns": self.total_ns, "act_ns": self.act_ns,
                "experts": int(self.expert_ids.size), "tokens": int(self.tokens.sum()),
                "pcs_per_expert": self.pcs_per_expert, "imbalance": self.imbalance,
                "padding": self.padding, "gate_up_col_groups": self.gate_up.col_groups,
                "down_col_groups": self.down.col_groups}


def ffn_layouts(spec: DramSpec | str, shape: FfnShape, n_pcs: int | None = None,
                step: GpuStep | None = None) -> tuple[GemvLayout, GemvLayout]:
    """1-vector layouts of the two GEMVs over ``n_pcs`` PCs, column groups chosen by the
    engine (least time + GPU partial-sum reduction)."""
    step = step or gpu_step()
    kw = {"n_pcs": n_pcs, "col_groups": "auto", "reduce_ns_per_byte": step.ns_per_byte}
    return (gemv_layout(spec, shape.up_rows, shape.hidden, **kw),
            gemv_layout(spec, shape.hidden, shape.intermediate, **kw))


def _rows(lay: GemvLayout) -> int:
    """DRAM rows per bank of one GEMV's weights (striped over bank bundles or split over the
    bank parities, if any)."""
    return lay.dram_rows


def _act_bytes(gu: GemvLayout, shape: FfnShape) -> int:
    """GPU step between the GEMVs, per token: read gate/up results (or partial sums), write
    the activation (the next GWRITE's source)."""
    return gu.readback_bytes + shape.intermediate * gu.out_bytes


def _tail_bytes(d: GemvLayout) -> int:
    """Extra bytes the combine reads per token because of down partial sums."""
    return max(d.reduce_bytes - d.out_rows * d.out_bytes, 0)


def _slot_base(who: str, slot: int, slot_rows: int, n_rows: int) -> int:
    """First row of expert slot ``slot``: slots are packed from row 0; when the bank is full
    they wrap around to row 0 (several experts then share rows, an approximation: a real
    deployment would not fit), never splitting a slot across the end of the bank."""
    fit = n_rows // slot_rows if slot_rows else 1
    if fit < 1:
        raise ConfigError(f"{who}: one expert's weights need {slot_rows} rows of every bank, "
                          f"a bank has {n_rows}")
    return (slot % fit) * slot_rows


def _group_program(gu: GemvLayout, d: GemvLayout, shape: FfnShape, work: list[tuple[int, int]],
                   order: str, step: GpuStep, n_rows: int, sync: bool | str, group: int = 0):
    """Kernels of one PC group running ``work`` = [(slot, tokens)]; returns (kernels, owner
    index per kernel, GPU step time inside, tail). A kernel after a GPU step is a barrier of
    scope ``sync`` (``"all"`` under TP, ``"group"`` with ``group`` under EP, False for a
    one-PC group, whose own end is the group's end)."""
    slot_rows = _rows(gu) + _rows(d)
    kernels: list[GemvKernel] = []
    owner: list[int] = []
    act = 0.0

    def k(lay, slot, n, gap, off):
        base = _slot_base("PIM expert FFN", slot, slot_rows, n_rows) + off
        barrier = sync if (sync and gap > 0) else False
        return lay.kernel.evolve(n_vectors=n, gap_ns=gap, sync=barrier, group=group,
                                 base_row=base)

    per_tok = _act_bytes(gu, shape)
    if order == "layer":
        for i, (slot, n) in enumerate(work):
            kernels.append(k(gu, slot, n, 0.0, 0))
            owner.append(i)
        gap = step.ns(per_tok * sum(n for _, n in work))
        act += gap
        for i, (slot, n) in enumerate(work):
            kernels.append(k(d, slot, n, gap if i == 0 else 0.0, _rows(gu)))
            owner.append(i)
    else:
        for i, (slot, n) in enumerate(work):
            if order == "expert":
                gap = step.ns(per_tok * n)
                kernels += [k(gu, slot, n, 0.0, 0), k(d, slot, n, gap, _rows(gu))]
                owner += [i, i]
                act += gap
            else:  # token
                gap = step.ns(per_tok)
                for _ in range(n):
                    kernels += [k(gu, slot, 1, 0.0, 0), k(d, slot, 1, gap, _rows(gu))]
                    owner += [i, i]
                    act += gap
    last_n = work[-1][1] if work else 0
    tail_tokens = sum(n for _, n in work) if order == "layer" else (
        1 if order == "token" else last_n)
    tail = step.ns(_tail_bytes(d) * tail_tokens, fixed=False) if work else 0.0
    return kernels, owner, act, tail


def _device(spec: DramSpec, device: PimDevice | None, start_ns: float | None, log: bool
            ) -> tuple[PimDevice, float | None]:
    """The device a program runs on and its start: a fresh one at ``start_ns`` (default 0),
    or the caller's (default start: its ``now_ns``)."""
    if device is None:
        return PimDevice(spec, log=log), 0.0 if start_ns is None else start_ns
    if not isinstance(device, PimDevice):
        raise ConfigError(f"PIM program: device must be a PimDevice, got "
                          f"{type(device).__name__}")
    if device.spec != spec:
        raise ConfigError(f"PIM program: the device runs {device.spec.name!r}, not "
                          f"{spec.name!r}")
    return device, start_ns


def _check(who: str, token_counts, order: str) -> np.ndarray:
    if order not in ORDERS:
        raise ConfigError(f"{who}: order {order!r} unknown (known: {choices(ORDERS)})")
    arr = np.atleast_1d(np.asarray(token_counts))
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu" or (arr < 0).any():
        raise ConfigError(f"{who}: token_counts must be a non-empty 1-D array of integers "
                          f">= 0, got {token_counts!r}")
    return arr.astype(np.int64)


def _expert_times(res: PimResult, pcs: range, owner: list[int], n: int):
    """Start (first command on any of the group's PCs), end (last result on any of them) and
    busy time (the sum of its kernels' spans, first command to last result over the group's
    PCs) of each of the group's ``n`` experts; every PC of a group runs the same kernel list.
    The busy time excludes the GPU steps between kernels and other experts' kernels."""
    ptr = res.kernel_ptr
    k = len(owner)
    s = np.stack([res.kernel_start_ns[ptr[q]:ptr[q] + k] for q in pcs]).min(axis=0)
    e = np.stack([res.kernel_end_ns[ptr[q]:ptr[q] + k] for q in pcs]).max(axis=0)
    start = np.full(n, np.nan)
    end = np.full(n, np.nan)
    busy = np.zeros(n)
    for j, i in enumerate(owner):
        if np.isnan(start[i]):
            start[i] = s[j]
        end[i] = max(end[i], e[j]) if not np.isnan(end[i]) else e[j]
        busy[i] += e[j] - s[j]
    return start, end, busy


def run_moe_tp(spec: DramSpec | str, shape: FfnShape, token_counts: Sequence[int], *,
               order: str = "token", gpu: str | GpuSpec | None = None,
               gpu_fixed_ns: float | None = None, calib: GpuCalibration | None = None,
               start_ns: float | None = None, device: PimDevice | None = None,
               log: bool = False) -> MoePimResult:
    """The experts of one layer under tensor parallelism over every PC (Sieve's mapping).

    Args:
        spec: PIM spec.
        shape: expert shape (:func:`ffn_shape`).
        token_counts: tokens per expert (experts with 0 tokens do not run); expert ``e`` is
            stored at slot ``e`` (its rows), identical in every PC and bank.
        order: "token", "expert" or "layer" (module docstring).
        gpu: the GPU doing the activation and reductions (:mod:`sieve.pim.host`; None: the
            default GPU, :data:`sieve.hw.presets.DEFAULT_GPU`).
        gpu_fixed_ns: override the GPU step's fixed cost (default: sieve.hw.gpu's t0_gemm).
        calib: the GPU's calibration (None: its stored one; a SystemConfig's is passed).
        start_ns: when the program may start, in device time. On a fresh device (no
            ``device``) this is the refresh phase: the first REFab of every PC is due at
            ``nREFI`` after time 0 (default 0). On ``device``, default its ``now_ns``.
        device: run on this :class:`PimDevice` (it keeps the state the program leaves).
        log: keep the engine's command log (for sieve.dram.checker; with ``device``, the
            device's own setting applies).

    Times in the result are relative to the program's start; ``result.pim`` holds the
    engine's result in absolute device times.
    """
    spec = get_spec(spec)
    counts = _check("PIM MoE (TP)", token_counts, order)
    step = gpu_step(gpu, gpu_fixed_ns, calib=calib)
    gu, d = ffn_layouts(spec, shape, None, step)
    ids = np.flatnonzero(counts)
    work = [(int(e), int(counts[e])) for e in ids]
    kernels, owner, act, tail = _group_program(gu, d, shape, work, order, step, spec.org.rows,
                                               "all")
    dev, t0 = _device(spec, device, start_ns, log)
    res = dev.run(kernels, start_ns=t0)
    start, end, busy_e = _expert_times(res, range(res.n_pcs), owner, len(work))
    return MoePimResult(
        mapping="tp", order=order, time_ns=res.time_ns, tail_ns=tail,
        expert_ids=ids, tokens=counts[ids], expert_start_ns=start - res.start_ns,
        expert_end_ns=end - res.start_ns, expert_busy_ns=busy_e, act_ns=act, gate_up=gu,
        down=d, pcs_per_expert=spec.org.total_pseudochannels,
        group_busy_ns=np.array([res.pc_busy_ns.max()]), pim=res)


def default_pcs_per_expert(spec: DramSpec | str, n_experts: int) -> int:
    """PCs per expert group under EP: the largest power of two <= PCs / experts (>= 1)."""
    p = get_spec(spec).org.total_pseudochannels
    g = 1
    while g * 2 <= p // max(n_experts, 1) and p % (g * 2) == 0:
        g *= 2
    return g


def run_moe_ep(spec: DramSpec | str, shape: FfnShape, token_counts: Sequence[int], *,
               pcs_per_expert: int | None = None, placement: Sequence[int] | None = None,
               order: str = "token", gpu: str | GpuSpec | None = None,
               gpu_fixed_ns: float | None = None, calib: GpuCalibration | None = None,
               start_ns: float | None = None, device: PimDevice | None = None,
               log: bool = False) -> MoePimResult:
    """The experts of one layer under expert parallelism across PC groups (PIMoE's mapping).

    Args:
        token_counts: tokens per local expert (length = experts stored on this GPU's stacks,
            including experts with 0 tokens: the placement is static).
        pcs_per_expert: PCs per group (a divisor of the PC count; default
            :func:`default_pcs_per_expert`).
        placement: group of each expert (default ``e mod n_groups``).
        Other arguments as :func:`run_moe_tp`.
    """
    spec = get_spec(spec)
    who = "PIM MoE (EP)"
    counts = _check(who, token_counts, order)
    n_pcs = spec.org.total_pseudochannels
    g = default_pcs_per_expert(spec, counts.size) if pcs_per_expert is None else pcs_per_expert
    if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1 or n_pcs % g:
        raise ConfigError(f"{who}: pcs_per_expert must divide the {n_pcs} pseudo-channels of "
                          f"{spec.name}, got {pcs_per_expert!r}")
    n_groups = n_pcs // g
    if placement is None:
        place = np.arange(counts.size) % n_groups
    else:
        place = np.asarray(placement)
        if place.shape != counts.shape or place.dtype.kind not in "iu" or (
                place < 0).any() or (place >= n_groups).any():
            raise ConfigError(f"{who}: placement must give a group in [0, {n_groups}) for each "
                              f"of the {counts.size} experts")
    step = gpu_step(gpu, gpu_fixed_ns, calib=calib)
    gu, d = ffn_layouts(spec, shape, int(g), step)
    per_pc: list[list[GemvKernel]] = [[] for _ in range(n_pcs)]
    owners: dict[int, tuple[list[int], list[int]]] = {}
    act = tail = 0.0
    for grp in range(n_groups):
        members = [int(e) for e in np.flatnonzero(place == grp)]
        work = [(slot, int(counts[e])) for slot, e in enumerate(members) if counts[e] > 0]
        ids = [e for e in members if counts[e] > 0]
        kernels, owner, a, t = _group_program(gu, d, shape, work, order, step, spec.org.rows,
                                              "group" if g > 1 else False, grp)
        for q in range(grp * g, (grp + 1) * g):
            per_pc[q] = kernels
        owners[grp] = (ids, owner)
        act = max(act, a)
        tail = max(tail, t)
    dev, t0 = _device(spec, device, start_ns, log)
    res = dev.run(per_pc, start_ns=t0)
    ids_all = np.flatnonzero(counts)
    start = np.full(ids_all.size, np.nan)
    end = np.full(ids_all.size, np.nan)
    busy_e = np.zeros(ids_all.size)
    pos = {int(e): i for i, e in enumerate(ids_all)}
    for grp, (ids, owner) in owners.items():
        s, e, b = _expert_times(res, range(grp * g, (grp + 1) * g), owner, len(ids))
        for j, ex in enumerate(ids):
            start[pos[ex]], end[pos[ex]], busy_e[pos[ex]] = s[j], e[j], b[j]
    busy = res.pc_busy_ns.reshape(n_groups, g).max(axis=1)
    return MoePimResult(
        mapping="ep", order=order, time_ns=res.time_ns, tail_ns=tail,
        expert_ids=ids_all, tokens=counts[ids_all], expert_start_ns=start - res.start_ns,
        expert_end_ns=end - res.start_ns, expert_busy_ns=busy_e, act_ns=act,
        gate_up=gu, down=d, pcs_per_expert=int(g), group_busy_ns=busy, pim=res)


def run_expert_ffn(spec: DramSpec | str, shape: FfnShape, n_tokens: int, **kw) -> MoePimResult:
    """One expert with ``n_tokens`` tokens under TP, by default on a fresh device started at
    time 0 (see :func:`run_moe_tp` for the keyword arguments)."""
    if isinstance(n_tokens, bool) or not isinstance(n_tokens, (int, np.integer)) or n_tokens < 1:
        raise ConfigError(f"PIM expert FFN: n_tokens must be an integer >= 1, got {n_tokens!r}")
    return run_moe_tp(spec, shape, [int(n_tokens)], **kw)


def run_shared_experts(spec: DramSpec | str, model, batch: int, **kw) -> MoePimResult:
    """The shared experts of one MoE layer on PIM under TP: every token visits each of them
    (``N = batch``, seed §3.3)."""
    from sieve.model.moe import get_model

    m = get_model(model) if isinstance(model, str) else model
    shape = ffn_shape(m, shared=True)
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ConfigError(f"PIM shared experts: batch must be an integer >= 1, got {batch!r}")
    return run_moe_tp(spec, shape, [int(batch)] * m.n_shared_experts, **kw)
