"""Independent timing checker for DRAM/PIM command logs.

Reads a command log (one record per issued command, :data:`LOG_DTYPE`) and a
:class:`sieve.dram.spec.DramSpec`, and reports every violated constraint: timing rows (per level,
window and sibling), column commands off a rising CK edge, bank row-buffer state, address
ranges and disabled commands, issue order, and refresh coverage. The exact semantics are in
docs/checker.md.

It is pure Python/numpy and written independently of the engine's hot loop: it must never
import ``sieve.dram.engine`` (or a module that uses it) or ``sieve._dram`` (both sides share
only the record format, :data:`sieve.dram.log.LOG_DTYPE`).
The rules live in ``sieve.dram.checker.timing``, ``sieve.dram.checker.state`` and
``sieve.dram.checker.rules``; this module owns the log format, validation and the report.

Example:
    >>> from sieve.dram.checker import check_log, make_log
    >>> log = make_log([(0, "ACT", 0, 0, 0, 0, 0, 5), (64, "RD", 0, 0, 0, 0, 0, 5, 0)])
    >>> check_log(log, "hbm3-6400").ok
    True
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from sieve.dram.checker.core import Collector, LogView, has_parity, level_counts
from sieve.dram.checker.ramulator import read_ramulator_cmd_trace
from sieve.dram.checker.rules import address_validity
from sieve.dram.checker.stream import (
    CHUNK,
    NotStreamable,
    StreamResult,
    array_chunks,
    check_chunks,
    run_rules,
    streamable,
)
from sieve.dram.checker.timing import constraint_family, constraint_text
from sieve.dram.commands import COMMAND_INDEX, COMMANDS
from sieve.dram.log import LOG_DTYPE
from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, TimingViolation, TraceFormatError

__all__ = [
    "LOG_DTYPE",
    "CheckReport",
    "Violation",
    "check_log",
    "check_log_file",
    "constraint_family",
    "constraint_text",
    "make_log",
    "read_ramulator_cmd_trace",
]



@dataclass(frozen=True, slots=True)
class Violation:
    """One violated constraint.

    Attributes:
        family: short label ("tRCD", "tFAW", "bus", "PIM", "state", "alignment", "refresh",
            "address", "command", "order"); see :func:`constraint_family`.
        index: log index of the offending (following) command; -1 when there is none (a
            refresh gap that runs to the end of the log).
        prev_index: log index of the preceding command the constraint refers to (the P of a
            timing row, the command that left a bank in the wrong state, the previous
            refresh), or -1.
        tick: tick of the offending command (or the end of the span), ticks.
        required_tick: earliest tick at which it would have been legal, ticks (equal to
            ``tick`` for state, address and command violations, which no delay fixes).
        constraint: the rule in words, e.g. ``"bank ACT->RD nRCDRD (63 ticks)"``.
    """

    family: str
    index: int
    prev_index: int
    tick: int
    required_tick: int
    constraint: str

    def __str__(self) -> str:
        prev = f" (after #{self.prev_index})" if self.prev_index >= 0 else ""
        d = self.required_tick - self.tick
        early = f", {d} tick{'s' if d > 1 else ''} early" if d > 0 else ""
        return (f"[{self.family}] command #{self.index} at tick {self.tick}{prev}: "
                f"{self.constraint}{early}")


@dataclass
class CheckReport:
    """Result of :func:`check_log`.

    Attributes:
        violations: the violations, sorted by (channel, tick, seq) of the offending command;
            at most ``max_reports`` of them (``n_violations`` counts all).
        n_violations: total number of violations found.
        n_commands: records in the log.
        n_checked_pairs: (following command, timing row, preceding command) triples for which
            a preceding command existed and the latency was compared.
        spec_name: the spec the log was checked against.
        family_counts: violations per family (all of them, not only those listed).
    """

    violations: list[Violation]
    n_violations: int
    n_commands: int
    n_checked_pairs: int
    spec_name: str
    family_counts: dict[str, int] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no constraint is violated."""
        return self.n_violations == 0

    @property
    def truncated(self) -> bool:
        """True when ``violations`` lists fewer than ``n_violations``."""
        return len(self.violations) < self.n_violations

    def by_family(self) -> dict[str, int]:
        """Number of violations per family, sorted by family name."""
        return dict(sorted(self.family_counts.items()))

    def summary(self, max_lines: int = 10) -> str:
        """A few lines: counts, then the first ``max_lines`` violations."""
        head = (f"command log check against {self.spec_name!r}: {self.n_commands} commands, "
                f"{self.n_checked_pairs} timed pairs checked: ")
        if self.ok:
            return head + "OK"
        fams = ", ".join(f"{k} {v}" for k, v in self.by_family().items())
        lines = [head + f"{self.n_violations} violations ({fams})"]
        lines += [f"  {v}" for v in self.violations[:max_lines]]
        if self.n_violations > min(max_lines, len(self.violations)):
            lines.append(f"  ... {self.n_violations - min(max_lines, len(self.violations))} "
                         "more")
        return "\n".join(lines)

    def raise_if_violated(self) -> CheckReport:
        """Raise :class:`sieve.errors.TimingViolation` with the summary unless ``ok``."""
        if not self.ok:
            raise TimingViolation(self.summary())
        return self


_REQUIRED_FIELDS = tuple(LOG_DTYPE.names)


def _validate(log: object) -> np.ndarray:
    """Check the log's fields and command indices; returns a 1-D structured array."""
    if not isinstance(log, np.ndarray) or log.dtype.names is None:
        raise TraceFormatError(
            "command log: expected a numpy structured array with dtype sieve.dram.log.LOG_DTYPE "
            f"(fields {', '.join(_REQUIRED_FIELDS)}), got {type(log).__name__}"
            + (f" of dtype {log.dtype}" if isinstance(log, np.ndarray) else ""))
    missing = [f for f in _REQUIRED_FIELDS if f not in log.dtype.names]
    if missing:
        raise TraceFormatError(f"command log: missing field(s) {', '.join(missing)} "
                               f"(expected {', '.join(_REQUIRED_FIELDS)})")
    not_int = [f for f in _REQUIRED_FIELDS if not np.issubdtype(log.dtype[f], np.integer)]
    if not_int:
        raise TraceFormatError(f"command log: field(s) {', '.join(not_int)} must be integers "
                               f"(got {', '.join(str(log.dtype[f]) for f in not_int)})")
    log = np.ravel(log)
    if log.size:
        cmd = log["cmd"].astype(np.int64)
        bad = np.flatnonzero((cmd < 0) | (cmd >= len(COMMANDS)))
        if bad.size:
            raise TraceFormatError(
                f"command log: record {bad[0]} has cmd {cmd[bad[0]]}, not an index into "
                f"sieve.dram.commands.COMMANDS (0..{len(COMMANDS) - 1}); {bad.size} such records")
        neg = np.flatnonzero(log["tick"] < 0)
        if neg.size:
            raise TraceFormatError(f"command log: record {neg[0]} has negative tick "
                                   f"{log['tick'][neg[0]]}")
    return log


def check_log(log: np.ndarray, spec: DramSpec | str, *, max_reports: int | None = None,
              check_refresh: bool = True, check_modes: bool = True,
              chunk: int | None = None) -> CheckReport:
    """Check a command log against a spec and report every violated constraint.

    Args:
        log: structured array with (at least) the fields of :data:`LOG_DTYPE`, in any order
            (channels are checked independently, each in (tick, seq) order).
        spec: a :class:`DramSpec` or a preset name.
        max_reports: keep at most this many :class:`Violation` objects (all are counted).
        check_refresh: check refresh coverage (rule 4); turn off for log excerpts.
        check_modes: replay the PIM mode protocol (rule 6, specs with ``pim.modes =
            "hbm-pim"``); turn off for excerpts and hand-made logs of PIM commands that do
            not follow the protocol (timing and state rules are unchanged).
        chunk: check in chunks of this many records (:mod:`sieve.dram.checker.stream`; the
            same verdicts, the rules' arrays the size of a chunk); None: chunks of
            :data:`~sieve.dram.checker.stream.CHUNK` for a longer log; 0: the whole log at
            once. A log whose channels are not in issue order is checked whole.

    Returns:
        A :class:`CheckReport`.

    Raises:
        TraceFormatError: the log is not a structured array, misses fields, has non-integer
            fields, unknown command indices, negative ticks or a seq shared within a channel.
        ConfigError: ``spec`` is not a known preset or is invalid; bad ``max_reports``.
    """
    spec = _checked_arguments(spec, max_reports)
    if chunk is not None and (isinstance(chunk, bool) or not isinstance(
            chunk, (int, np.integer)) or chunk < 0):
        raise ConfigError(f"checker: chunk must be an int >= 0 or None, got {chunk!r}")
    log = _validate(log)
    size = CHUNK if chunk is None else int(chunk)
    if size and len(log) > size and streamable(spec, check_modes):
        try:  # in chunks: the rules' arrays stay the size of a chunk
            res = check_chunks(array_chunks(log, size), spec,
                               check_refresh_rule=check_refresh)
            return _report(res.kinds, res.arrays(), res.n_commands, res.n_checked_pairs,
                           spec, max_reports)
        except NotStreamable:
            pass  # a channel out of issue order: checked whole below
    return _check_whole(log, spec, max_reports, check_refresh, check_modes)


def _checked_arguments(spec: DramSpec | str, max_reports) -> DramSpec:
    """The spec (a preset name resolved, validated) after checking ``max_reports``."""
    spec = get_spec(spec) if isinstance(spec, str) else spec
    if not isinstance(spec, DramSpec):
        raise ConfigError(f"checker: spec must be a DramSpec or preset name, got "
                          f"{type(spec).__name__}")
    spec.validate()
    if max_reports is not None and (not isinstance(max_reports, (int, np.integer))
                                    or max_reports < 0):
        raise ConfigError(f"checker: max_reports must be an int >= 0 or None, got "
                          f"{max_reports!r}")
    return spec


def _check_whole(log: np.ndarray, spec: DramSpec, max_reports: int | None,
                 check_refresh: bool, check_modes: bool) -> CheckReport:
    """Every rule over the whole (validated) log at once."""
    valid, enabled, bad_field = address_validity(log, spec)
    view = LogView.build(log, valid, level_counts(spec), parity=has_parity(spec))
    out = Collector()
    run_rules(log, view, spec, out, enabled, bad_field, modes=check_modes,
              refresh=check_refresh)
    res = StreamResult()  # one chunk, whose log indices are the log's own
    res.absorb(out, view, np.arange(view.n, dtype=np.int64))
    return _report(res.kinds, res.arrays(), view.n, res.n_checked_pairs, spec, max_reports)


def check_log_file(paths, spec: DramSpec | str, *, max_reports: int | None = None,
                   check_refresh: bool = True, check_modes: bool = True,
                   ticks_per_clock: int | None = None, chunk: int | None = None
                   ) -> CheckReport:
    """Check a command-log file (or the per-channel files of one run) in chunks, in bounded
    memory (:mod:`sieve.dram.checker.stream`): the verdicts of :func:`check_log` on the whole
    log. Formats as :func:`sieve.dram.checker.read_command_log`; a log whose channels are not
    in issue order, or a spec with a PIM mode protocol, is read and checked whole.

    Raises:
        TraceFormatError: one message naming the file (and line) of the first problem.
        ConfigError: an unknown spec, bad ``max_reports`` or ``chunk``.
    """
    from sieve.dram.checker.logfile import iter_command_log, read_command_log

    spec = _checked_arguments(spec, max_reports)
    size = CHUNK if chunk is None else chunk
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size < 1:
        raise ConfigError(f"checker: chunk must be an int >= 1, got {chunk!r}")
    if streamable(spec, check_modes):
        try:
            res = check_chunks((_validate(c) for c in iter_command_log(
                paths, spec, ticks_per_clock=ticks_per_clock, chunk=int(size))), spec,
                check_refresh_rule=check_refresh)
            if res.n_commands:
                return _report(res.kinds, res.arrays(), res.n_commands,
                               res.n_checked_pairs, spec, max_reports)
        except NotStreamable:
            pass
    log = read_command_log(paths, spec, ticks_per_clock=ticks_per_clock)
    return _check_whole(_validate(log), spec, max_reports, check_refresh, check_modes)


def _report(kinds: list[tuple[str, str]], cols: tuple[np.ndarray, ...], n_commands: int,
            n_checked_pairs: int, spec: DramSpec, max_reports: int | None) -> CheckReport:
    """The report of violation columns (code, log index, previous index, channel, tick,
    required tick, a, b, c, seq of the command), sorted by (channel, tick, seq) of the
    offending command and then by kind."""
    code, index, prev, ch, tick, req, a, b, c, seq = cols
    rank = np.empty(max(len(kinds), 1), dtype=np.int64)
    rank[np.argsort(np.array([f"{f}\x00{t}" for f, t in kinds] or [""]), kind="stable")] = \
        np.arange(max(len(kinds), 1))
    o = np.lexsort((rank[code] if code.size else code, seq, tick, ch))
    code, index, prev, tick, req, a, b, c = (x[o] for x in (code, index, prev, tick, req, a,
                                                             b, c))
    counts = Counter()
    for k, cnt in zip(*np.unique(code, return_counts=True)):
        counts[kinds[k][0]] += int(cnt)
    keep = code.size if max_reports is None else min(code.size, int(max_reports))
    cols = [x[:keep].tolist() for x in (code, index, prev, tick, req, a, b, c)]
    texts: dict[tuple[int, int, int, int], str] = {}
    vs = []
    for k, i, p, t, r, aa, bb, cc in zip(*cols):
        key = (k, aa, bb, cc)
        text = texts.get(key)
        if text is None:
            text = texts[key] = kinds[k][1].format(a=aa, b=bb, c=cc)
        vs.append(Violation(kinds[k][0], i, p, t, r, text))
    return CheckReport(violations=vs, n_violations=int(code.size), n_commands=n_commands,
                       n_checked_pairs=n_checked_pairs, spec_name=spec.name,
                       family_counts=dict(counts))


def make_log(entries: Iterable[Sequence[object]]) -> np.ndarray:
    """Build a :data:`LOG_DTYPE` array from tuples (handy for tests and hand-made logs).

    Args:
        entries: ``(tick, cmd, ch, pc, sid, bg, bank, row, col)`` tuples; ``cmd`` is a name
            ("ACT") or an index; trailing fields may be omitted (-1). ``seq`` is the position in
            ``entries``. Pseudo-channel commands give -1 for sid, bg and bank, e.g.
            ``(t, "MACAB", 0, 1, -1, -1, -1, row, col)``.

    Returns:
        The log (ticks in engine ticks).

    Raises:
        TraceFormatError: unknown command name or a tuple longer than 9 fields.
    """
    rows = []
    for i, e in enumerate(entries):
        e = tuple(e)
        if len(e) < 2 or len(e) > 9:
            raise TraceFormatError(f"make_log: entry {i} must be (tick, cmd, ch, pc, sid, bg, "
                                   f"bank, row, col) with 2 to 9 fields, got {e!r}")
        cmd = e[1]
        if isinstance(cmd, str):
            if cmd not in COMMAND_INDEX:
                raise TraceFormatError(f"make_log: entry {i}: unknown command {cmd!r} (known: "
                                       f"{', '.join(COMMAND_INDEX)})")
            cmd = COMMAND_INDEX[cmd]
        rest = [int(x) for x in e[2:]] + [-1] * (9 - len(e))
        rows.append((int(e[0]), i, int(cmd), *rest))
    return np.array(rows, dtype=LOG_DTYPE)
