"""Non-timing rules of :mod:`sieve.dram.checker`: address ranges, enabled commands, issue order,
column-command alignment and refresh coverage (rules 2-4 of docs/checker.md).

Each ``check_*`` function adds violations to a :class:`sieve.dram.checker.core.Collector`; none of
them knows about timing rows or bank state, and none imports the engine.
"""

from __future__ import annotations

import numpy as np

from sieve.dram.checker.core import Collector, LogView, level_counts, ordered_by
from sieve.dram.commands import (
    BUS_COL,
    COMMAND_INDEX,
    COMMANDS,
    KIND_MAC,
    KIND_OPEN,
    KIND_READ,
    KIND_READ_AP,
    KIND_WRITE,
    KIND_WRITE_AP,
    LEVEL_INDEX,
    PARITY_COMMANDS,
    PIM_COMMANDS,
)
from sieve.dram.spec import DramSpec
from sieve.errors import TraceFormatError

__all__ = [
    "REFRESH_POSTPONE_LIMIT",
    "RefreshState",
    "address_validity",
    "check_address",
    "check_alignment",
    "check_order",
    "check_refresh",
]

#: A refresh may be postponed up to 8 times (JEDEC), so the gap between consecutive refreshes
#: of a pseudo-channel (or of a bank, per-bank mode) may be at most 9 x nREFI.
REFRESH_POSTPONE_LIMIT = 9

_NAMES = [c.name for c in COMMANDS]
_ROW_KINDS = (KIND_OPEN, KIND_READ, KIND_WRITE, KIND_READ_AP, KIND_WRITE_AP, KIND_MAC)
_ADDR_FIELDS = ("ch", "pc", "sid", "bg", "bank", "row", "col")


def _needs(spec: DramSpec) -> np.ndarray:
    """``needs[cmd, field]``: whether the command's record must carry that address field."""
    needs = np.zeros((len(COMMANDS), len(_ADDR_FIELDS)), dtype=bool)
    for i, c in enumerate(COMMANDS):
        needs[i, :2] = True
        for j, lv in enumerate(("sid", "bankgroup", "bank")):
            needs[i, 2 + j] = LEVEL_INDEX[c.scope] >= LEVEL_INDEX[lv]
        needs[i, 5] = c.kind in _ROW_KINDS
        needs[i, 6] = c.bus == BUS_COL
    return needs


def address_validity(log: np.ndarray, spec: DramSpec):
    """Per command (log order): enabled flag and first out-of-range address field (-1: none).

    Returns:
        (valid, enabled, bad_field): ``valid = enabled & (bad_field < 0)``.
    """
    cmd = log["cmd"].astype(np.int64)
    enabled_cmds = np.array([c.name in spec.command_names() for c in COMMANDS])
    enabled = enabled_cmds[cmd]
    limits = _limits(spec)[cmd]
    needs = _needs(spec)[cmd]
    bad_field = np.full(cmd.shape, -1, dtype=np.int64)
    for j in range(len(_ADDR_FIELDS) - 1, -1, -1):  # reversed: the first bad field wins
        x = log[_ADDR_FIELDS[j]].astype(np.int64)
        bad = needs[:, j] & ((x < 0) | (x >= limits[:, j]))
        bad_field[bad] = j
    return enabled & (bad_field < 0), enabled, bad_field


def _limits(spec: DramSpec) -> np.ndarray:
    """``limits[cmd, field]``: one past the largest valid value of each address field. The
    bank-parity commands are addressed through bank 0 or 1 of SID 0, bank group 0."""
    one = np.concatenate([level_counts(spec), [spec.org.rows, spec.org.columns]])
    lim = np.tile(one, (len(COMMANDS), 1))
    for n in PARITY_COMMANDS:
        lim[COMMAND_INDEX[n], 2:5] = (1, 1, min(2, spec.org.banks))
    return lim


def check_address(log, spec, v: LogView, enabled, bad_field, out: Collector) -> None:
    """Report disabled commands ("command") and out-of-range address fields ("address")."""
    inv = np.empty(v.n, dtype=np.int64)
    inv[v.order] = np.arange(v.n)
    limits = _limits(spec)
    cmd = log["cmd"].astype(np.int64)
    focus = v.focus[inv]  # in log order: records this check reports on
    idx = np.flatnonzero(~enabled & focus)
    if spec.pim is None:
        why = "PIM commands need a spec with PIM units"
    else:
        why = "its PIM commands: " + ", ".join(n for n in spec.command_names()
                                                if n in PIM_COMMANDS)
    for c in np.unique(cmd[idx]):
        m = idx[cmd[idx] == c]
        text = f"{_NAMES[c]} is not enabled for DRAM spec {spec.name!r} ({why})"
        out.add(out.code("command", text), inv[m], -1, log["ch"][m], log["tick"][m],
                log["tick"][m])
    idx = np.flatnonzero(enabled & (bad_field >= 0) & focus)
    for c in np.unique(cmd[idx]):
        for j in np.unique(bad_field[idx][cmd[idx] == c]):
            m = idx[(cmd[idx] == c) & (bad_field[idx] == j)]
            f = _ADDR_FIELDS[j]
            text = f"{_NAMES[c]} {f}={{a}} is out of range [0, {limits[c, j]})"
            out.add(out.code("address", text), inv[m], -1, log["ch"][m], log["tick"][m],
                    log["tick"][m], a=log[f][m])


def check_order(log: np.ndarray, v: LogView, out: Collector) -> None:
    """Within a channel, ticks must not decrease in seq order; seq must be unique per channel.

    Raises:
        TraceFormatError: two commands of one channel share a seq (their order is undefined).
    """
    if v.n < 2:
        return
    ch = log["ch"].astype(np.int64)
    seq = log["seq"].astype(np.int64)
    tick = log["tick"].astype(np.int64)
    o = ordered_by(ch, seq)
    same_ch = ch[o][1:] == ch[o][:-1]
    dup = np.flatnonzero(same_ch & (seq[o][1:] == seq[o][:-1]))
    if dup.size:
        i, j = o[dup[0]], o[dup[0] + 1]
        raise TraceFormatError(f"command log: records {i} and {j} of channel {ch[i]} share seq "
                               f"{seq[i]} (seq must give a unique issue order per channel)")
    back = np.flatnonzero(same_ch & (tick[o][1:] < tick[o][:-1]))
    if back.size:
        inv = np.empty(v.n, dtype=np.int64)
        inv[v.order] = np.arange(v.n)
        back = back[v.focus[inv[o[back + 1]]]]
        f, p = o[back + 1], o[back]
        out.add(out.code("order", "issued after (in seq order) a command at tick {a}: the "
                         "engine went back in time"), inv[f], p, ch[f], tick[f], tick[p],
                a=tick[p])


def check_alignment(spec: DramSpec, v: LogView, out: Collector) -> None:
    """Column-bus commands must issue on a rising CK edge: tick % ticks_per_ck == 0."""
    tpc = spec.timing.ticks_per_ck
    if tpc == 1:
        return
    col = np.array([c.bus == BUS_COL for c in COMMANDS])
    known = (v.cmd >= 0) & (v.cmd < len(COMMANDS))
    bad = np.flatnonzero(known & col[np.where(known, v.cmd, 0)] & (v.tick % tpc != 0)
                         & v.focus)
    for c in np.unique(v.cmd[bad]):
        p = bad[v.cmd[bad] == c]
        text = (f"{_NAMES[c]} off a rising CK edge: column commands need tick % {tpc} == 0 "
                "(tick {a})")
        out.add(out.code("alignment", text), p, -1, v.ch[p], v.tick[p],
                (v.tick[p] // tpc + 1) * tpc, a=v.tick[p])


class RefreshState:
    """What the refresh rule carries from one chunk of a streamed log to the next: the channels
    seen, each channel's last tick so far, and which units have had a refresh (their last one
    is among the carried commands; a unit without one still counts from tick 0)."""

    def __init__(self, spec: DramSpec):
        org = spec.org
        self.per_ch = org.pseudochannels * (org.banks_per_pc if spec.refresh == "perbank"
                                            else 1)
        self.seen = np.zeros(org.total_channels, dtype=bool)
        self.end = np.full(org.total_channels, -1, dtype=np.int64)
        self.refreshed = np.zeros(org.total_channels * self.per_ch, dtype=bool)


def check_refresh(spec: DramSpec, v: LogView, out: Collector,
                  state: RefreshState | None = None, final: bool = True) -> None:
    """Every PC (all-bank mode) or bank (per-bank mode) of every channel in the log is refreshed
    at least every ``REFRESH_POSTPONE_LIMIT x nREFI`` ticks, from tick 0 to the channel's last
    command. Per-bank mode counts a REFab of the bank's PC as a refresh of the bank too.

    A streamed log is checked chunk by chunk with one ``state``: gaps ending at a refresh of
    the chunk (``v.focus``) are checked as they come, from the unit's last refresh (a carried
    command) or from tick 0; gaps to each channel's last command when ``final``.
    """
    if state is None:
        state = RefreshState(spec)
    t = spec.timing
    limit = REFRESH_POSTPONE_LIMIT * t.nREFI * t.ticks_per_ck
    per_ch = state.per_ch
    if v.n:
        mine = v.valid & v.focus
        chans_here = np.unique(v.ch[mine])
        np.maximum.at(state.end, v.ch[mine], v.tick[mine])
        state.seen[chans_here] = True
    chans = np.flatnonzero(state.seen)
    if chans.size == 0:
        return
    perbank = spec.refresh == "perbank"
    org = spec.org
    ab = np.flatnonzero(v.valid & (v.cmd == _NAMES.index("REFab")))
    if perbank:
        pb = np.flatnonzero(v.valid & (v.cmd == _NAMES.index("REFpb")))
        ref_pos = np.concatenate([np.repeat(ab, org.banks_per_pc), pb])
        ref_unit = np.concatenate([
            (v.node[1][ab][:, None] * org.banks_per_pc + np.arange(org.banks_per_pc)).ravel(),
            v.node[4][pb]])
        what = "REFpb (or REFab) to a bank"
    else:
        ref_pos, ref_unit = ab, v.node[1][ab]
        what = "REFab to a pseudo-channel"
    units = (chans[:, None] * per_ch + np.arange(per_ch)).ravel()
    # tick 0 starts the span of a unit without a refresh before this chunk (its last one is
    # a carried command otherwise); the channel's last command ends it (final chunk only)
    fresh = units[~state.refreshed[units]]
    ends = units if final else np.zeros(0, dtype=np.int64)
    u = np.concatenate([fresh, ref_unit, ends])
    tk = np.concatenate([np.zeros(fresh.size, np.int64), v.tick[ref_pos],
                         state.end[ends // per_ch]])
    kd = np.concatenate([np.zeros(fresh.size, np.int64), np.ones(ref_pos.size, np.int64),
                         np.full(ends.size, 2)])
    pos = np.concatenate([np.full(fresh.size, -1), ref_pos, np.full(ends.size, -1)])
    state.refreshed[ref_unit[v.focus[ref_pos]]] = True
    o = np.lexsort((kd, tk, u))
    u, tk, kd, pos = u[o], tk[o], kd[o], pos[o]
    gap = tk[1:] - tk[:-1]
    # a gap is this chunk's to report when it ends at one of its refreshes or at the end
    ends_here = np.where(kd[1:] == 1, v.focus[np.maximum(pos[1:], 0)], kd[1:] == 2)
    bad = np.flatnonzero((u[1:] == u[:-1]) & (gap > limit) & ends_here)
    if bad.size == 0:
        return
    f, p = bad + 1, bad
    prev_idx = np.where(pos[p] >= 0, v.order[np.maximum(pos[p], 0)], -1)
    text = (f"{{a}} ticks without a {what} (unit {{b}}); the limit is "
            f"{REFRESH_POSTPONE_LIMIT} x nREFI = {limit} ticks")
    ch_of = u[f] // per_ch
    out.add(out.code("refresh", text), pos[f], prev_idx, ch_of, tk[f], tk[p] + limit,
            a=gap[bad], b=u[f] % per_ch)
