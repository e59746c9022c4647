"""Shared internals of :mod:`sieve.dram.checker`: the sorted log view and the violation collector.

This module owns no rule. It turns a validated command log into per-channel ``(tick, seq)``
order with flat node ids per level (:class:`LogView`), and collects violations as flat arrays
(:class:`Collector`) so that millions of them cost no Python objects until they are reported.
It never imports the engine (``sieve.dram`` / ``sieve._dram``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sieve.dram.commands import BUFFER_NORMAL, COMMANDS, LEVEL_INDEX, LEVELS
from sieve.dram.spec import DramSpec

__all__ = ["PARITY_LEVEL", "Collector", "LogView", "command_buffers", "has_parity",
           "level_counts", "stable_order"]

_SCOPE = np.array([LEVEL_INDEX[c.scope] for c in COMMANDS], dtype=np.int64)
#: The checker's extra level after the hierarchy's: a (PC, bank parity) node per bank-scope
#: command (bank index within the PC, bit 0), where the timing rows of the bank-parity PIM
#: commands (ACTPB / MACPB / PREPB, which act on every bank of their parity) are checked.
PARITY_LEVEL = len(LEVELS)


def stable_order(ids: np.ndarray) -> np.ndarray:
    """``np.argsort(ids, kind="stable")`` for non-negative integer ids, as one or two radix
    passes over 15-bit digits where the ids allow (numpy sorts 16-bit integers by radix,
    about 9x faster than the merge sort of 64-bit ones); the same permutation."""
    if ids.size == 0:
        return np.zeros(0, dtype=np.intp)
    top = int(ids.max())
    if int(ids.min()) < 0 or top >= 1 << 30:
        return np.argsort(ids, kind="stable")
    if top < 1 << 15:
        return np.argsort(ids.astype(np.int16), kind="stable")
    low = np.argsort((ids & 0x7FFF).astype(np.int16), kind="stable")
    return low[np.argsort((ids[low] >> 15).astype(np.int16), kind="stable")]


def ordered_by(ch: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """``np.lexsort((*reversed(keys), ch))`` - by channel, then each key in turn - taking the
    fast path of a log that is already in key order within each channel (every engine log,
    every Ramulator trace): a stable sort by channel, checked."""
    o = stable_order(ch)
    if o.size > 1:
        same = ch[o][1:] == ch[o][:-1]
        ok = np.ones(o.size - 1, dtype=bool)  # key order holds between neighbours
        undecided = np.ones(o.size - 1, dtype=bool)
        for k in keys:
            a, b = k[o][:-1], k[o][1:]
            ok &= ~(undecided & (b < a))
            undecided &= b == a
        if not np.all(ok | ~same):
            return np.lexsort((*reversed(keys), ch))
    return o


def has_parity(spec: DramSpec) -> bool:
    """Whether the spec has bank-parity PIM rows (the checker's parity level is needed)."""
    return spec.pim is not None and bool(spec.pim.bank_parity)


def level_counts(spec: DramSpec) -> np.ndarray:
    """Node counts per level (channel count is the whole GPU's: stacks x channels)."""
    o = spec.org
    return np.array([o.total_channels, o.pseudochannels, o.sids, o.bankgroups, o.banks],
                    dtype=np.int64)


def command_buffers(spec: DramSpec) -> np.ndarray:
    """Row buffer used by each command: its own with dual row buffers, else the shared one (0)."""
    dual = spec.pim is not None and spec.pim.dual_row_buffer
    return np.array([c.buffer if dual else BUFFER_NORMAL for c in COMMANDS], dtype=np.int64)


@dataclass
class LogView:
    """The log in per-channel (tick, seq) order, as int64 columns (positions = sorted order).

    Attributes:
        order: ``order[pos]`` is the log index of the command at sorted position ``pos``.
        tick, seq, cmd, ch, pc, sid, bg, bank, row, col: sorted columns (ticks, ids).
        valid: command is known, enabled and its address is in range (only these are checked
            by the timing, state and refresh rules).
        node: ``node[L]`` is the flat id of the command's node at level ``L`` (-1 where the
            command's scope does not reach ``L`` or it is not valid). Node ids nest:
            ``node[L] = node[L-1] * counts[L] + index at L``; after the hierarchy's levels,
            ``node[PARITY_LEVEL]`` is ``2 * PC node + (bank index within the PC) % 2`` for
            bank-scope commands.
    """

    order: np.ndarray
    tick: np.ndarray
    seq: np.ndarray
    cmd: np.ndarray
    ch: np.ndarray
    pc: np.ndarray
    sid: np.ndarray
    bg: np.ndarray
    bank: np.ndarray
    row: np.ndarray
    col: np.ndarray
    valid: np.ndarray
    node: list[np.ndarray]
    counts: np.ndarray
    focus: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.order.size)

    def n_nodes(self, level: int) -> int:
        """Node ids at ``level`` lie in ``[0, n_nodes(level))`` (they nest: the product of the
        counts down to it; the parity level: two per PC)."""
        if level == PARITY_LEVEL:
            return int(np.prod(self.counts[:2])) * 2
        return int(np.prod(self.counts[:level + 1]))

    @classmethod
    def build(cls, log: np.ndarray, valid: np.ndarray, counts: np.ndarray,
              focus_from: int = 0, parity: bool = False) -> LogView:
        """Sort ``log`` by (ch, tick, seq) and derive node ids (``valid`` is in log order).

        ``focus_from``: records before this log index are context only (the commands carried
        over from earlier chunks of a streamed log, :mod:`sieve.dram.checker.stream`): rules
        look them up as preceding commands and setters but report nothing of their own;
        ``focus[pos]`` marks the others. ``parity``: add the (PC, bank parity) level
        (:data:`PARITY_LEVEL`; specs with bank-parity PIM rows, :func:`has_parity`)."""
        ch = log["ch"].astype(np.int64)
        tick = log["tick"].astype(np.int64)
        seq = log["seq"].astype(np.int64)
        order = ordered_by(ch, tick, seq)
        cols = {f: log[f][order].astype(np.int64)
                for f in ("tick", "seq", "cmd", "ch", "pc", "sid", "bg", "bank", "row", "col")}
        ok = valid[order]
        scope = _SCOPE[np.where(ok, cols["cmd"], 0)]
        nodes = []
        cur = np.where(ok, cols["ch"], -1)
        fields = ("ch", "pc", "sid", "bg", "bank")
        for lv in range(len(LEVELS)):
            if lv > 0:
                cur = cur * counts[lv] + cols[fields[lv]]
            nodes.append(np.where(ok & (scope >= lv), cur, -1))
        if parity:
            bpp = int(np.prod(counts[2:]))
            nodes.append(np.where(nodes[-1] >= 0, nodes[1] * 2 + (nodes[-1] % bpp) % 2, -1))
        return cls(order=order, valid=ok, node=nodes, counts=counts, focus=order >= focus_from,
                   **cols)


class Collector:
    """Accumulates violations as arrays; message templates are interned per code.

    A violation is (code, sorted position of the following command or -1, log index of the
    preceding command or -1, channel, tick, required tick, detail ints a, b, c). ``code`` maps
    to (family, template); the template is formatted with ``a``, ``b``, ``c`` only when the
    violation is turned into a :class:`sieve.dram.checker.Violation`.
    """

    def __init__(self) -> None:
        self.kinds: list[tuple[str, str]] = []
        self._codes: dict[tuple[str, str], int] = {}
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.n_checked_pairs = 0

    def code(self, family: str, template: str) -> int:
        key = (family, template)
        if key not in self._codes:
            self._codes[key] = len(self.kinds)
            self.kinds.append(key)
        return self._codes[key]

    def add(self, code, pos, prev_index, ch, tick, required, a=-1, b=-1, c=-1) -> None:
        """Add violations (array arguments broadcast against ``pos``)."""
        pos = np.atleast_1d(np.asarray(pos, dtype=np.int64))
        if pos.size == 0:
            return
        shape = pos.shape
        cols = [np.broadcast_to(np.asarray(x, dtype=np.int64), shape)
                for x in (code, pos, prev_index, ch, tick, required, a, b, c)]
        self.parts.append(tuple(cols))

    def arrays(self) -> tuple[np.ndarray, ...]:
        """All violations as 9 int64 columns, sorted by (channel, tick, position, code)."""
        if not self.parts:
            return tuple(np.zeros(0, dtype=np.int64) for _ in range(9))
        cols = tuple(np.concatenate([p[i] for p in self.parts]) for i in range(9))
        code, pos, _, ch, tick = cols[:5]
        key = np.lexsort((code, pos, tick, ch))
        return tuple(c[key] for c in cols)
