"""A deliberately naive, per-command reference model of the checker's semantics (tests only).

It replays a command sequence one command at a time with dictionaries (history per node and
command, open row per bank and buffer), exactly as docs/checker.md states the rules, so the
vectorised :mod:`sieve.dram.checker` can be compared with it. It also schedules commands greedily at
their earliest legal tick, which is how the tests build legal logs.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from sieve.dram.checker import LOG_DTYPE
from sieve.dram.commands import (
    BUS_COL,
    COMMAND_INDEX,
    COMMANDS,
    KIND_CLOSE,
    KIND_MAC,
    KIND_OPEN,
    KIND_READ_AP,
    KIND_REFRESH,
    KIND_WRITE_AP,
    LEVEL_INDEX,
    PARITY_COMMANDS,
)
from sieve.dram.spec import DramSpec

SCOPE = {c.name: LEVEL_INDEX[c.scope] for c in COMMANDS}
PARITY = set(PARITY_COMMANDS)  # act on every bank of the parity of the bank they address


def family(source: str) -> str:
    from sieve.dram.checker import constraint_family

    return constraint_family(source)


class RefModel:
    """Per-channel-agnostic reference: addresses are tuples (ch, pc[, sid, bg, bank])."""

    def __init__(self, spec: DramSpec):
        self.spec = spec
        self.tpc = spec.timing.ticks_per_ck
        self.rows = [r for r in spec.resolved_constraints()
                     if SCOPE[COMMANDS[r.preceding].name] >= r.level
                     and SCOPE[COMMANDS[r.following].name] >= r.level]
        self.by_f = defaultdict(list)
        for r in self.rows:
            self.by_f[COMMANDS[r.following].name].append(r)
        o = spec.org
        self.counts = (o.total_channels, o.pseudochannels, o.sids, o.bankgroups, o.banks)
        self.dual = spec.pim is not None and spec.pim.dual_row_buffer
        self.hist = defaultdict(list)  # (level, node tuple, cmd name) -> [(tick, index)]
        self.open = {}  # (bank tuple, buffer) -> (row, setter index)
        self.last_tick = {}

    # ---- helpers ----------------------------------------------------------------------------
    def buffer(self, name: str) -> int:
        return COMMANDS[COMMAND_INDEX[name]].buffer if self.dual else 0

    def parity(self, addr) -> int:
        """Bit 0 of a bank's index within its PC."""
        o = self.spec.org
        return ((addr[2] * o.bankgroups + addr[3]) * o.banks + addr[4]) % 2

    def banks_of(self, addr, name=None):
        o = self.spec.org
        every = [tuple(addr[:2]) + (s, g, b) for s in range(o.sids)
                 for g in range(o.bankgroups) for b in range(o.banks)]
        if name in PARITY:
            return [bk for bk in every if self.parity(bk) == self.parity(addr)]
        if len(addr) == 5:
            return [tuple(addr)]
        return every

    def _prev(self, r, addr):
        """(tick, index) of the window-th most recent P per relevant node."""
        lv = r.level
        p = COMMANDS[r.preceding].name
        if lv == 4 and (p in PARITY or COMMANDS[r.following].name in PARITY):
            # a bank row with a parity command holds at every bank of its parity
            h = self.hist[("parity", tuple(addr[:2]) + (self.parity(addr),), p)]
            return [h[-r.window]] if len(h) >= r.window else []
        node = tuple(addr[:lv + 1])
        if r.sibling:
            nodes = [node[:-1] + (j,) for j in range(self.counts[lv]) if j != node[-1]]
        else:
            nodes = [node]
        out = []
        for m in nodes:
            h = self.hist[(lv, m, p)]
            if len(h) >= r.window:
                out.append(h[-r.window])
        return out

    # ---- timing -----------------------------------------------------------------------------
    def earliest(self, name: str, addr) -> int:
        """Earliest legal tick from timing rows and alignment alone."""
        t = 0
        for r in self.by_f[name]:
            for tick, _ in self._prev(r, addr):
                t = max(t, tick + r.latency)
        if COMMANDS[COMMAND_INDEX[name]].bus == BUS_COL:
            t = -(-t // self.tpc) * self.tpc
        return t

    def timing_violations(self, name, addr, tick):
        """[(family, prev index, required tick, row)] for rows violated at ``tick``."""
        out = []
        for r in self.by_f[name]:
            for t, idx in self._prev(r, addr):
                if tick < t + r.latency:
                    out.append((family(r.source), idx, t + r.latency, r))
        return out

    # ---- state ------------------------------------------------------------------------------
    def state_errors(self, name, addr, row) -> list[int]:
        """Setter indices (or -1) of the banks whose state makes the command illegal."""
        c = COMMANDS[COMMAND_INDEX[name]]
        bufs = [0, 1] if (c.kind == KIND_REFRESH and self.dual) else [self.buffer(name)]
        errs = []
        for bank in self.banks_of(addr, name):
            for b in bufs:
                cur, setter = self.open.get((bank, b), (None, -1))
                if c.kind in (KIND_OPEN, KIND_REFRESH):
                    bad = cur is not None
                elif c.kind in (KIND_CLOSE,) or c.kind == 0:
                    bad = False
                else:  # read/write (+AP) and MAC need the row open
                    bad = cur != row
                if bad:
                    errs.append(setter)
                    break
            if errs and (len(addr) == 2 or name in PARITY):
                break
        return errs

    def apply(self, name, addr, row, tick, index):
        """Record the command in the history and update bank state."""
        for lv in range(SCOPE[name] + 1):
            self.hist[(lv, tuple(addr[:lv + 1]), name)].append((tick, index))
        if SCOPE[name] == 4:
            self.hist[("parity", tuple(addr[:2]) + (self.parity(addr),), name)].append(
                (tick, index))
        c = COMMANDS[COMMAND_INDEX[name]]
        b = self.buffer(name)
        for bank in self.banks_of(addr, name):
            if c.kind == KIND_OPEN:
                self.open[(bank, b)] = (row, index)
            elif c.kind in (KIND_CLOSE, KIND_READ_AP, KIND_WRITE_AP):
                self.open.pop((bank, b), None)
                self.open[(bank, b)] = (None, index)
        self.last_tick[addr[0]] = tick

    def is_open(self, bank, buffer=0):
        return self.open.get((tuple(bank), buffer), (None, -1))[0]


def ref_check(log: np.ndarray, spec: DramSpec):
    """Replay a log in (ch, tick, seq) order; returns a set of (family, index, prev, required)
    for timing violations and (\"state\", index) entries for state violations."""
    model = RefModel(spec)
    out = set()
    order = np.lexsort((log["seq"], log["tick"], log["ch"]))
    for i in order:
        rec = log[i]
        name = COMMANDS[rec["cmd"]].name
        addr = (int(rec["ch"]), int(rec["pc"]))
        if SCOPE[name] == 4:
            addr += (int(rec["sid"]), int(rec["bg"]), int(rec["bank"]))
        tick = int(rec["tick"])
        for fam, prev, req, _ in model.timing_violations(name, addr, tick):
            out.add((fam, int(i), int(prev), int(req)))
        if model.state_errors(name, addr, int(rec["row"])):
            out.add(("state", int(i)))
        model.apply(name, addr, int(rec["row"]), tick, int(i))
    return out


def report_set(report):
    """The checker's report in the same form as :func:`ref_check` (timing + state only)."""
    out = set()
    for v in report.violations:
        if v.family == "state":
            out.add(("state", v.index))
        elif v.family not in ("alignment", "refresh", "address", "command", "order"):
            out.add((v.family, v.index, v.prev_index, v.required_tick))
    return out


class Builder:
    """Greedy scheduler: appends commands at their earliest legal tick (>= a floor)."""

    def __init__(self, spec: DramSpec):
        self.spec = spec
        self.model = RefModel(spec)
        self.records = []
        self.now = 0

    def add(self, name, addr, row=-1, col=-1, at=None, floor=None):
        """Schedule ``name`` at ``addr``; returns its tick. ``at`` forces the tick."""
        addr = tuple(addr)
        if at is None:
            at = max(self.model.earliest(name, addr), self.now if floor is None else floor)
            if COMMANDS[COMMAND_INDEX[name]].bus == BUS_COL:
                tpc = self.spec.timing.ticks_per_ck
                at = -(-at // tpc) * tpc
        idx = len(self.records)
        full = addr + (-1,) * (5 - len(addr))
        if COMMANDS[COMMAND_INDEX[name]].bus == BUS_COL and col < 0:
            col = 0
        self.records.append((at, idx, COMMAND_INDEX[name], *full, row, col))
        self.model.apply(name, addr, row, at, idx)
        self.now = max(self.now, at)
        return at

    def log(self) -> np.ndarray:
        return np.array(self.records, dtype=LOG_DTYPE)


def kind_needs_open(name: str) -> bool:
    return COMMANDS[COMMAND_INDEX[name]].kind not in (KIND_OPEN, KIND_CLOSE, KIND_REFRESH, 0)


# ---- legal-log generators ------------------------------------------------------------------
def prepare(b: Builder, name: str, addr, row: int, floor=None) -> None:
    """Append the state-fixing commands that make ``name`` at ``addr`` legal now."""
    m = b.model
    c = COMMANDS[COMMAND_INDEX[name]]
    pc = tuple(addr[:2])
    dual = m.dual

    def close_bank(bank, buffers):
        for buf in buffers:
            if m.is_open(bank, buf) is not None:
                b.add("PRE" if buf == 0 else "PREAB", bank if buf == 0 else pc, floor=floor)

    if name in PARITY:  # every bank of the parity closed, or open at row for MACPB
        banks = m.banks_of(addr, name)
        if c.kind == KIND_MAC and all(m.is_open(bk, 0) == row for bk in banks):
            return
        for bk in banks:
            close_bank(bk, [0])
        if c.kind == KIND_MAC:
            b.add("ACTPB", addr, row=row, floor=floor)
    elif c.kind == KIND_OPEN and len(addr) == 5:
        close_bank(addr, [0])
    elif c.kind == KIND_REFRESH and len(addr) == 5:
        close_bank(addr, [0, 1] if dual else [0])
    elif c.kind in (KIND_OPEN, KIND_REFRESH):  # ACTAB / REFab: every bank closed
        bufs = [m.buffer(name)] if c.kind == KIND_OPEN else ([0, 1] if dual else [0])
        for buf in bufs:
            if any(m.is_open(bk, buf) is not None for bk in m.banks_of(pc)):
                b.add("PREA" if buf == 0 else "PREAB", pc, floor=floor)
    elif c.kind == KIND_MAC:
        buf = m.buffer(name)
        if any(m.is_open(bk, buf) != row for bk in m.banks_of(pc)):
            if any(m.is_open(bk, buf) is not None for bk in m.banks_of(pc)):
                b.add("PREAB", pc, floor=floor)
                if not dual and any(m.is_open(bk, 0) is not None for bk in m.banks_of(pc)):
                    b.add("PREA", pc, floor=floor)
            b.add("ACTAB", pc, row=row, floor=floor)
    elif c.kind not in (KIND_CLOSE, 0):  # column access: its bank open at row
        cur = m.is_open(addr, m.buffer(name))
        if cur != row:
            if cur is not None:
                b.add("PRE", addr, floor=floor)
            b.add("ACT", addr, row=row, floor=floor)


def random_legal_log(spec: DramSpec, n: int, rng: np.random.Generator, channels=(0, 1),
                     close_at_end=False) -> np.ndarray:
    """A dense legal log of about ``n`` commands: random bank traffic, PIM bursts, refresh."""
    b = Builder(spec)
    o = spec.org
    t = spec.timing
    refi = t.nREFI * t.ticks_per_ck
    pim = spec.pim is not None
    last_ref = {}
    banks = [(s, g, k) for s in range(o.sids) for g in range(o.bankgroups) for k in range(o.banks)]
    while len(b.records) < n:
        ch = int(rng.choice(channels))
        pc = int(rng.integers(o.pseudochannels))
        key = (ch, pc)
        if b.now - last_ref.get(key, 0) > refi:
            prepare(b, "REFab", key, -1)
            b.add("REFab", key)
            last_ref[key] = b.now
            continue
        if pim and spec.pim.bank_parity and rng.random() < 0.15:
            row = int(rng.integers(4))
            par = key + (0, 0, int(rng.integers(2)))  # bank 0: even banks, 1: odd
            prepare(b, "MACPB", par, row)
            for _ in range(int(rng.integers(1, 6))):
                b.add("MACPB", par, row=row, col=int(rng.integers(o.columns)))
            b.add("RDRES", key, col=0)
            if rng.random() < 0.5:
                b.add("PREPB", par)
            continue
        if pim and not spec.pim.bank_parity and rng.random() < 0.15:
            row = int(rng.integers(4))
            prepare(b, "MACAB", key, row)
            for _ in range(int(rng.integers(1, 3))):
                b.add("GWRITE", key, col=int(rng.integers(o.columns)))
            for _ in range(int(rng.integers(1, 6))):
                b.add("MACAB", key, row=row, col=int(rng.integers(o.columns)))
            b.add("RDRES", key, col=0)
            if rng.random() < 0.5:
                b.add("PREAB", key)
            continue
        addr = key + banks[int(rng.integers(len(banks)))]
        u = rng.random()
        if (u < 0.05 and spec.refresh == "perbank") or u < 0.02:
            prepare(b, "REFpb", addr, -1)
            b.add("REFpb", addr)
        elif u < 0.12:
            b.add("PRE", addr)
        else:
            name = ["RD", "WR", "RDA", "WRA"][int(rng.choice(4, p=[0.5, 0.3, 0.12, 0.08]))]
            cur = b.model.is_open(addr, 0)
            row = cur if (cur is not None and rng.random() < 0.7) else int(rng.integers(4))
            prepare(b, name, addr, row)
            b.add(name, addr, row=row, col=int(rng.integers(o.columns)))
    if close_at_end:
        for ch in channels:
            for pc in range(o.pseudochannels):
                b.add("PREA", (ch, pc))
                if pim and b.model.dual:
                    b.add("PREAB", (ch, pc))
    return b.log()
