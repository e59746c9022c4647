"""Timing rows for :mod:`sieve.dram.checker` (rule 1 of docs/checker.md).

:func:`check_timing` runs one compiled pass per level (``_timing.pyx``: for every command, the
``w``-th most recent preceding command of each row's type at its node, from a ring of the last
``w`` per node and type). :func:`check_timing_reference` is the same rule in numpy, the
reference the tests hold the compiled pass to:

For a row (level L, preceding p, following f, latency, window w, sibling s) and every command F
of type f, the preceding commands P of type p at F's node at level L (or, for a sibling row, at
each sibling node: same parent, other index) are looked up with one ``searchsorted`` over keys
``node * (n + 1) + position``, where positions are the per-channel (tick, seq) order; the w-th
most recent P before F is then ``rank - w``. F is legal iff ``tick(F) >= tick(P_w) + latency``.
This equals the engine's ``ready[node, f] = max(ready, tick(P_w) + latency)`` bookkeeping
because ``tick(P_w)`` never decreases as more P issue.

Written independently of the engine's hot loop; the only shared input is the spec.
"""

from __future__ import annotations

import re
from dataclasses import MISSING, fields, replace

import numpy as np

from sieve.dram.checker.core import PARITY_LEVEL, Collector, LogView, stable_order
from sieve.dram.commands import COMMAND_INDEX, COMMANDS, LEVEL_INDEX, LEVELS, PARITY_COMMANDS
from sieve.dram.constraints import ResolvedConstraint
from sieve.dram.spec import DramSpec, DramTiming

try:
    from sieve.dram.checker import _timing
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    from sieve.errors import NotBuiltError

    raise NotBuiltError.of("checker timing pass", "sieve.dram.checker._timing", exc) from None

__all__ = ["check_timing", "check_timing_reference", "constraint_family", "constraint_text"]

_SCOPE = [LEVEL_INDEX[c.scope] for c in COMMANDS]
#: Latency terms that only shift a constraint (command-to-data latencies, burst length); the
#: family is named after the other terms when there are any.
_GENERIC = {"nCL", "nCWL", "nBL"}
#: Timing fields that exist only for PIM specs (those with a default in DramTiming).
_PIM_TIMINGS = {f.name for f in fields(DramTiming) if f.default is not MISSING}
_QUALIFIED = re.compile(r"^(RCD|CCD|RRD|WTR|RFC)(RD|WR|S|L|R|pb)$")
_PARITY = {COMMAND_INDEX[n] for n in PARITY_COMMANDS}
_BANK = LEVEL_INDEX["bank"]
#: Level names for messages (the hierarchy's, then the checker's parity level).
_LEVEL_NAMES = (*LEVELS, "bank parity")


def constraint_family(source: str) -> str:
    """Short family label of a timing row, derived from its source (latency expression).

    Rules: command-bus occupancy rows are "bus"; a row using a PIM-only timing (nCCDAB,
    nMACRD) is "PIM"; otherwise the first term that is not a generic latency (nCL, nCWL, nBL)
    names it, skipping a trailing nRP when another term is present (auto-precharge rows), with
    JEDEC qualifiers dropped: ``nRCDRD -> tRCD``, ``nCCDR -> tCCD``, ``nRFCpb -> tRFC``,
    ``nCWL + nBL + nWTRS -> tWTR``, ``nRTP + nRP -> tRTP``, ``nBL -> tBL``.

    Args:
        source: ``ResolvedConstraint.source``.

    Returns:
        The family label, e.g. ``"tRCD"``.
    """
    if "command bus" in source:
        return "bus"
    names = re.findall(r"\bn[A-Za-z]+\b", source)
    if not names:
        return source
    if any(n in _PIM_TIMINGS for n in names):
        return "PIM"
    specific = [n for n in names if n not in _GENERIC]
    if len(specific) > 1:
        specific = [n for n in specific if n != "nRP"] or specific
    base = (specific or names)[0][1:]
    m = _QUALIFIED.match(base)
    return "t" + (m.group(1) if m else base)


def constraint_text(r: ResolvedConstraint) -> str:
    """Human-readable row, e.g. ``"bank ACT->RD nRCDRD (63 ticks)"``."""
    extra = ""
    if r.window > 1:
        extra += f", window {r.window}"
    if r.sibling:
        extra += f", other {LEVELS[r.level]} of the same {LEVELS[r.level - 1]}"
    return (f"{_LEVEL_NAMES[r.level]} {COMMANDS[r.preceding].name}->"
            f"{COMMANDS[r.following].name} "
            f"{r.source} ({r.latency} ticks{extra})")


def _applicable_rows(spec: DramSpec) -> list[ResolvedConstraint]:
    """Resolved rows whose level both commands reach, without exact duplicates. A bank-level
    row with a bank-parity command on either side holds at every bank of that command's
    parity: it is checked at the parity level (same PC and parity) instead."""
    seen, rows = set(), []
    for r in spec.resolved_constraints():
        if _SCOPE[r.preceding] < r.level or _SCOPE[r.following] < r.level:
            continue
        if r.level == _BANK and (r.preceding in _PARITY or r.following in _PARITY):
            r = replace(r, level=PARITY_LEVEL)
        key = (r.level, r.preceding, r.following, r.latency, r.window, r.sibling, r.source)
        if key not in seen:
            seen.add(key)
            rows.append(r)
    return rows


def _level_rows(spec: DramSpec) -> dict[int, list[ResolvedConstraint]]:
    """The applicable rows by level, each level's in the order the checks report them (by
    preceding command as first met, then as resolved)."""
    by_level: dict[int, dict[int, list[ResolvedConstraint]]] = {}
    for r in _applicable_rows(spec):
        by_level.setdefault(r.level, {}).setdefault(r.preceding, []).append(r)
    return {lv: [r for rows in by_p.values() for r in rows]
            for lv, by_p in sorted(by_level.items())}


def check_timing(spec: DramSpec, v: LogView, out: Collector) -> None:
    """Check every timing row against the log; add violations (family per row) to ``out``.

    One compiled pass per level (:func:`sieve.dram.checker._timing.check_level`: a ring of the
    last ``window`` preceding commands per node and type); :func:`check_timing_reference` is
    the numpy version (module docstring) the tests hold it to, violation for violation."""
    n = v.n
    if n == 0:
        return
    n_cmd = len(COMMANDS)
    focus = np.ascontiguousarray(v.focus, dtype=bool).view(np.int8)
    cmd = np.ascontiguousarray(v.cmd, dtype=np.int64)
    tick = np.ascontiguousarray(v.tick, dtype=np.int64)
    for lv, rows in _level_rows(spec).items():
        order = sorted(range(len(rows)), key=lambda k: rows[k].following)  # stable
        srt = [rows[k] for k in order]
        f_start = np.searchsorted(np.array([r.following for r in srt], dtype=np.int64),
                                  np.arange(n_cmd + 1)).astype(np.int64)
        p_slot = np.full(n_cmd, -1, dtype=np.int64)
        for k, p in enumerate(sorted({r.preceding for r in srt})):
            p_slot[p] = k
        checked = np.zeros(len(srt), dtype=np.int64)
        got = _timing.check_level(
            np.ascontiguousarray(v.node[lv], dtype=np.int64), cmd, tick, focus, f_start,
            np.array([r.preceding for r in srt], dtype=np.int64),
            np.array([r.latency for r in srt], dtype=np.int64),
            np.array([r.window for r in srt], dtype=np.int64),
            np.array([bool(r.sibling) for r in srt], dtype=np.int8),
            p_slot, v.n_nodes(lv), 2 if lv == PARITY_LEVEL else int(v.counts[lv]), checked)
        out.n_checked_pairs += int(checked.sum())
        row, pos, prev, req = got
        if row.size == 0:
            continue
        row = np.array(order, dtype=np.int64)[row]  # sorted row -> report order
        by_row = np.argsort(row, kind="stable")
        cuts = np.searchsorted(row[by_row], np.arange(len(rows) + 1))
        for k, r in enumerate(rows):
            sel = by_row[cuts[k]:cuts[k + 1]]
            if sel.size:
                f = pos[sel]
                code = out.code(constraint_family(r.source), constraint_text(r))
                out.add(code, f, v.order[prev[sel]], v.ch[f], v.tick[f], req[sel])


def check_timing_reference(spec: DramSpec, v: LogView, out: Collector) -> None:
    """:func:`check_timing` in numpy, one ``searchsorted`` per row (module docstring)."""
    n = v.n
    if n == 0:
        return
    stride = n + 1
    by_level: dict[int, dict[int, list[ResolvedConstraint]]] = {}
    for r in _applicable_rows(spec):
        by_level.setdefault(r.level, {}).setdefault(r.preceding, []).append(r)
    for lv, by_p in sorted(by_level.items()):
        node = v.node[lv]
        sel = np.flatnonzero(node >= 0)
        perm = sel[stable_order(node[sel])]  # by (node, position)
        # then grouped by command, each group still in (node, position) order: one command's
        # commands are a slice
        perm = perm[stable_order(v.cmd[perm])]
        cmd_perm = v.cmd[perm]
        cuts = np.searchsorted(cmd_perm, np.arange(len(COMMANDS) + 1))
        keys = node[perm] * stride + perm  # increasing within each command's slice
        f_cache: dict[int, np.ndarray] = {}
        for p, rows in by_p.items():
            a, b = cuts[p], cuts[p + 1]
            if a == b:
                continue
            key_p, pos_p = keys[a:b], perm[a:b]
            for r in rows:
                if r.following not in f_cache:  # the commands this check reports on
                    pf = perm[cuts[r.following]:cuts[r.following + 1]]
                    f_cache[r.following] = pf[v.focus[pf]]
                pos_f = f_cache[r.following]
                if pos_f.size == 0:
                    continue
                node_f = node[pos_f]
                if r.sibling:
                    fan = int(v.counts[lv])
                    targets = [(node_f // fan) * fan + (node_f % fan + j) % fan
                               for j in range(1, fan)]
                else:
                    targets = [node_f]
                for target in targets:
                    _check_row(r, target, pos_f, key_p, pos_p, stride, v, out)


def _check_row(r, target, pos_f, key_p, pos_p, stride, v: LogView, out: Collector) -> None:
    """One row against P at ``target`` nodes (F's own node, or one sibling per F)."""
    j = np.searchsorted(key_p, target * stride + pos_f, side="left") - r.window
    jc = np.maximum(j, 0)
    found = (j >= 0) & (key_p[jc] // stride == target)
    out.n_checked_pairs += int(found.sum())
    prev = pos_p[jc]
    required = v.tick[prev] + r.latency
    bad = np.flatnonzero(found & (v.tick[pos_f] < required))
    if bad.size:
        f, pp = pos_f[bad], prev[bad]
        code = out.code(constraint_family(r.source), constraint_text(r))
        out.add(code, f, v.order[pp], v.ch[f], v.tick[f], required[bad])
