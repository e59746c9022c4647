"""Channel symmetry of PIM runs: which channels a program runs identically, so that the
symmetric fast path of :class:`~sieve.dram.pim_device.PimDevice` simulates one channel per
class and copies its result, state and log to the others (docs/model-of-computation.md,
*Symmetry*).

It owns the class rule (:func:`channel_classes`, a function of the engine state by channel,
``Engine.state_by_channel()``, and the run; the window-history horizon it uses is
``Engine.history_horizon()``), the numbering of streams (:func:`_stream_ids`), when a program
with barriers may take the fast path (:func:`_sync_insensitive`), and the expansion of a class
run's outputs to every channel (:func:`_class_log`, :func:`_csr_rows`). Kernels here are
:class:`~sieve.dram.pim_device.GemvKernel` (not imported: that module imports this one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.dram import engine
from sieve.dram.memo import _NO_HIST

__all__ = ["channel_classes"]


def channel_classes(state: dict, refresh_interval: int, horizon: list[np.ndarray], idle: str,
                    start: int, stream_ids: np.ndarray | None
                    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(class of every channel, first channel of every class, every channel's PCs in
    round-robin order) for a run at tick ``start`` whose PC p runs stream ``stream_ids[p]`` in
    every channel (None: one stream for all), on a device in engine state ``state``
    (``Engine.state_by_channel()``, every channel), refresh interval ``refresh_interval``
    (ticks), window-history horizon ``horizon`` (``Engine.history_horizon()``) and idle policy
    ``idle``. The rule is given at :meth:`sieve.dram.pim_device.PimDevice.channel_classes`."""
    due = state["ref_due"]
    nch, npc = due.shape
    lead = 0 if idle == "closed" else engine.PULL_IN_INTERVALS * refresh_interval
    low = np.maximum(state["ch_last"], np.minimum(start, due.min(axis=1) - lead))
    col = low[:, None]
    # the bus round robin: on a tie the PC with the lowest (last issue, number) goes first;
    # listing each channel's PCs in that order makes the order itself the same everywhere
    order = np.argsort(state["pc_lseq"], axis=1, kind="stable")
    rows = np.arange(nch)[:, None]

    def pcs(a: np.ndarray) -> np.ndarray:  # (nch, npc, ...) in round-robin order
        return a[rows, order].reshape(nch, -1)

    def per_unit(a: np.ndarray) -> np.ndarray:  # (nch, units, ...): channel level or per PC
        return a.reshape(nch, -1) if a.shape[1] == 1 else pcs(a)

    cols = [col - start]
    for lv, (ready, hist) in enumerate(zip(state["ready"], state["hist"])):
        cols.append(per_unit(np.maximum(ready, low[:, None, None]) - start))
        if hist.size:
            dead = (hist < 0) | (hist + horizon[lv][None, None, None, :, None]
                                 <= low[:, None, None, None, None])
            cols.append(per_unit(np.where(dead, _NO_HIST, hist - start)))
    for k in ("open_row", "ab_row", "sb_row", "pb_row", "n_open"):
        cols.append(pcs(state[k]))
    cols.append(pcs(due - start))
    cols.append(pcs(state["ref_rr"]))
    cols.append(pcs(np.maximum(state["pc_last"], col) - start))
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
