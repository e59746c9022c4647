"""Channel symmetry of PIM runs: which channels a program runs identically, so that the
symmetric fast path of :class:`~sieve.dram.pim_device.PimDevice` simulates one channel per
class and copies its result, state and log to the others (docs/model-of-computation.md,
*Symmetry*).

It owns the class rule (:func:`channel_classes`, a function of the engine state, its layout
and the run), the window-history horizon it uses (:func:`_history_horizon`), the numbering of
streams (:func:`_stream_ids`), when a program with barriers may take the fast path
(:func:`_sync_insensitive`), and the expansion of a class run's outputs to every channel
(:func:`_class_log`, :func:`_csr_rows`). Kernels here are
:class:`~sieve.dram.pim_device.GemvKernel` (not imported: that module imports this one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.dram import engine
from sieve.dram.memo import _NO_HIST

__all__ = ["channel_classes"]


def channel_classes(state: dict, lay: dict, horizon: list[np.ndarray], idle: str, start: int,
                    stream_ids: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class of every channel, first channel of every class, every channel's PCs in
    round-robin order) for a run at tick ``start`` whose PC p runs stream ``stream_ids[p]`` in
    every channel (None: one stream for all), on a device in engine state ``state``
    (``Engine.get_state()``) with layout ``lay`` (``Engine.layout()``), window-history
    horizon ``horizon`` (:func:`_history_horizon`) and idle policy ``idle``. The rule is
    given at :meth:`sieve.dram.pim_device.PimDevice.channel_classes`."""
    nch, npc = lay["n_channels"], lay["pcs_per_channel"]
    lead = 0 if idle == "closed" else engine.PULL_IN_INTERVALS * lay["refresh_interval"]
    due = state["ref_due"].reshape(nch, npc)
    low = np.maximum(state["ch_last"], np.minimum(start, due.min(axis=1) - lead))
    col = low[:, None]
    # the bus round robin: on a tie the PC with the lowest (last issue, number) goes first;
    # listing each channel's PCs in that order makes the order itself the same everywhere
    order = np.argsort(state["pc_lseq"].reshape(nch, npc), axis=1, kind="stable")
    rows = np.arange(nch)[:, None]

    def pcs(a: np.ndarray) -> np.ndarray:  # (nch, npc, ...) in round-robin order
        return a[rows, order].reshape(nch, -1)

    cols = [col - start]
    for lv in range(5):
        n = lay["n_nodes"][lv] * lay["n_cmd"]
        seg = np.maximum(state["ready"][lay["lvl_off"][lv]:lay["lvl_off"][lv] + n].reshape(
            nch, -1), col) - start
        cols.append(seg if lv == 0 else pcs(seg.reshape(nch, npc, -1)))
        n = lay["n_nodes"][lv] * lay["n_slots"][lv] * lay["max_window"]
        if n:
            seg = state["hist"][lay["hist_off"][lv]:lay["hist_off"][lv] + n].reshape(
                nch, -1, lay["n_slots"][lv], lay["max_window"])
            dead = (seg < 0) | (seg + horizon[lv][None, None, :, None]
                                <= low[:, None, None, None])
            seg = np.where(dead, _NO_HIST, seg - start).reshape(nch, -1)
            cols.append(seg if lv == 0 else pcs(seg.reshape(nch, npc, -1)))
    for k in ("open_row", "ab_row", "sb_row", "n_open"):
        cols.append(pcs(state[k].reshape(lay["n_buffers"], nch, npc, -1).transpose(1, 2, 0, 3)))
    cols.append(pcs(due - start))
    cols.append(pcs(state["ref_rr"].reshape(nch, npc)))
    cols.append(pcs(np.maximum(state["pc_last"].reshape(nch, npc), col) - start))
    if stream_ids is not None:
        cols.append(stream_ids[order])
    m = np.concatenate(cols, axis=1, dtype=np.int64)
    if np.all(m == m[0]):
        return np.zeros(nch, dtype=np.intp), np.zeros(1, dtype=np.intp), order
    number: dict[bytes, int] = {}  # exact: a dict compares the keys, not only hashes
    cls = np.array([number.setdefault(m[c].tobytes(), len(number)) for c in range(nch)],
                   dtype=np.intp)
    first = np.zeros(len(number), dtype=np.intp)
    first[cls[::-1]] = np.arange(nch - 1, -1, -1)
    return cls, first, order


def _stream_ids(streams: tuple[tuple[Any, ...], ...]) -> np.ndarray:
    """A number per stream, equal for equal streams (compared, not hashed: hashing every
    kernel of long streams costs more than comparing the few streams of a channel, which
    are usually one object)."""
    first: list[tuple[Any, ...]] = []
    out = []
    for x in streams:
        for j, f in enumerate(first):
            if x is f or x == f:
                out.append(j)
                break
        else:
            out.append(len(first))
            first.append(x)
    return np.array(out, dtype=np.intp)


def _sync_insensitive(channel: tuple[tuple[Any, ...], ...]) -> bool:
    """Whether, under idle policy "open", a program whose every channel runs these streams
    gives each channel the same commands however many channels are simulated: true without
    barriers spanning channels ("all", "group"), or when every PC of the channel runs the same
    stream (then no channel issues while its PCs wait for another channel). Otherwise a PC
    released by another channel may pull a refresh in before commands its channel issued
    meanwhile, and the full simulation's outcome depends on the order in which it advances
    the channels."""
    if all(s == channel[0] for s in channel):
        return True
    return not any(k.sync in ("all", "group") for s in channel for k in s)


def _class_log(log: np.ndarray, cls: np.ndarray, order: np.ndarray, sim: int,
               seq0: int) -> np.ndarray:
    """The log of every channel from the log of a run that simulated one channel per class
    (channel i = class i, its PCs in round-robin order): channel c gets its class's commands
    with its own PC numbers (``order[c]``), channels in order, numbered from ``seq0`` on as a
    full simulation without cross-channel barriers numbers them."""
    own = [log[log["ch"] == i] for i in range(sim)]
    sizes = np.array([len(own[i]) for i in cls], dtype=np.int64)
    first = seq0 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
    parts = []
    for c, i in enumerate(cls):
        rep = own[i].copy()
        rep["ch"] = c
        rep["pc"] = order[c][rep["pc"]]
        rep["seq"] = first[c] + np.arange(len(rep))
        parts.append(rep)
    return np.concatenate(parts) if parts else log


def _csr_rows(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices of the entries of CSR rows ``rows`` (pointer ``ptr``), concatenated."""
    lo, hi = ptr[rows], ptr[rows + 1]
    n = hi - lo
    out = np.arange(int(n.sum()), dtype=np.int64)
    return out + np.repeat(lo - np.concatenate([[0], np.cumsum(n)[:-1]]), n)


def _history_horizon(arrays: dict, lay: dict) -> list[np.ndarray]:
    """Per level, per window-history slot: the longest latency of a windowed constraint row
    that reads the slot (ticks). Only windowed rows read the history (the window-th most
    recent issue), so an entry ``h`` with ``h + horizon <= t`` binds no command at or after
    tick ``t``."""
    n_cmd = lay["n_cmd"]
    ptr = np.asarray(arrays["cons_ptr"])
    lat = np.asarray(arrays["cons_lat"], dtype=np.int64)
    win = np.asarray(arrays["cons_win"])
    slot_of = np.asarray(arrays["hist_slot"])
    out = []
    for lv in range(5):
        h = np.zeros(lay["n_slots"][lv], dtype=np.int64)
        for p in range(n_cmd):
            k = lv * n_cmd + p
            if slot_of[k] >= 0:
                rows = slice(ptr[k], ptr[k + 1])
                w = win[rows] > 1
                if np.any(w):
                    h[slot_of[k]] = max(h[slot_of[k]], int(lat[rows][w].max()))
        out.append(h)
    return out
