"""Decode attention on PIM: score GEMV, softmax on the GPU, value GEMV (per request, per head).

Work unit: a *slice* = one request's cache for one KV head. Its score GEMV is ``s = K q``
(``K``: ``tokens x d_k``; one vector per query head sharing the KV head), its value GEMV is
``o = V^T p`` (``V^T``: ``d_v x tokens``; one vector per query head). Both use the 2-D layout
of :mod:`sieve.pim` over the slice's PC group (column groups chosen with the analytic
estimate, since cache lengths vary per request), so a request's cache is spread across the
channels of its group (seed §7 "distributing KV cache across PIM channels", Heo et al. 2024;
AttAcc maps one head per channel, pim-simulators.md §3). Slices are spread over PC groups of
``pcs_per_slice`` PCs, longest first onto the least-loaded group (LPT on the estimate).

Softmax runs on the GPU between the two GEMVs (the seed's PUs only multiply-accumulate;
AttAcc's in-PIM softmax unit is not part of the modelled PU): every score is read back, one
GPU step (:mod:`sieve.pim.host`) computes the softmax of the whole batch, and the value GEMVs
start after it on every PC (the first value kernel of every PC is a barrier over all PCs,
``sync="all"``). Value partial sums are reduced in the GPU step that consumes the output
(bytes only, the ``tail_ns``). Runs on a fresh device started at 0, or on the caller's
:class:`~sieve.dram.pim_device.PimDevice`.

Layer types (docs/model-of-computation.md, *PIM kernels*, K6-K8):

* ``full``: GQA, ``tokens`` = context length, ``d_k = d_v = head_dim``.
* ``sliding``: as full with ``tokens = min(context, window)``.
* ``mla``: absorbed-weight decode over the latent cache: one slice per request with
  ``d_k = kv_lora_rank + qk_rope_head_dim``, ``d_v = kv_lora_rank`` and all ``n_heads``
  query heads as vectors (the up-projections are absorbed into q and o on the GPU).
* ``gdn``: a fixed recurrent state per sequence that must be *updated* every token (a
  rank-1 read-modify-write of the whole state); the modelled PUs cannot write results back
  into the array, so Gated-DeltaNet layers stay on the GPU: state read + write at the GPU's
  calibrated HBM rate (:func:`gdn_decode_gpu_ns`). ``on_pim`` is False for them.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from sieve.dram.pim_device import GemvKernel, PimDevice, PimResult
from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError
from sieve.hw.calibrations import GpuCalibration
from sieve.hw.presets import GpuSpec
from sieve.pim.host import gpu_step
from sieve.pim.layout import GemvLayout, estimate_kernel_ns, gemv_layout, spec_key

__all__ = [
    "AttentionPimResult",
    "AttentionSlice",
    "attention_slices",
    "default_pcs_per_slice",
    "gdn_decode_gpu_ns",
    "run_attention",
]


@dataclass(frozen=True)
class AttentionSlice:
    """One request's cache for one KV (or latent) head."""

    request: int
    head: int
    tokens: int  # cached tokens read this step
    n_q: int  # query heads sharing the cache (vectors of both GEMVs)
    d_k: int  # score GEMV columns
    d_v: int  # value GEMV rows


@dataclass(frozen=True)
class AttentionPimResult:
    """One layer's decode attention for a batch."""

    layer_type: str
    on_pim: bool
    time_ns: float  # PIM: from the start until the last value result is read back (0 when
    # not on PIM)
    score_ns: float  # end of the score phase (all PCs), from the start
    softmax_ns: float  # GPU step between the phases
    tail_ns: float  # GPU work after the last readback (partial sums)
    gpu_ns: float  # work that stays on the GPU (Gated-DeltaNet layers)
    n_slices: int
    pcs_per_slice: int
    kv_bytes: int  # cache bytes read (state bytes for gdn)
    padding: float  # padding fraction of streamed bytes
    pim: PimResult | None

    @property
    def total_ns(self) -> float:
        return self.time_ns + self.tail_ns + self.gpu_ns

    @property
    def imbalance(self) -> float:
        return self.pim.imbalance if self.pim is not None else 1.0


def _lens(who: str, context_lens) -> np.ndarray:
    arr = np.atleast_1d(np.asarray(context_lens))
    if arr.ndim != 1 or arr.size == 0 or arr.dtype.kind not in "iu" or (arr < 1).any():
        raise ConfigError(f"{who}: context_lens must be a non-empty 1-D array of integers "
                          f">= 1 (one per request), got {context_lens!r}")
    return arr.astype(np.int64)


def attention_slices(model, layer: int, context_lens: Sequence[int]) -> list[AttentionSlice]:
    """The slices of ``layer`` for requests with these context lengths (tokens in the cache,
    the new one included). Empty for Gated-DeltaNet layers."""
    from sieve.model.moe import get_model

    m = get_model(model) if isinstance(model, str) else model
    t = m._layer_type(layer)
    lens = _lens(f"PIM attention ({m.name})", context_lens)
    if t == "gdn":
        return []
    a = m.attention
    out = []
    for r, n in enumerate(lens):
        n = int(n)
        if t == "mla":
            out.append(AttentionSlice(r, 0, n, a.n_heads, a.kv_lora_rank + a.qk_rope_head_dim,
                                      a.kv_lora_rank))
            continue
        if t == "sliding":
            n = min(n, int(m.sliding_window))
        g = a.n_heads // a.n_kv_heads
        out += [AttentionSlice(r, h, n, g, a.head_dim, a.head_dim)
                for h in range(a.n_kv_heads)]
    return out


def default_pcs_per_slice(spec: DramSpec | str, n_slices: int) -> int:
    """The largest power of two <= PCs / slices that divides the PC count (>= 1)."""
    p = get_spec(spec).org.total_pseudochannels
    g = 1
    while g * 2 <= p // max(n_slices, 1) and p % (g * 2) == 0:
        g *= 2
    return g


def _lpt(loads: Sequence[float], n_groups: int) -> tuple[float, list[int]]:
    """Longest-processing-time-first placement of ``loads`` on ``n_groups`` groups: the
    makespan and each load's group (loads in the given order, which callers sort)."""
    # a heap of (load, group): its top is the least-loaded group, the lowest-numbered among
    # equals (np.argmin's choice, which it replaced: a numpy call per load cost more)
    heap = [(0.0, grp) for grp in range(n_groups)]
    where = []
    for x in loads:
        load, grp = heap[0]
        where.append(grp)
        heapq.heapreplace(heap, (load + float(x), grp))
    return max(h[0] for h in heap) if n_groups else 0.0, where


def gdn_decode_gpu_ns(model, layer: int, batch: int, *, gpu: str | GpuSpec | None = None,
                      state_dtype: str = "bf16", calib: GpuCalibration | None = None
                      ) -> float:
    """Gated-DeltaNet decode of ``batch`` sequences on the GPU (ns): read and write every
    sequence's recurrent + conv state once (``2 x`` :meth:`MoeModel.recurrent_state_bytes`),
    ``8 n_v d_k d_v`` FLOP per sequence (two state GEMVs and the rank-1 update), one kernel
    (:func:`sieve.hw.gpu.kernel_time_ns`); ``gpu`` None is the default GPU, ``calib`` None
    its stored calibration."""
    from sieve.hw.gpu import get_calibration, kernel_time_ns
    from sieve.hw.presets import DEFAULT_GPU, get_gpu
    from sieve.model.moe import get_model

    m = get_model(model) if isinstance(model, str) else model
    if m._layer_type(layer) != "gdn":
        raise ConfigError(f"GDN decode: layer {layer} of {m.name!r} is "
                          f"{m.layer_types[layer]!r}, not 'gdn'")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ConfigError(f"GDN decode: batch must be an integer >= 1, got {batch!r}")
    g = get_gpu(DEFAULT_GPU if gpu is None else gpu)
    cal = get_calibration(g if calib is None else calib)
    la = m.linear_attention
    nbytes = 2 * batch * m.recurrent_state_bytes(layer, state_dtype)
    flops = 8.0 * batch * la.n_v_heads * la.qk_head_dim * la.v_head_dim
    comp = flops / (cal.eta_c_bf16 * g.peak_tflops("bf16") * 1e3)  # ns
    return kernel_time_ns(nbytes, comp, gpu=g, calib=cal, t0_ns=cal.t0_gemm_bf16_s * 1e9)


#: Layouts of attention slices, shared by calls: (spec, PCs per slice, operand bytes, GPU
#: reduction cost, slice shape) -> (score layout, value layout, estimated ns). Layouts are
#: pure functions of the key; the table is cleared when it grows past _LAYOUTS_MAX.
_LAYOUTS: dict[tuple, tuple[GemvLayout, GemvLayout, float]] = {}
_LAYOUTS_MAX = 200_000


def _at_row(kernel: GemvKernel, row: int) -> GemvKernel:
    """``kernel`` with its weights from ``row`` (the engine checks that the rows exist)."""
    return kernel.evolve(base_row=int(row))


def run_attention(spec: DramSpec | str, model, layer: int, context_lens: Sequence[int], *,
                  pcs_per_slice: int | None = None, gpu: str | GpuSpec | None = None,
                  calib: GpuCalibration | None = None,
                  gpu_fixed_ns: float | None = None, kv_bytes: int | None = None,
                  start_ns: float | None = None, device: PimDevice | None = None,
                  log: bool = False) -> AttentionPimResult:
    """Decode attention of ``layer`` for one step of a batch (one new token per request).

    Args:
        spec: PIM spec.
        model: model preset name or :class:`MoeModel`.
        layer: layer index (its type picks the lowering).
        context_lens: per request, tokens in the cache including the new one.
        pcs_per_slice: PCs per slice group (default :func:`default_pcs_per_slice`).
        gpu, gpu_fixed_ns: the GPU step for softmax (:mod:`sieve.pim.host`).
        kv_bytes: bytes per cached element (default: the PU operand size).
        start_ns, device: as :func:`sieve.pim.ffn.run_moe_tp` (a fresh device started at
            ``start_ns``, default 0, or the caller's device, default start its ``now_ns``).
        log: keep the engine's command log.
    """
    from sieve.model.moe import get_model

    spec = get_spec(spec)
    m = get_model(model) if isinstance(model, str) else model
    t = m._layer_type(layer)
    lens = _lens(f"PIM attention ({m.name})", context_lens)
    if t == "gdn":
        ns = gdn_decode_gpu_ns(m, layer, int(lens.size), gpu=gpu, calib=calib)
        return AttentionPimResult(t, False, 0.0, 0.0, 0.0, 0.0, ns, 0, 0,
                                  int(lens.size) * m.recurrent_state_bytes(layer), 0.0, None)
    wb = spec.pim.dtype_bytes if kv_bytes is None else kv_bytes
    step = gpu_step(gpu, gpu_fixed_ns, calib=calib)
    slices = attention_slices(m, layer, lens)
    n_pcs = spec.org.total_pseudochannels
    unit = spec.pim.softmax_per_ck  # scores per CK and PC of a softmax unit (0: GPU softmax)
    if len(_LAYOUTS) > _LAYOUTS_MAX:
        _LAYOUTS.clear()
    sk = spec_key(spec)

    def layouts(s: AttentionSlice, g: int):
        key = (sk, g, wb, step.ns_per_byte, s.tokens, s.d_k, s.d_v, s.n_q)
        hit = _LAYOUTS.get(key)
        if hit is None:
            kw = {"n_pcs": g, "col_groups": "fast", "weight_bytes": wb,
                  "reduce_ns_per_byte": step.ns_per_byte}
            sc = gemv_layout(spec, s.tokens, s.d_k, s.n_q, **kw)
            va = gemv_layout(spec, s.d_v, s.tokens, s.n_q, **kw)
            hit = _LAYOUTS[key] = (sc, va, estimate_kernel_ns(spec, sc.kernel)
                                   + estimate_kernel_ns(spec, va.kernel))
        return hit

    order = sorted(slices, key=lambda s: (-s.tokens * s.n_q * (s.d_k + s.d_v), s.request,
                                          s.head))  # longest first (LPT)
    if pcs_per_slice is None:
        # the largest power of two g0 <= PCs / slices; on a PC count that is not a power of
        # two (5 stacks: 160 PCs) such groups can leave PCs idle, and with a softmax unit a
        # group of one slice cannot hide its softmax behind a next score kernel, so there the
        # group size with the least estimated makespan (LPT over the groups, + the exposed
        # softmax) among the divisors of the PC count in [g0, 4 g0] is taken (ties: smaller)
        g0 = default_pcs_per_slice(spec, len(slices))
        best = None
        pow2 = n_pcs & (n_pcs - 1) == 0
        cands = [g0] if pow2 and not unit else [c for c in range(g0, min(n_pcs, 4 * g0) + 1)
                                                if n_pcs % c == 0]
        for cand in cands:
            try:
                span = _lpt([layouts(x, cand)[2] for x in order], n_pcs // cand)[0]
            except ConfigError:  # a slice does not fit in a bank at this group size
                continue
            if unit:  # the last slice's softmax is not hidden behind a next score kernel
                span += min(x.n_q * x.tokens for x in order) / (unit * cand) * spec.tCK_ns
            if best is None or span < best[0] * (1 - 1e-9):
                best = (span, cand)
        g = g0 if best is None else best[1]
    else:
        g = pcs_per_slice
    if isinstance(g, bool) or not isinstance(g, (int, np.integer)) or g < 1 or n_pcs % g:
        raise ConfigError(f"PIM attention: pcs_per_slice must divide the {n_pcs} "
                          f"pseudo-channels of {spec.name}, got {pcs_per_slice!r}")
    g = int(g)
    n_groups = n_pcs // g
    _, where = _lpt([layouts(x, g)[2] for x in order], n_groups)
    members: list[list[AttentionSlice]] = [[] for _ in range(n_groups)]
    for x, grp in zip(order, where):
        members[grp].append(x)
    score: list[list[GemvKernel]] = [[] for _ in range(n_pcs)]
    value: list[list[GemvKernel]] = [[] for _ in range(n_pcs)]
    progs: list[list[GemvKernel]] = [[] for _ in range(n_pcs)]
    sm_bytes = tail_bytes = 0
    sm_unit_ns = 0.0
    w = p = 0
    n_rows = spec.org.rows
    for grp, ss in enumerate(members):
        row = 0
        ks, kv, sms, est_s = [], [], [], []

        def place(kernel: GemvKernel) -> GemvKernel:
            # pack the group's slices from row 0; wrap to row 0 (rows then shared, an
            # approximation) rather than split a kernel across the end of the bank
            nonlocal row
            used = kernel.dram_rows(spec.pim.bundles, spec.pim.bank_parity)
            if row + used > n_rows:
                row = 0
            out = _at_row(kernel, row)
            row += used
            return out

        for s in ss:
            sc, va, _ = layouts(s, g)
            if unit:
                # scores stay beside the PUs for the softmax unit, whose probabilities are the
                # value GEMV's input: no score readback, no probability writes over the bus
                ks.append(place(sc.kernel.evolve(n_res=0)))
                kv.append(place(va.kernel.evolve(gw_per_chunk=0)))
                sms.append(s.n_q * s.tokens / (unit * g) * spec.tCK_ns)
                est_s.append(estimate_kernel_ns(spec, sc.kernel))
            else:
                ks.append(place(sc.kernel))
                kv.append(place(va.kernel))
                sm_bytes += s.n_q * (sc.readback_bytes + s.tokens * 2)
            tail_bytes += s.n_q * max(va.reduce_bytes - va.out_rows * va.out_bytes, 0)
            w += s.n_q * (sc.weight_bytes + va.weight_bytes)
            p += s.n_q * (sc.padded_weight_bytes + va.padded_weight_bytes)
        if unit and ss:
            # software pipeline (AttAcc overlaps a head's softmax with the next head's score):
            # score 1, score 2, value 1, score 3, value 2, ..., value n; a value kernel waits
            # for what is left of its slice's softmax after the score kernel between them,
            # a barrier over the group's PCs (every score row of the slice is needed)
            sync = "group" if g > 1 else False
            seq = [ks[0]]
            for i in range(len(ss)):
                nxt = est_s[i + 1] if i + 1 < len(ss) else 0.0
                if i + 1 < len(ss):
                    seq.append(ks[i + 1])
                seq.append(kv[i].evolve(gap_ns=max(sms[i] - nxt, 0.0), sync=sync,
                                      group=grp))
            sm_unit_ns = max(sm_unit_ns, sum(sms))
            for q in range(grp * g, (grp + 1) * g):
                progs[q] = seq
                score[q] = ks
        else:
            for q in range(grp * g, (grp + 1) * g):
                score[q], value[q] = ks, kv
    if unit:
        softmax = sm_unit_ns
        prog = progs
    else:
        softmax = step.ns(sm_bytes)
        # the value phase starts after every score is back and the GPU's softmax: a barrier
        # over every PC with work (all channels)
        # one program object per group: the device converts each distinct object once
        per_group: dict[int, list[GemvKernel]] = {}
        prog = []
        for q in range(n_pcs):
            p_q = per_group.get(id(value[q]))
            if p_q is None:
                p_q = per_group[id(value[q])] = score[q] + (
                    [value[q][0].evolve(gap_ns=softmax, sync="all")] + value[q][1:]
                    if value[q] else [])
            prog.append(p_q)
    if device is None:
        device = PimDevice(spec, log=log)
        start_ns = 0.0 if start_ns is None else start_ns
    elif not isinstance(device, PimDevice) or device.spec != spec:
        raise ConfigError(f"PIM attention: device must be a PimDevice of {spec.name!r}")
    res = device.run(prog, start_ns=start_ns)
    t1 = res.start_ns
    for q in range(n_pcs):
        if not score[q]:
            continue
        if unit:  # the last score kernel of the pipeline is the stream's second-to-last
            pos = len(prog[q]) - 2 if len(prog[q]) > 1 else 0
            t1 = max(t1, float(res.kernel_end_ns[res.kernel_ptr[q] + pos]))
        else:
            t1 = max(t1, float(res.kernel_end_ns[res.kernel_ptr[q] + len(score[q]) - 1]))
    t1 -= res.start_ns
    cache = sum(s.tokens * (s.d_k + (0 if t == "mla" else s.d_v)) * wb for s in slices)
    return AttentionPimResult(
        layer_type=t, on_pim=True, time_ns=res.time_ns, score_ns=t1, softmax_ns=softmax,
        tail_ns=step.ns(tail_bytes, fixed=False), gpu_ns=0.0, n_slices=len(slices),
        pcs_per_slice=g, kv_bytes=int(cache), padding=1.0 - w / p if p else 0.0, pim=res)
