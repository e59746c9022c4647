"""Lowering of matrix-vector work to PIM kernel descriptors for the cycle-accurate engine.

This module decides how a GEMV's weights are laid out over the PIM units and turns that into
:class:`sieve.dram.GemvKernel` descriptors; the engine (sieve.dram.run_pim) expands them to
commands and times them. It must not time anything itself.

Tensor-parallel (TP) row-sharded GEMV, the mapping Sieve uses (seed §6 "Parallelizing Expert
Computation on PIM"): the ``out_rows x in_cols`` weight matrix is split by output rows evenly
over ``n_pcs`` pseudo-channels at identical addresses, so every PC runs the same command
stream; inside a PC the rows are split over its PUs (one per ``banks_per_pu`` banks). The input
vector is broadcast into every PC's global buffer in ``n_chunks`` balanced chunks of at most
``gbuf_bytes``; for each chunk, each PU's slice of the weights (its output rows x the chunk)
is stored contiguously in its banks, so it is read by ``rows_per_chunk`` all-bank activations
of ``macs_per_row`` MACs each (one MAC = one burst per PU). Partial sums stay in the PUs across
chunks; the PC's outputs are read back after the last chunk. Shapes that do not divide evenly
are padded (the padding is reported by :func:`gemv_layout`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sieve.dram import GemvKernel
from sieve.errors import ConfigError
from sieve.specs import DramSpec, get_spec

__all__ = ["GemvLayout", "gemv_kernel", "gemv_layout"]


@dataclass(frozen=True)
class GemvLayout:
    """How one TP-sharded GEMV maps onto the PIM units (per pseudo-channel unless noted)."""

    kernel: GemvKernel
    n_pcs: int  # pseudo-channels sharing the GEMV
    rows_per_pc: int  # output rows per PC (padded)
    rows_per_pu: int  # output rows per PU (padded)
    chunk_elems: int  # input elements per global-buffer fill
    weight_bytes: int  # true weight bytes of the whole GEMV
    padded_weight_bytes: int  # bytes the MACs actually stream (all PCs)

    @property
    def padding(self) -> float:
        """Fraction of streamed bytes that are padding."""
        return 1.0 - self.weight_bytes / self.padded_weight_bytes


def gemv_layout(spec: DramSpec | str, out_rows: int, in_cols: int, n_vectors: int = 1, *,
                n_pcs: int | None = None, weight_bytes: int | None = None,
                out_bytes: int = 2, base_row: int = 0, gap_ns: float = 0.0) -> GemvLayout:
    """Lay a TP row-sharded GEMV over ``n_pcs`` pseudo-channels (default: all of the spec).

    Args:
        spec: a PIM spec (preset name or DramSpec).
        out_rows: output length (rows of the weight matrix).
        in_cols: input length (columns).
        n_vectors: input vectors (tokens), executed one after another.
        n_pcs: pseudo-channels the rows are sharded over.
        weight_bytes: bytes per weight element (default: the PU operand size).
        out_bytes: bytes per output element read back.
        base_row: first DRAM row of the weights (identical in every PC and bank).
        gap_ns: idle time before the kernel starts (after the previous kernel's results).
    """
    spec = get_spec(spec)
    if spec.pim is None:
        raise ConfigError(f"GEMV lowering: spec {spec.name!r} has no PIM units")
    for name, v in (("out_rows", out_rows), ("in_cols", in_cols), ("n_vectors", n_vectors)):
        if not isinstance(v, int) or v < 1:
            raise ConfigError(f"GEMV lowering: {name} must be an integer >= 1, got {v!r}")
    o, p = spec.org, spec.pim
    n_pcs = o.total_pseudochannels if n_pcs is None else int(n_pcs)
    if not 1 <= n_pcs <= o.total_pseudochannels:
        raise ConfigError(f"GEMV lowering: n_pcs must be in [1, {o.total_pseudochannels}], "
                          f"got {n_pcs}")
    wb = p.dtype_bytes if weight_bytes is None else int(weight_bytes)
    if wb < 1 or out_bytes < 1:
        raise ConfigError("GEMV lowering: element sizes must be >= 1 byte")
    pus = p.pus_per_pc(o)
    rows_per_pc = math.ceil(out_rows / n_pcs)
    rows_per_pu = math.ceil(rows_per_pc / pus)
    n_chunks = math.ceil(in_cols * wb / p.gbuf_bytes)
    chunk_elems = math.ceil(in_cols / n_chunks)
    pu_chunk_bytes = rows_per_pu * chunk_elems * wb
    rows_per_chunk = math.ceil(pu_chunk_bytes / (p.banks_per_pu * o.row_bytes))
    macs_chunk = math.ceil(pu_chunk_bytes / o.access_bytes)
    macs_per_row = math.ceil(macs_chunk / rows_per_chunk)
    kernel = GemvKernel(
        n_vectors=n_vectors,
        n_chunks=n_chunks,
        gw_per_chunk=math.ceil(chunk_elems * wb / o.access_bytes),
        rows_per_chunk=rows_per_chunk,
        macs_per_row=macs_per_row,
        n_res=math.ceil(rows_per_pc * out_bytes / o.access_bytes),
        base_row=base_row,
        gap_ns=gap_ns,
    )
    padded = n_pcs * pus * n_chunks * rows_per_chunk * macs_per_row * o.access_bytes
    return GemvLayout(kernel=kernel, n_pcs=n_pcs, rows_per_pc=rows_per_pc,
                      rows_per_pu=rows_per_pu, chunk_elems=chunk_elems,
                      weight_bytes=out_rows * in_cols * wb, padded_weight_bytes=padded)


def gemv_kernel(spec: DramSpec | str, out_rows: int, in_cols: int, n_vectors: int = 1,
                **kw) -> GemvKernel:
    """The :class:`GemvKernel` of :func:`gemv_layout` (same arguments)."""
    return gemv_layout(spec, out_rows, in_cols, n_vectors, **kw).kernel
