"""Command logs read from files, for the checker (``sieve check``).

Four formats, told apart by their first bytes (never by the file name):

* ``.npy``: a :data:`sieve.dram.log.LOG_DTYPE` array (``sieve dram --log FILE.npy``); read
  without unpickling;
* CSV with a ``clock,command,...`` header: ``sieve dram --log FILE.csv``, or a raw Ramulator 2.1
  command trace (``CmdTraceRecorder`` text mode, one file per channel, ``<path>.ch<N>``) as it
  comes: Ramulator's command names (``PREpb``, ``PREab``), its clock counted from 1, and any
  extra columns (``type``, ``source``) are taken as they are;
* a Ramulator 2.0 ``TraceRecorder`` file (no header; :mod:`sieve.dram.checker.ramulator`).

Every reader returns a :data:`LOG_DTYPE` array normalised to what the engine logs: address
fields below a command's scope are -1, the column is -1 except for column commands, and the
row is -1 for refresh and all-bank precharge. It never imports the engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from sieve.dram.checker.ramulator import RAMULATOR2_HBM_LEVELS, read_ramulator_cmd_trace
from sieve.dram.commands import BUS_COL, COMMAND_INDEX, COMMANDS, KIND_MAC, KIND_OPEN, LEVEL_INDEX
from sieve.dram.log import LOG_DTYPE
from sieve.dram.spec import DramSpec
from sieve.errors import TraceFormatError
from sieve.limits import MAX_LINE_BYTES

try:
    from sieve.dram.checker import _csvlog
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    from sieve.errors import NotBuiltError

    raise NotBuiltError.of("checker CSV reader", "sieve.dram.checker._csvlog", exc) from None

__all__ = ["LOG_FORMATS", "read_command_log", "read_csv_log"]

#: The formats :func:`read_command_log` tells apart.
LOG_FORMATS = ("npy", "csv", "ramulator2.0")

#: CSV header names (case-insensitive) -> LOG_DTYPE field. "Sid" may be missing (Ramulator
#: 2.1's HBM2 has no SID level).
_CSV_FIELDS = {"channel": "ch", "pseudochannel": "pc", "sid": "sid", "bankgroup": "bg",
               "bank": "bank", "row": "row", "column": "col"}
#: Ramulator command names -> sieve's (2.1: PREpb/PREab; 2.0: REFsb/PREsb/PREab)
_ALIASES = {"PREpb": "PRE", "PREab": "PREA", "PREsb": "PRE", "REFsb": "REFpb"}
#: Ramulator commands sieve does not model (refresh management)
_UNMODELLED = ("RFMab", "RFMpb", "RFMsb", "VRR")

_SCOPE = np.array([LEVEL_INDEX[c.scope] for c in COMMANDS], dtype=np.int64)
_IS_COL = np.array([c.bus == BUS_COL for c in COMMANDS])
_HAS_ROW = np.array([c.name in ("ACT", "PRE", "RD", "WR", "RDA", "WRA")
                     or c.kind in (KIND_OPEN, KIND_MAC) for c in COMMANDS])


#: Largest tick a checked log may hold: 2^62, so that a tick plus any timing window (at most
#: 2^31 - 1 CK of up to 2^10 ticks each) stays inside int64.
MAX_LOG_TICK = 1 << 62


def normalise(log: np.ndarray) -> np.ndarray:
    """Set the fields a command does not use to -1 (see the module docstring); in place."""
    cmd = log["cmd"].astype(np.int64)
    for lv, f in ((LEVEL_INDEX["sid"], "sid"), (LEVEL_INDEX["bankgroup"], "bg"),
                  (LEVEL_INDEX["bank"], "bank")):
        log[f][_SCOPE[cmd] < lv] = -1  # below the command's scope
    log["col"][~_IS_COL[cmd]] = -1
    log["row"][~_HAS_ROW[cmd]] = -1
    return log


def _sniff(path: Path, who: str) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(4096)
    except OSError as exc:
        raise TraceFormatError(f"{who}: cannot read ({exc.strerror})") from None
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    first = head.split(b"\n", 1)[0].strip().lower()
    if first.startswith(b"clock,command"):
        return "csv"
    if not head.strip():
        raise TraceFormatError(f"{who}: empty file (no commands)")
    line = next((ln for ln in head.split(b"\n") if ln.strip() and not ln.startswith(b"#")),
                b"")
    if not line.split(b",")[0].strip().isdigit() or b"," not in line:
        raise TraceFormatError(f"{who}: not a command log (expected a .npy log, a CSV with a "
                               "'clock,command,...' header, or a Ramulator 2.0 trace of "
                               "'<clk>, <command>, <address>...' lines)")
    return "ramulator2.0"


def read_csv_log(path: str | Path, *, ticks_per_clock: int = 1) -> np.ndarray:
    """Read a CSV command log with a ``clock,command,...`` header (sieve's ``--log`` CSV or a
    Ramulator 2.1 ``CmdTraceRecorder`` text trace).

    Args:
        path: the file.
        ticks_per_clock: engine ticks per clock of the file (1: Ramulator 2.1 counts its
            controller clock in ticks of its ``tick_multiplier``, half a CK on HBM3, which is
            sieve's tick on the HBM3 presets; and sieve's own CSV is in engine ticks).

    Returns:
        A :data:`LOG_DTYPE` array, ``tick = (clock - 1) * ticks_per_clock``, ``seq`` = line
        order, normalised (module docstring).

    Raises:
        TraceFormatError: naming the file and line of the first malformed line.
    """
    parts = list(iter_csv_log(path, ticks_per_clock=ticks_per_clock))
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def iter_csv_log(path: str | Path, *, ticks_per_clock: int = 1, chunk: int = 1 << 18
                 ) -> Iterator[np.ndarray]:
    """:func:`read_csv_log` a chunk of at most ``chunk`` commands at a time (``seq`` counts
    the commands of the whole file); the file is read as it goes, never whole."""
    p = Path(path)
    who = f"command log {str(p)!r}"
    tpc = int(ticks_per_clock)
    if tpc < 1:
        raise TraceFormatError(f"{who}: ticks_per_clock must be >= 1, got {ticks_per_clock}")
    try:
        fh = open(p, "rb")  # noqa: SIM115 - closed in the finally below, across yields
    except OSError as exc:
        raise TraceFormatError(f"{who}: cannot read ({exc.strerror})") from None
    try:
        first = fh.readline(MAX_LINE_BYTES + 1)
        if not first:
            raise TraceFormatError(f"{who}: empty file (no commands)")
        if len(first) > MAX_LINE_BYTES:
            raise TraceFormatError(f"{who} line 1: longer than {MAX_LINE_BYTES} bytes "
                                   "(sieve.limits.MAX_LINE_BYTES)")
        if not first.isascii():
            raise TraceFormatError(f"{who}: not ASCII text")
        head = first.decode("ascii").rstrip("\r\n")
        header = [h.strip().lower() for h in head.split(",")]
        if header[:2] != ["clock", "command"]:
            raise TraceFormatError(f"{who} line 1: expected a header starting 'clock,command', "
                                   f"got {head[:60]!r}")
        cols = {}
        for i, h in enumerate(header[2:], 2):
            f = _CSV_FIELDS.get(h)
            if f is not None:
                if f in cols:
                    raise TraceFormatError(f"{who} line 1: column {h!r} appears twice")
                cols[f] = i
        need = [n for n, f in _CSV_FIELDS.items() if f != "sid" and f not in cols]
        if need:
            raise TraceFormatError(f"{who} line 1: missing column(s) {', '.join(need)} "
                                   "(expected clock, command, Channel, PseudoChannel, [Sid,] "
                                   "BankGroup, Bank, Row, Column, then any others)")
        width = len(header)
        fields = [(f, cols[f]) for f in ("ch", "pc", "sid", "bg", "bank", "row", "col")
                  if f in cols]
        k = 0
        lineno = 1
        pending: list[np.ndarray] = []  # parsed records not yet yielded
        n_pending = 0
        for blob in _line_blocks(fh, who, _CSV_BLOCK):
            fast = _csv_fast(blob, width, fields, tpc, k)
            if fast is not None:  # every line plain: parsed in one compiled pass
                lineno += len(fast)
                part = fast
            else:  # the line loop: the same records, or the first bad line's message
                lines = blob.split(b"\n")
                if lines and not lines[-1]:
                    lines.pop()
                part = np.empty(len(lines), dtype=LOG_DTYPE)
                m = 0
                for raw in lines:
                    lineno += 1
                    if not raw.isascii():
                        raise TraceFormatError(f"{who}: not ASCII text (line {lineno})")
                    line = raw.decode("ascii")
                    if not line.strip():
                        continue
                    vals, c, clock = _csv_fields(who, lineno, line, width, fields)
                    if (clock - 1) * tpc > MAX_LOG_TICK:
                        raise TraceFormatError(f"{who} line {lineno}: clock {clock} beyond "
                                               f"{MAX_LOG_TICK // tpc + 1} (ticks are int64 "
                                               "and the checker adds timing windows to them)")
                    rec = part[m]
                    rec["tick"] = (clock - 1) * tpc
                    rec["seq"] = k + m
                    rec["cmd"] = c
                    rec["sid"] = 0
                    for (f, _), v in zip(fields, vals):
                        rec[f] = v
                    m += 1
                part = part[:m]
            k += len(part)
            pending.append(part)
            n_pending += len(part)
            while n_pending >= chunk:  # exactly `chunk` records per yield
                allp = np.concatenate(pending) if len(pending) > 1 else pending[0]
                yield normalise(allp[:chunk].copy())
                rest = allp[chunk:]
                pending, n_pending = [rest], len(rest)
        if n_pending:
            allp = np.concatenate(pending) if len(pending) > 1 else pending[0]
            yield normalise(allp.copy())
        if not k:
            raise TraceFormatError(f"{who}: no commands")
    finally:
        fh.close()


#: Command names (and Ramulator's aliases) as they appear between the clock and the address
#: fields, longest first, and the number each is replaced by for the numeric parse.
_FAST_NAMES = sorted([*COMMAND_INDEX.items(), *((a, COMMAND_INDEX[n]) for a, n in
                                                 _ALIASES.items())], key=lambda x: -len(x[0]))
#: _FAST_NAMES as the compiled pass reads them: the names concatenated, their bounds, their ids.
_FAST_TABLE = (np.frombuffer("".join(n for n, _ in _FAST_NAMES).encode("ascii"), dtype=np.uint8),
               np.cumsum([0] + [len(n) for n, _ in _FAST_NAMES]).astype(np.int64),
               np.array([i for _, i in _FAST_NAMES], dtype=np.int64))


#: Bytes of a CSV log read at a time (whole lines; a line is at most MAX_LINE_BYTES).
_CSV_BLOCK = 4 << 20


def _line_blocks(fh, who: str, size: int) -> Iterator[bytes]:
    """The rest of an open file as blocks of whole lines (each ending with its newline, the
    last one as the file ends), about ``size`` bytes each; a line longer than MAX_LINE_BYTES is
    an error naming the limit."""
    buf = b""
    while True:
        block = fh.read(size)
        if not block:
            if buf:
                if len(buf) > MAX_LINE_BYTES:
                    raise TraceFormatError(f"{who}: a line longer than {MAX_LINE_BYTES} bytes "
                                           "(sieve.limits.MAX_LINE_BYTES)")
                yield buf
            return
        data = buf + block
        cut = data.rfind(b"\n") + 1
        buf = data[cut:]
        if len(buf) > MAX_LINE_BYTES:
            raise TraceFormatError(f"{who}: a line longer than {MAX_LINE_BYTES} bytes "
                                   "(sieve.limits.MAX_LINE_BYTES)")
        if cut:
            ends = np.flatnonzero(np.frombuffer(data, dtype=np.uint8, count=cut) == 10)
            if np.diff(ends, prepend=-1).max() > MAX_LINE_BYTES + 1:
                raise TraceFormatError(f"{who}: a line longer than {MAX_LINE_BYTES} bytes "
                                       "(sieve.limits.MAX_LINE_BYTES)")
            yield data[:cut]


def _csv_fast(data: bytes, width: int, fields, tpc: int, k0: int) -> np.ndarray | None:
    """The lines of ``data`` parsed in one compiled pass (``_csvlog.parse_block``), or None
    when any line is not plain (a field other than an optional '-' and digits, an unknown
    command name, another number of fields, a blank line, a carriage return, a value out of
    range): then the line loop parses them and reports the first bad line as it always did.
    The pass accepts only lines the loop accepts, with the same values (tested)."""
    if not data:
        return None
    if not data.endswith(b"\n"):  # the file's last line
        data += b"\n"
    n = data.count(b"\n")
    names, starts, ids = _FAST_TABLE
    take = np.array([i for _, i in fields], dtype=np.int64)
    vals = np.empty((n, 2 + take.size), dtype=np.int64)
    got = _csvlog.parse_block(np.frombuffer(data, dtype=np.uint8), width, take, names, starts,
                              ids, MAX_LOG_TICK // tpc + 1, vals)
    if got != n:
        return None
    out = np.zeros(n, dtype=LOG_DTYPE)
    out["tick"] = (vals[:, 0] - 1) * tpc
    out["seq"] = k0 + np.arange(n)
    out["cmd"] = vals[:, 1]
    for j, (f, _) in enumerate(fields):
        out[f] = vals[:, 2 + j]
    return out


def _csv_fields(who: str, lineno: int, line: str, width: int, fields):
    """(address values, command id, clock) of one CSV line, or a one-line error."""
    parts = line.rstrip("\r\n").split(",")
    if len(parts) != width:
        raise TraceFormatError(f"{who} line {lineno}: {len(parts)} fields, the header has "
                               f"{width}")
    name = parts[1].strip()
    name = _ALIASES.get(name, name)
    c = COMMAND_INDEX.get(name)
    if c is None:
        if name in _UNMODELLED:
            raise TraceFormatError(f"{who} line {lineno}: command {parts[1].strip()!r} is "
                                   "not modelled by sieve (no RFM/VRR); the trace cannot "
                                   "be checked")
        raise TraceFormatError(f"{who} line {lineno}: unknown command {parts[1].strip()!r} "
                               f"(known: {', '.join(list(COMMAND_INDEX) + list(_ALIASES))})")
    try:
        clock = int(parts[0])
        vals = [int(parts[i]) for _, i in fields]
    except ValueError:
        raise TraceFormatError(f"{who} line {lineno}: clock and address fields must be "
                               f"integers: {line.strip()[:80]!r}") from None
    if clock < 1:
        raise TraceFormatError(f"{who} line {lineno}: clock {clock} < 1 (the clock counts "
                               "from 1)")
    if any(v < -1 or v >= 1 << 31 for v in vals):
        raise TraceFormatError(f"{who} line {lineno}: address field out of range [-1, "
                               f"2**31): {line.strip()[:80]!r}")
    return vals, c, clock


def _iter_npy(path: Path, who: str, chunk: int) -> Iterator[np.ndarray]:
    """A ``.npy`` command log read ``chunk`` records at a time (never whole, never unpickled):
    its header checked (a 1-D structured array with the fields of LOG_DTYPE), then plain reads
    of the records, each block's ticks in range."""
    fmt = np.lib.format
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in the finally below, across yields
    except OSError as exc:
        raise TraceFormatError(f"{who}: cannot read ({exc.strerror})") from None
    try:
        try:
            version = fmt.read_magic(fh)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, fortran, dtype = read(fh)
        except (ValueError, OSError, EOFError, SyntaxError) as exc:
            raise TraceFormatError(f"{who}: not a readable .npy command log ({exc})") from None
        if dtype.hasobject:  # what np.load(allow_pickle=False) refuses
            raise TraceFormatError(f"{who}: not a readable .npy command log (object arrays "
                                   "need pickles, which are never read)")
        if dtype.names is None or any(f not in dtype.names for f in LOG_DTYPE.names):
            raise TraceFormatError(f"{who}: expected a structured array with the fields "
                                   f"{', '.join(LOG_DTYPE.names)} (sieve.dram.log.LOG_DTYPE), "
                                   f"got dtype {dtype}")
        if len(shape) != 1:
            raise TraceFormatError(f"{who}: expected a 1-D array, got shape {shape}")
        del fortran  # 1-D: the same bytes either way
        left = int(shape[0])
        names = list(LOG_DTYPE.names)
        while left:
            n = min(left, chunk)
            raw = np.fromfile(fh, dtype=dtype, count=n)
            if raw.size != n:
                raise TraceFormatError(f"{who}: the file ends before its {shape[0]} records")
            part = np.ascontiguousarray(raw[names]).astype(LOG_DTYPE)
            if int(part["tick"].max()) > MAX_LOG_TICK or int(part["tick"].min()) < 0:
                raise TraceFormatError(f"{who}: ticks outside [0, {MAX_LOG_TICK}] (int64 ticks "
                                       "plus the checker's timing windows must not overflow)")
            left -= n
            yield part
    finally:
        fh.close()


def iter_command_log(paths: str | Path | Sequence[str | Path], spec: DramSpec, *,
                     ticks_per_clock: int | None = None,
                     levels: Sequence[str] = RAMULATOR2_HBM_LEVELS,
                     chunk: int = 1 << 18) -> Iterator[np.ndarray]:
    """:func:`read_command_log` as consecutive chunks of at most ``chunk`` records, each file
    read as it goes (``.npy`` and CSV; a Ramulator 2.0 trace is read whole, then cut); with
    several files ``seq`` counts the records of all of them in file order."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
        renumber = False
    else:
        paths = list(paths)
        renumber = len(paths) > 1
    k = 0
    for path in paths:
        p = Path(path)
        who = f"command log {str(p)!r}"
        fmt = _sniff(p, who)
        if fmt == "npy":
            parts: Iterable[np.ndarray] = _iter_npy(p, who, chunk)
        elif fmt == "csv":
            parts = iter_csv_log(p, ticks_per_clock=1 if ticks_per_clock is None
                                 else ticks_per_clock, chunk=chunk)
        else:
            log = read_ramulator_cmd_trace(p, spec, levels=levels,
                                           ticks_per_clk=ticks_per_clock)
            if not len(log):
                raise TraceFormatError(f"{who}: no commands")
            log = normalise(log)
            log = np.ascontiguousarray(log[list(LOG_DTYPE.names)]).astype(LOG_DTYPE)
            parts = (log[i:i + chunk] for i in range(0, len(log), chunk))
        for part in parts:
            if renumber:
                part = part.copy()
                part["seq"] = k + np.arange(len(part))
            k += len(part)
            yield part


def read_command_log(paths: str | Path | Sequence[str | Path], spec: DramSpec, *,
                     ticks_per_clock: int | None = None,
                     levels: Sequence[str] = RAMULATOR2_HBM_LEVELS) -> np.ndarray:
    """Read one or more command-log files (e.g. the ``.ch0``, ``.ch1`` files of a Ramulator
    run) into one log, ``seq`` renumbered in file order.

    Args:
        paths: a file or a list of files (formats in the module docstring, told by content).
        spec: the spec the log will be checked against (Ramulator 2.0 files: ticks per CK).
        ticks_per_clock: engine ticks per clock of CSV and Ramulator 2.0 files (default: 1
            for CSV, ``spec.timing.ticks_per_ck`` for Ramulator 2.0's 1-CK clock).
        levels: the address levels of a Ramulator 2.0 file.

    Raises:
        TraceFormatError: one message naming the file (and line) of the first problem.
    """
    parts = list(iter_command_log(paths, spec, ticks_per_clock=ticks_per_clock, levels=levels,
                                  chunk=1 << 20))
    if not parts:  # an empty .npy log
        return np.zeros(0, dtype=LOG_DTYPE)
    return np.concatenate(parts) if len(parts) > 1 else parts[0]
