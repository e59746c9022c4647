"""Streamed checking: a command log checked chunk by chunk in bounded memory (docs/checker.md).

The rules of the checker look back from each command to a bounded part of the past: the
``w``-th most recent command of a type at a node (timing rows, ``w`` <= the longest window),
the last setter of a bank, SID or PC (state), the last command of a channel in issue order
(order), the last refresh of a unit (refresh). So a log whose channels each come in issue
order - every log the engine writes, every Ramulator trace - can be checked a chunk at a time:
each chunk is checked together with the commands carried over from the ones before it (for
every level, node and command type its last ``w`` commands, and the last command of each
channel), which the rules consult but report nothing of; the refresh rule carries which units
have had a refresh and each channel's last tick. The verdicts are those of the whole log, bit
for bit (tests/test_checker_stream.py); memory is the chunk's plus the carry's, whatever the
log's length.

A log that does not come in issue order per channel (a chunk with a command that sorts before
one already checked), and a spec with a PIM mode protocol (whose replay is not carried), are
checked whole instead. This module never imports the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

from sieve.dram.checker.core import (
    Collector,
    LogView,
    has_parity,
    level_counts,
    ordered_by,
    stable_order,
)
from sieve.dram.checker.modes import check_modes
from sieve.dram.checker.rules import (
    RefreshState,
    address_validity,
    check_address,
    check_alignment,
    check_order,
    check_refresh,
)
from sieve.dram.checker.state import check_state
from sieve.dram.checker.timing import _timing, check_timing
from sieve.dram.commands import LEVEL_INDEX, LEVELS
from sieve.dram.log import LOG_DTYPE
from sieve.dram.spec import DramSpec

__all__ = ["CHUNK", "NotStreamable", "StreamResult", "check_chunks", "run_rules", "streamable"]

#: Commands per chunk: about 20 MB of log columns, a few times that in the rules' arrays.
CHUNK = 1 << 17


class NotStreamable(Exception):
    """The log cannot be checked a chunk at a time (it is checked whole instead)."""


def streamable(spec: DramSpec, check_modes: bool) -> bool:
    """Whether the rules that apply to ``spec`` can be carried from chunk to chunk."""
    return not (check_modes and spec.pim is not None and spec.pim.modes == "hbm-pim")


class StreamResult:
    """The violations of a streamed check as columns in global log indices, with the kinds'
    (family, template) table, before they become a report."""

    def __init__(self) -> None:
        self.kinds: list[tuple[str, str]] = []
        self._codes: dict[tuple[str, str], int] = {}
        self.parts: list[tuple[np.ndarray, ...]] = []
        self.n_checked_pairs = 0
        self.n_commands = 0

    def absorb(self, out: Collector, v: LogView, gidx: np.ndarray) -> None:
        """Add a chunk's violations: sorted positions and combined-log indices become global
        log indices; codes are re-interned in this table."""
        self.n_checked_pairs += out.n_checked_pairs
        if not out.parts:
            return
        remap = np.array([self._code(k) for k in out.kinds], dtype=np.int64)
        code, pos, prev, ch, tick, req, a, b, c = out.arrays()
        has = pos >= 0
        pc = np.maximum(pos, 0)
        index = np.where(has, gidx[v.order[pc]], -1)
        seq = np.where(has, v.seq[pc], -1)
        prev_g = np.where(prev >= 0, gidx[np.maximum(prev, 0)], -1)
        self.parts.append((remap[code], index, prev_g, ch, tick, req, a, b, c, seq))

    def _code(self, kind: tuple[str, str]) -> int:
        if kind not in self._codes:
            self._codes[kind] = len(self.kinds)
            self.kinds.append(kind)
        return self._codes[kind]

    def arrays(self) -> tuple[np.ndarray, ...]:
        """(code, index, prev, ch, tick, required, a, b, c, seq) of every violation absorbed,
        chunk by chunk (the report sorts them)."""
        if not self.parts:
            return tuple(np.zeros(0, dtype=np.int64) for _ in range(10))
        return tuple(np.concatenate([p[i] for p in self.parts]) for i in range(10))


def run_rules(log: np.ndarray, v: LogView, spec: DramSpec, out: Collector, enabled,
              bad_field, *, modes: bool, refresh: bool, refresh_state=None,
              final: bool = True) -> None:
    """Every rule, in the report's order, over ``log`` and its view (whole or one chunk with
    its carry; a streamed log passes its refresh state and ``final`` on its last chunk)."""
    check_order(log, v, out)
    check_address(log, spec, v, enabled, bad_field, out)
    check_alignment(spec, v, out)
    check_timing(spec, v, out)
    check_state(v, spec, out)
    if modes:
        check_modes(v, spec, out)
    if refresh:
        check_refresh(spec, v, out, refresh_state, final=final)


def _carry(log: np.ndarray, gidx: np.ndarray, v: LogView, windows: list[int]
           ) -> tuple[np.ndarray, np.ndarray]:
    """The commands later chunks may look back to: per level, node and command type the last
    ``windows[level]`` ones in (tick, seq) order (a compiled reverse scan,
    ``_timing.mark_last``; :func:`_carry_timing_reference` is the numpy version), and per
    channel the last one in seq order. The checker's parity level (after the hierarchy's)
    keeps the bank level's window."""
    windows = _with_parity(windows, v)
    keep = np.zeros(v.n, dtype=np.int8)
    n_cmd = int(v.cmd.max()) + 1 if v.n else 1
    cmd = np.ascontiguousarray(v.cmd, dtype=np.int64)
    for lv in range(len(v.node)):
        _timing.mark_last(np.ascontiguousarray(v.node[lv], dtype=np.int64), cmd,
                          v.n_nodes(lv), n_cmd, int(windows[lv]), keep)
    return _with_channel_tails(log, gidx, v, keep.view(bool))


def _with_parity(windows: list[int], v: LogView) -> list[int]:
    """Per-level windows for every level of ``v`` (its parity level: the bank level's)."""
    return list(windows) + [windows[LEVEL_INDEX["bank"]]] * (len(v.node) - len(windows))


def _with_channel_tails(log, gidx, v: LogView, keep: np.ndarray):
    """``keep`` plus the last command of each channel in seq order (any command: the order
    rule); the kept records in file order."""
    ch, seq = v.ch, v.seq
    o = ordered_by(ch, seq)
    tail = np.append(ch[o][1:] != ch[o][:-1], True)
    keep[o[tail]] = True
    pos = np.flatnonzero(keep)
    idx = v.order[pos]
    idx.sort()  # keep the file order of the carried commands
    return log[idx], gidx[idx]


def _carry_timing_reference(log: np.ndarray, gidx: np.ndarray, v: LogView,
                            windows: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_carry` with the per-level marks in numpy (the reference of the tests)."""
    windows = _with_parity(windows, v)
    keep = np.zeros(v.n, dtype=bool)
    n_cmd = int(v.cmd.max()) + 1 if v.n else 1
    for lv in range(len(v.node)):
        window = windows[lv]
        node = v.node[lv]
        sel = np.flatnonzero(node >= 0)
        if sel.size == 0:
            continue
        key = node[sel] * n_cmd + v.cmd[sel]
        o = stable_order(key)  # by key, then sorted position
        ks = key[o]
        last = np.ones(ks.size, dtype=bool)  # rank from the end of its key group < window
        if ks.size > 1:
            brk = np.flatnonzero(ks[1:] != ks[:-1]) + 1
            ends = np.append(brk, ks.size)
            group_end = np.repeat(ends, np.diff(np.append(0, ends)))
            last = (group_end - np.arange(ks.size)) <= window
        keep[sel[o[last]]] = True
    return _with_channel_tails(log, gidx, v, keep)


def check_chunks(chunks: Iterable[np.ndarray], spec: DramSpec, *,
                 check_refresh_rule: bool = True) -> StreamResult:
    """Check a log given as consecutive chunks of records (file order; each chunk validated,
    :data:`LOG_DTYPE`). Raises :class:`NotStreamable` when a chunk holds a command that
    sorts before one of an earlier chunk of its channel, or whose seq is not above theirs."""
    counts = level_counts(spec)
    parity = has_parity(spec)
    # per level the longest window of its rows (at least 1: the last setter of a bank, SID or
    # PC, the last refresh of a unit)
    windows = [1] * len(LEVELS)
    for r in spec.resolved_constraints():
        windows[r.level] = max(windows[r.level], r.window)
    res = StreamResult()
    carry_log = np.zeros(0, dtype=LOG_DTYPE)
    carry_g = np.zeros(0, dtype=np.int64)
    n_ch = spec.org.total_channels
    last_tick = np.full(n_ch, -1, dtype=np.int64)
    last_seq = np.full(n_ch, np.iinfo(np.int64).min, dtype=np.int64)
    refresh = RefreshState(spec)
    base = 0
    for chunk in chunks:
        n = len(chunk)
        if n == 0:
            continue
        ch = chunk["ch"].astype(np.int64)
        if ch.min() < 0 or ch.max() >= n_ch:
            raise NotStreamable("channel outside the spec")  # reported by the whole check
        tick = chunk["tick"].astype(np.int64)
        seq = chunk["seq"].astype(np.int64)
        # every command of the chunk after the channel's earlier ones, in time and in seq
        first_tick = np.full(n_ch, np.iinfo(np.int64).max, dtype=np.int64)
        first_seq = np.full(n_ch, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first_tick, ch, tick)
        np.minimum.at(first_seq, ch, seq)
        if np.any(first_tick < last_tick) or np.any(first_seq <= last_seq):
            raise NotStreamable("a channel's commands are not in issue order across chunks")
        np.maximum.at(last_tick, ch, tick)
        np.maximum.at(last_seq, ch, seq)
        log = np.concatenate([carry_log, chunk]) if carry_log.size else chunk
        gidx = np.concatenate([carry_g, base + np.arange(n, dtype=np.int64)])
        valid, enabled, bad_field = address_validity(log, spec)
        v = LogView.build(log, valid, counts, focus_from=carry_log.size, parity=parity)
        out = Collector()
        run_rules(log, v, spec, out, enabled, bad_field, modes=False,
                  refresh=check_refresh_rule, refresh_state=refresh, final=False)
        res.absorb(out, v, gidx)
        carry_log, carry_g = _carry(log, gidx, v, windows)
        base += n
        res.n_commands += n
    if check_refresh_rule and res.n_commands:
        # the gaps from each unit's last refresh (carried) to its channel's last command
        valid, _, _ = address_validity(carry_log, spec)
        v = LogView.build(carry_log, valid, counts, focus_from=carry_log.size, parity=parity)
        out = Collector()
        check_refresh(spec, v, out, refresh, final=True)
        res.absorb(out, v, carry_g)
    return res


def array_chunks(log: np.ndarray, chunk: int = CHUNK) -> Iterator[np.ndarray]:
    """An in-memory log as consecutive chunks (views)."""
    for i in range(0, len(log), chunk):
        yield log[i:i + chunk]
