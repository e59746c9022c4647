"""Lowering of matrix-vector work to PIM kernel descriptors: the 2-D GEMV layout.

This module decides how one GEMV's weights are laid out over the PIM units and turns that into
:class:`sieve.dram.GemvKernel` descriptors; the engine (:func:`sieve.dram.run_pim`) expands
them to commands and times them. It never times anything itself, except to *choose* a layout
(``col_groups="auto"`` runs the engine on the candidates). Expert FFNs, shared experts and
attention are built on it in :mod:`sieve.pim.ffn` and :mod:`sieve.pim.attention`.

Layout (docs/model-of-computation.md, *PIM kernels*, K1-K3). The ``out_rows x in_cols``
weight matrix of ``y = W x`` is cut into ``row_groups x col_groups`` tiles, one per
pseudo-channel (PC), at identical addresses in every PC and bank (seed §6 "Parallelizing Expert
Computation on PIM": sharded at identical indices, so every PC runs the same command stream).

* Across PCs, output rows AND input columns are split. A PC of column group ``j`` needs only
  its slice of ``x`` in its global buffer (fewer GWRITEs) and produces partial sums of its
  rows, read back (RDRES) and summed on the GPU when ``col_groups > 1``.
* Inside a PC, every PU sees the same global-buffer entry in each all-bank MAC (the vector is
  broadcast to all PUs of a PC; seed §2, He et al. 2020), so PUs can only split *rows*: each
  PU holds ``rows_per_pu`` rows of the PC's tile.
* ``x``'s slice is written in ``n_chunks`` global-buffer fills of at most ``gbuf_bytes``;
  for each chunk, each PU's weights (its rows x the chunk, every row segment padded to whole
  bursts) are stored contiguously in its bank(s) and read by ``rows_per_chunk`` all-bank
  activations of ``macs_per_row`` MACs (one MAC = one burst per PU). Partial sums stay in the
  PUs across chunks; each PC's ``rows_per_pc`` results are read back after the last chunk.
* Uneven shapes are padded (identical streams need identical tiles); :attr:`GemvLayout.padding`
  is the fraction of streamed bytes that is padding.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

from sieve.dram.pim_device import GemvKernel
from sieve.dram.pimmode import HBM_PIM_GRF, result_rows
from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError
from sieve.validate import check_int

__all__ = [
    "GemvLayout",
    "col_group_choices",
    "estimate_kernel_ns",
    "gemv_kernel",
    "gemv_layout",
    "spec_key",
]


@dataclass(frozen=True)
class GemvLayout:
    """How one GEMV maps onto the PIM units (per pseudo-channel unless noted)."""

    kernel: GemvKernel  # what every PC of the GEMV runs
    out_rows: int
    in_cols: int
    n_pcs: int  # pseudo-channels sharing the GEMV (= row_groups * col_groups)
    row_groups: int  # PCs along the output rows
    col_groups: int  # PCs along the input columns (partial sums when > 1)
    rows_per_pc: int  # output rows per PC (padded)
    cols_per_pc: int  # input columns per PC (padded to whole bursts)
    rows_per_pu: int  # output rows per PU (padded)
    chunk_elems: int  # input elements per global-buffer fill
    weight_bytes: int  # true weight bytes of the whole GEMV
    padded_weight_bytes: int  # bytes the MACs actually stream per vector (all PCs)
    readback_bytes: int  # bytes read back per vector (all PCs): outputs or partial sums
    out_bytes: int  # bytes per result element read back
    lane_partials: int = 1  # values read back per output row and PC: 1 with a PU adder
    #                         tree, else the PU's lanes (spec.pim.adder_tree)
    bundles: int = 1  # bank bundles the kernel's rows are striped over (spec.pim.bundles)
    bank_parity: bool = False  # chunks split over the bank parities (spec.pim.bank_parity)
    output_tiles: int = 1  # kernels every PC runs one after another, one per output tile of
    #                        tile_rows rows per PU (gemv_layout); ``kernel`` is the first
    tile_stride: int = 0  # DRAM rows from one tile's kernel to the next's (weights + results)

    @property
    def dram_rows(self) -> int:
        """DRAM rows per bank the kernel's weights occupy (:meth:`GemvKernel.dram_rows`)."""
        return self.kernel.dram_rows(self.bundles, self.bank_parity)

    @property
    def padding(self) -> float:
        """Fraction of streamed bytes that are padding."""
        return 1.0 - self.weight_bytes / self.padded_weight_bytes

    @property
    def reduce_bytes(self) -> int:
        """Partial-sum bytes the GPU must add up per vector: every read-back byte when
        ``col_groups > 1`` or the PUs leave lane partial sums (``lane_partials > 1``), else
        0."""
        return self.readback_bytes if self.col_groups > 1 or self.lane_partials > 1 else 0

    def kernels(self) -> list[GemvKernel]:
        """What every PC runs, in order: :attr:`kernel`, or with output tiles
        (``tile_rows``) one kernel per tile, each at the rows after the previous one's and
        started right after it (no ``gap_ns``)."""
        k = self.kernel
        return [k] + [k.evolve(base_row=k.base_row + i * self.tile_stride, gap_ns=0.0)
                      for i in range(1, self.output_tiles)]

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "kernel"}
        d["kernel"] = dict(self.kernel.__dict__)
        d["padding"] = self.padding
        return d


def _replace(obj, **kw):
    from dataclasses import replace

    return replace(obj, **kw)


def spec_key(spec: DramSpec) -> str:
    """A string identifying every value of a spec (for memo tables keyed by spec); computed
    once per spec object (specs are frozen) and kept on it."""
    key = spec.__dict__.get("_spec_key")
    if key is None:
        key = json.dumps(spec.to_dict(), sort_keys=True, default=str)
        object.__setattr__(spec, "_spec_key", key)
    return key


def _check_int(who: str, name: str, v) -> int:
    return check_int(who, name, v, lo=1)  # numpy integers accepted, returned as int


def col_group_choices(spec: DramSpec | str, in_cols: int, n_pcs: int | None = None,
                      weight_bytes: int | None = None) -> list[int]:
    """Valid ``col_groups``: divisors of ``n_pcs`` no larger than the input's burst count."""
    spec = get_spec(spec)
    n = spec.org.total_pseudochannels if n_pcs is None else n_pcs
    wb = spec.pim.dtype_bytes if weight_bytes is None else weight_bytes
    segs = math.ceil(in_cols * wb / spec.org.access_bytes)
    return [d for d in range(1, n + 1) if n % d == 0 and d <= max(segs, 1)]


def _build(spec: DramSpec, out_rows: int, in_cols: int, n_vectors: int, n_pcs: int,
           col_groups: int, wb: int, out_bytes: int, base_row: int,
           gap_ns: float) -> GemvLayout:
    o, p = spec.org, spec.pim
    row_groups = n_pcs // col_groups
    pus = p.pus_per_pc(o)
    elems = o.access_bytes // wb  # elements per burst
    rows_pc = math.ceil(out_rows / row_groups)
    segs_pc = math.ceil(math.ceil(in_cols / col_groups) / elems)  # input bursts per PC
    rows_pu = math.ceil(rows_pc / pus)
    # the buffer holds one chunk of every vector of a pass (pim.vectors_per_read vectors)
    vpp = p.vectors_per_read
    gbuf_segs = p.gbuf_bytes // o.access_bytes // vpp
    n_chunks = math.ceil(segs_pc / gbuf_segs)
    segs_chunk = math.ceil(segs_pc / n_chunks)
    macs_chunk = rows_pu * segs_chunk  # bursts per PU per chunk, row segments whole bursts
    row_cap = spec.pim_row_bursts  # bursts one PU reads from one activated (bundle) row
    rows_per_chunk = math.ceil(macs_chunk / row_cap)
    macs_per_row = math.ceil(macs_chunk / rows_per_chunk)
    # without an adder tree a PU's lane-wise MACs leave one partial sum per lane and row
    # (Samsung's GRF_B, added up by the host: PIMSimulator GEMV + Burst::fp16AdderTree)
    partials = 1 if p.adder_tree else p.lanes
    n_res = math.ceil(rows_pc * partials * out_bytes / o.access_bytes)
    kernel = GemvKernel(n_vectors=n_vectors, n_chunks=n_chunks, gw_per_chunk=segs_chunk,
                        rows_per_chunk=rows_per_chunk, macs_per_row=macs_per_row, n_res=n_res,
                        base_row=base_row, gap_ns=gap_ns, vectors_per_pass=vpp)
    # + the row after the weights that an "hbm-pim" protocol writes GRF_B to; bundled rows
    # are striped over the bundles, parity rows split over the two parities
    dram_rows = kernel.dram_rows(p.bundles, p.bank_parity)
    if base_row + dram_rows + result_rows(spec) > o.rows:
        raise ConfigError(
            f"GEMV lowering: a {out_rows} x {in_cols} matrix on {n_pcs} PCs with {col_groups} "
            f"column group(s) needs {dram_rows} rows of every bank from row "
            f"{base_row}; a bank of {spec.name} has {o.rows} rows")
    padded = n_pcs * pus * n_chunks * rows_per_chunk * macs_per_row * o.access_bytes
    return GemvLayout(
        kernel=kernel, out_rows=out_rows, in_cols=in_cols, n_pcs=n_pcs,
        row_groups=row_groups, col_groups=col_groups, rows_per_pc=rows_pc,
        cols_per_pc=segs_pc * elems, rows_per_pu=rows_pu, chunk_elems=segs_chunk * elems,
        weight_bytes=out_rows * in_cols * wb, padded_weight_bytes=padded,
        readback_bytes=n_pcs * n_res * o.access_bytes, out_bytes=out_bytes,
        lane_partials=partials, bundles=p.bundles, bank_parity=p.bank_parity)


def estimate_kernel_ns(spec: DramSpec | str, kernel: GemvKernel) -> float:
    """A quick analytic estimate of one PC's kernel time (no refresh, no bus sharing).

    Used only to *choose* layouts and mappings where running the engine on every candidate
    would be too slow (attention slices); reported times always come from the engine.
    """
    spec = get_spec(spec)
    t = spec.timing
    gw = max(t.nCCDS, t.nBL)
    row = max(t.nRC, t.nRCDRD + max(kernel.macs_per_row - 1, 0) * t.nCCDAB + t.nRTP + t.nRP)
    n_rows = kernel.n_chunks * kernel.rows_per_chunk
    passes = kernel.passes
    # every vector's input writes and readback; per pass: the chunks' write-to-MAC turnarounds,
    # the pipeline drain and one stream over the weights (every MAC feeds the pass's vectors)
    io = kernel.n_vectors * (kernel.n_chunks * kernel.gw_per_chunk * gw
                             + kernel.n_res * max(t.nCCDS, t.nBL))
    per_pass = kernel.n_chunks * (t.nCWL + t.nBL) + t.nMACRD
    nb = spec.pim.bundles if spec.pim is not None else 1
    if n_rows <= nb:  # the row (one per bundle) stays open across passes
        macs = passes * n_rows * kernel.macs_per_row * t.nCCDAB + t.nRCDRD
    elif nb > 1:  # a bundle switches rows while the others stream theirs
        macs = passes * n_rows * max(kernel.macs_per_row * t.nCCDAB, row / nb)
    else:
        macs = passes * n_rows * row
        if spec.pim is not None and spec.pim.bank_parity and n_rows > 1:
            # the even chunks' first row opens behind their input writes (the register row
            # is in an odd bank): their row switch is hidden
            macs -= passes * -(-kernel.n_chunks // 2) * (t.nRTP + t.nRP + t.nRCDRD)
    ck = io + passes * per_pass + macs + t.nCL + t.nBL
    p = spec.pim
    if p is not None and p.modes == "hbm-pim":  # sieve.dram.pimmode sequences, roughly
        banks = spec.org.bankgroups * spec.org.banks
        park = banks * max(t.nRRDS, -(-t.nFAW // 4)) + t.nRCDRD + t.nRP if p.park else 0
        ck += (2 * park + t.nFAW + t.nRAS + t.nRP + t.nRCDWR + p.crf_bursts * t.nCCDL
               + t.nRRDL + t.nRAS + t.nRP
               + kernel.n_vectors * (2 * t.nRCDWR + t.nRTP + t.nRP))
        # GRF_A: register-row WRs instead of GWRITE, the MAC row closed and reopened around
        # them; GRF_B: 8 WRs to the row after the weights per vector
        grf_a = (t.nRTP + 2 * t.nRP + t.nRCDWR + kernel.gw_per_chunk * t.nCCDL + t.nCWL
                 + t.nBL + t.nWR + t.nRCDRD)
        ck += kernel.n_vectors * (kernel.n_chunks * (grf_a - kernel.gw_per_chunk * gw)
                                  + t.nRP + t.nRCDWR + HBM_PIM_GRF * t.nCCDL)
    return ck * spec.tCK_ns


def gemv_layout(spec: DramSpec | str, out_rows: int, in_cols: int, n_vectors: int = 1, *,
                n_pcs: int | None = None, col_groups: int | str = "auto",
                weight_bytes: int | None = None, out_bytes: int = 2, base_row: int = 0,
                gap_ns: float = 0.0, reduce_ns_per_byte: float = 0.0,
                tile_rows: int | None = None) -> GemvLayout:
    """Lay a GEMV ``y[out_rows] = W[out_rows, in_cols] x`` over ``n_pcs`` pseudo-channels.

    Args:
        spec: a PIM spec (preset name or DramSpec).
        out_rows: output length (rows of the weight matrix).
        in_cols: input length (columns).
        n_vectors: input vectors (tokens), in passes of ``spec.pim.vectors_per_read`` (one
            vector per pass on a PU that feeds one vector per column read).
        n_pcs: pseudo-channels the GEMV is spread over (default: all of the spec).
        col_groups: PCs along the input columns (a divisor of ``n_pcs``), or ``"auto"``: the
            candidate with the least engine time for one vector plus the GPU's partial-sum
            reduction (``reduce_ns_per_byte`` x partial-sum bytes); ties go to fewer column
            groups. ``"fast"``: the same choice with :func:`estimate_kernel_ns` instead of the
            engine. ``1`` is the row-only layout.
        weight_bytes: bytes per weight element (default: the PU operand size).
        out_bytes: bytes per result (or partial sum) read back.
        base_row: first DRAM row of the weights (identical in every PC and bank).
        gap_ns: idle time before the kernel starts (after the previous kernel's results).
        reduce_ns_per_byte: GPU cost per partial-sum byte, used only to choose ``col_groups``.
        tile_rows: output rows a PU computes per pass over the input. None (sieve's layout):
            all of its rows in one pass, the input written once. ``T``: its rows padded to a
            multiple of ``T`` and run as that many kernels of ``T`` rows one after another,
            each writing the whole input again and, under a mode protocol, switching modes
            again (:meth:`GemvLayout.kernels`): PIMSimulator's layout with ``T = 8``, its
            GRF_B registers, and ``col_groups=1`` (docs/validation.md, *PIM mode protocol
            against PIMSimulator*). ``col_groups="auto"`` chooses as without tiles.
    """
    spec = get_spec(spec)
    who = "GEMV lowering"
    if spec.pim is None:
        raise ConfigError(f"{who}: spec {spec.name!r} has no PIM units")
    out_rows, in_cols, n_vectors = (_check_int(who, name, v) for name, v in (
        ("out_rows", out_rows), ("in_cols", in_cols), ("n_vectors", n_vectors)))
    o = spec.org
    n_pcs = check_int(who, "n_pcs", o.total_pseudochannels if n_pcs is None else n_pcs, lo=1,
                      hi=o.total_pseudochannels)
    wb = check_int(who, "weight_bytes", spec.pim.dtype_bytes if weight_bytes is None
                   else weight_bytes, lo=1)
    if o.access_bytes % wb:
        raise ConfigError(f"{who}: weight_bytes must divide the {o.access_bytes}-byte burst, "
                          f"got {wb!r}")
    out_bytes = check_int(who, "out_bytes", out_bytes, lo=1)
    if not isinstance(col_groups, str):
        col_groups = check_int(who, "col_groups", col_groups, lo=1)
    capacity = n_pcs * o.banks_per_pc * o.rows * o.row_bytes
    if out_rows * in_cols * wb > capacity:
        raise ConfigError(f"{who}: a {out_rows} x {in_cols} matrix of {wb}-byte weights "
                          f"({out_rows * in_cols * wb:.4g} B) does not fit in the {n_pcs} "
                          f"pseudo-channels' {capacity:.4g} B of {spec.name}")
    if isinstance(col_groups, str):
        if col_groups not in ("auto", "fast"):
            raise ConfigError(f"{who}: col_groups must be an integer or one of auto, fast; "
                              f"got {col_groups!r}")
        col_groups = _choose(spec_key(spec), spec, out_rows, in_cols, n_pcs, wb, out_bytes,
                             float(reduce_ns_per_byte), col_groups == "fast")
    valid = col_group_choices(spec, in_cols, n_pcs, wb)
    if col_groups not in valid:
        raise ConfigError(f"{who}: col_groups {col_groups!r} is not a divisor of n_pcs "
                          f"({n_pcs}) within the input's bursts (valid: "
                          f"{', '.join(map(str, valid))})")
    if tile_rows is None:
        return _build(spec, out_rows, in_cols, n_vectors, n_pcs, col_groups, wb, out_bytes,
                      base_row, gap_ns)
    tile = check_int(who, "tile_rows", tile_rows, lo=1)
    row_groups, pus = n_pcs // col_groups, spec.pim.pus_per_pc(o)
    tiles = math.ceil(math.ceil(math.ceil(out_rows / row_groups) / pus) / tile)
    try:
        one = _build(spec, row_groups * pus * tile, in_cols, n_vectors, n_pcs, col_groups, wb,
                     out_bytes, base_row, gap_ns)
    except ConfigError as exc:  # one tile alone does not fit: name the tile size
        raise ConfigError(f"{who}: tile_rows {tile}: one output tile of {tile} rows per PU "
                          f"does not fit ({exc})") from None
    stride = one.dram_rows + result_rows(spec)
    if base_row + tiles * stride > o.rows:
        raise ConfigError(
            f"{who}: a {out_rows} x {in_cols} matrix on {n_pcs} PCs in {tiles} output tiles "
            f"(tile_rows {tile}) needs {tiles * stride} rows of every bank from row "
            f"{base_row}; a bank of {spec.name} has {o.rows} rows")
    return _replace(one, out_rows=out_rows, weight_bytes=out_rows * in_cols * wb,
                    rows_per_pc=one.rows_per_pc * tiles, rows_per_pu=tile * tiles,
                    padded_weight_bytes=one.padded_weight_bytes * tiles,
                    readback_bytes=one.readback_bytes * tiles, output_tiles=tiles,
                    tile_stride=stride)


_CHOICES: dict[tuple, int] = {}


def export_choices() -> list[tuple]:
    """The memo of ``col_groups`` choices (``"auto"``/``"fast"``) as ``(spec_key, out_rows,
    in_cols, n_pcs, weight_bytes, out_bytes, reduce_ns_per_byte, fast, col_groups)`` tuples
    (saved by sieve.experiments.cache)."""
    return [(*k, v) for k, v in _CHOICES.items()]


def import_choices(entries) -> int:
    """Add memo entries in :func:`export_choices`' form (checked by the caller; an entry is
    what :func:`_search` returned for its key); returns how many were new."""
    new = 0
    for *key, choice in entries:
        new += tuple(key) not in _CHOICES
        _CHOICES.setdefault(tuple(key), choice)
    return new


def _choose(key: str, spec: DramSpec, out_rows: int, in_cols: int, n_pcs: int, wb: int,
            out_bytes: int, ns_per_byte: float, fast: bool) -> int:
    memo = (key, out_rows, in_cols, n_pcs, wb, out_bytes, ns_per_byte, fast)
    if memo not in _CHOICES:
        _CHOICES[memo] = _search(spec, out_rows, in_cols, n_pcs, wb, out_bytes, ns_per_byte,
                                 fast)
    return _CHOICES[memo]


def _search(spec: DramSpec, out_rows: int, in_cols: int, n_pcs: int, wb: int, out_bytes: int,
            ns_per_byte: float, fast: bool) -> int:
    from sieve.dram.pim_device import run_pim

    best, best_t = None, math.inf
    first_error = None
    for c in col_group_choices(spec, in_cols, n_pcs, wb):
        try:
            lay = _build(spec, out_rows, in_cols, 1, n_pcs, c, wb, out_bytes, 0, 0.0)
        except ConfigError as exc:  # this split does not fit in a bank; others may
            first_error = first_error or exc
            continue
        if fast:
            t = estimate_kernel_ns(spec, lay.kernel)
        else:
            # one PC group's stream on every PC: symmetric, so one channel is simulated
            t = run_pim(spec, [lay.kernel]).time_ns
        t += ns_per_byte * lay.reduce_bytes
        if t < best_t - 1e-9:
            best, best_t = c, t
    if best is None:
        raise first_error
    return best


def gemv_kernel(spec: DramSpec | str, out_rows: int, in_cols: int, n_vectors: int = 1,
                **kw) -> GemvKernel:
    """The :class:`GemvKernel` of :func:`gemv_layout` (same arguments)."""
    return gemv_layout(spec, out_rows, in_cols, n_vectors, **kw).kernel
