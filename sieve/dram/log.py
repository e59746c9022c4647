"""The command-log record: one row per issued DRAM/PIM command.

The engine writes its log in exactly this layout (``LogRec`` in ``sieve/_dram.pxd``; the
engine's ``LOG_FIELDS`` must equal this module's, which :mod:`sieve.dram.engine` asserts at
import), and the independent checker (:mod:`sieve.dram.checker`) reads it. This module is the
one home of the format, so neither side imports the other. numpy is imported on first use
(:mod:`sieve.lazy`): :data:`LOG_DTYPE` is built when first read.
"""

from __future__ import annotations

import functools

from sieve.lazy import numpy as np

__all__ = ["CSV_COLUMNS", "LOG_DTYPE", "LOG_FIELDS", "LOG_KINDS",  # noqa: F822 (LOG_DTYPE:
           "RAMULATOR_NAMES", "LogWriter", "log_dtype", "log_to_csv",  # module __getattr__)
           "log_to_csv_python", "log_to_npy"]

#: One record per issued command, as (field, numpy type) pairs: ``tick``: engine tick of the
#: command's first tick; ``seq``: global issue order (orders commands at equal ticks); ``cmd``:
#: index into :data:`sieve.dram.commands.COMMANDS`; ``ch``: channel (simulated index); address
#: fields are -1 below the command's scope; ``row`` is -1 except for ACT/RD/WR/RDA/WRA and the
#: PIM activates and MACs (ACTAB/MACAB, ACTSB/MACSB, ACTPB/MACPB); ``col`` is -1 except for
#: column commands. :data:`LOG_DTYPE` is the numpy dtype of these fields.
LOG_FIELDS = (("tick", "<i8"), ("seq", "<i8"), ("cmd", "<i4"), ("ch", "<i4"), ("pc", "<i4"),
              ("sid", "<i4"), ("bg", "<i4"), ("bank", "<i4"), ("row", "<i4"), ("col", "<i4"))


@functools.cache
def log_dtype():
    """:data:`LOG_FIELDS` as a numpy dtype (:data:`LOG_DTYPE`; built on first use)."""
    return np.dtype(list(LOG_FIELDS))


def __getattr__(name: str):
    if name == "LOG_DTYPE":  # numpy's dtype, built when first read (module docstring)
        return log_dtype()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: Ramulator 2.1 names of sieve's commands where they differ (``python/ramulator/dram/hbm3.py``).
RAMULATOR_NAMES = {"PRE": "PREpb", "PREA": "PREab"}

#: Columns of a command log in CSV, in Ramulator 2.1's ``CmdTraceRecorder`` text order
#: (``clock,command,<one column per level>,type,source``; HBM3 levels).
CSV_COLUMNS = ("clock", "command", "Channel", "PseudoChannel", "Sid", "BankGroup", "Bank", "Row",
               "Column", "type", "source")


#: File kinds a command log is written as (by extension): Ramulator 2.1's CSV, or .npy.
LOG_KINDS = (".csv", ".npy")

#: Records formatted or written at a time by :class:`LogWriter` and :func:`log_to_csv` (64 Ki
#: records: ~8 MB of CSV line buffer, 3 MB of .npy records).
WRITE_BLOCK = 1 << 16


def _names() -> list[bytes]:
    from sieve.dram.commands import COMMANDS

    return [RAMULATOR_NAMES.get(c.name, c.name).encode("ascii") for c in COMMANDS]


def _types_by_command(cmd: np.ndarray) -> np.ndarray:
    """Ramulator's ``type`` of each command read from the command alone (0 read, 1 write,
    -1 otherwise)."""
    from sieve.dram.commands import COMMANDS

    by_cmd = np.array([0 if c.name in ("RD", "RDA") else 1 if c.name in ("WR", "WRA") else -1
                       for c in COMMANDS], dtype=np.int8)
    cmd = np.asarray(cmd, dtype=np.int64)
    if cmd.size and (cmd.min() < 0 or cmd.max() >= len(COMMANDS)):
        raise ValueError(f"command log: command index outside the {len(COMMANDS)} known "
                         "commands")
    return by_cmd[cmd]


def _compiled_formatter():
    from sieve.errors import NotBuiltError

    try:
        from sieve.dram import _logcsv
    except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
        raise NotBuiltError.of("command-log formatter", "sieve.dram._logcsv", exc) from None
    return _logcsv.format_rows


def _csv_rows(log: np.ndarray, log_type: np.ndarray | None, names: list[bytes]) -> bytes:
    """CSV body lines of ``log`` (compiled, :data:`WRITE_BLOCK` records at a time)."""
    fmt = _compiled_formatter()
    log = np.asarray(log)
    if log.dtype != log_dtype() or log.ndim != 1:
        raise ValueError(f"command log: expected a 1-D array of LOG_DTYPE, got {log.dtype} "
                         f"of shape {log.shape}")
    if log_type is None:
        typ = _types_by_command(log["cmd"])
    else:
        typ = np.asarray(log_type)
        if typ.shape != log.shape:
            raise ValueError("log_to_csv: log_type needs one entry per log record")
        typ = typ.astype(np.int8, casting="same_kind")
    parts = []
    for i in range(0, len(log), WRITE_BLOCK):
        b = log[i:i + WRITE_BLOCK]
        parts.append(fmt(b["tick"], b["cmd"], b["ch"], b["pc"], b["sid"], b["bg"], b["bank"],
                         b["row"], b["col"], typ[i:i + WRITE_BLOCK], names))
    return b"".join(parts)


def _csv_header() -> bytes:
    return (",".join(CSV_COLUMNS) + "\n").encode("ascii")


def log_to_csv(log: np.ndarray, log_type: np.ndarray | None = None) -> str:
    """A command log as CSV text in Ramulator 2.1's command-trace format (the layout of
    :func:`log_to_csv_python`, formatted in compiled code, byte for byte the same)."""
    return (_csv_header() + _csv_rows(log, log_type, _names())).decode("ascii")


def log_to_csv_python(log: np.ndarray, log_type: np.ndarray | None = None) -> str:
    """A command log as CSV text in Ramulator 2.1's command-trace format, so that a sieve log
    and a Ramulator 2.1 trace of the same run can be diffed or checked alike.

    One header line (:data:`CSV_COLUMNS`), then one line per command in log order:
    ``clock`` = engine tick + 1 (Ramulator counts its controller clock from 1; one clock is one
    engine tick, e.g. half a CK on HBM3 at ``ticks_per_ck = 2``, as Ramulator 2.1's
    ``tick_multiplier``), the command (Ramulator's names ``PREpb``/``PREab`` for ``PRE``/
    ``PREA``; sieve's names otherwise), the address fields as logged (-1 where the command has
    none: the bank fields of pseudo-channel commands, the column of row commands; PRE carries
    the row of the request it was issued for, as in Ramulator's trace),
    ``type`` (0 read, 1 write, -1 refresh or unknown: ``log_type`` when given, else read from
    the command) and ``source`` (-1).
    """
    from sieve.dram.commands import COMMANDS

    names = np.array([RAMULATOR_NAMES.get(c.name, c.name) for c in COMMANDS])
    cmd = np.asarray(log["cmd"], dtype=np.int64)
    if log_type is None:
        by_cmd = np.array([0 if c.name in ("RD", "RDA") else 1 if c.name in ("WR", "WRA")
                           else -1 for c in COMMANDS], dtype=np.int64)
        typ = by_cmd[cmd]
    else:
        typ = np.asarray(log_type, dtype=np.int64)
        if typ.shape != cmd.shape:
            raise ValueError("log_to_csv: log_type needs one entry per log record")
    cols = [np.char.mod("%d", np.asarray(log["tick"], dtype=np.int64) + 1), names[cmd]]
    cols += [np.char.mod("%d", np.asarray(log[f], dtype=np.int64))
             for f in ("ch", "pc", "sid", "bg", "bank", "row", "col")]
    cols += [np.char.mod("%d", typ), np.full(cmd.shape, "-1")]
    lines = [",".join(CSV_COLUMNS)]
    if cmd.size:
        body = cols[0].astype(object)
        for c in cols[1:]:
            body = body + "," + c.astype(object)
        lines += body.tolist()
    return "\n".join(lines) + "\n"


def log_to_npy(log: np.ndarray) -> bytes:
    """A command log as the bytes of a ``.npy`` file (:data:`LOG_DTYPE`, no pickles)."""
    import io

    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(log, dtype=log_dtype()), allow_pickle=False)
    return buf.getvalue()


class LogWriter:
    """A command log written to a file as it is produced, in bounded memory (``sieve dram
    --log``): :meth:`write` takes the log in pieces (issue order), :meth:`close` completes the
    file. The kind follows the extension (:data:`LOG_KINDS`): ``.csv`` as
    :func:`log_to_csv`, ``.npy`` as :func:`log_to_npy` (the same bytes either way).

    All or nothing: the pieces go to a temporary file beside ``path``
    (:func:`sieve.outputs.atomic_write`), renamed to ``path`` by :meth:`close` only; an error
    or :meth:`abort` removes it and leaves ``path`` as it was. Use it as a context manager (an
    exception in the block aborts). The ``.npy`` header is written first for an empty array
    and rewritten in place with the final length (numpy reserves room for the length digits,
    ``numpy.lib.format.GROWTH_AXIS_MAX_DIGITS``).
    """

    def __init__(self, path):
        from pathlib import Path

        from sieve.outputs import atomic_write

        self.path = Path(path)
        self.kind = self.path.suffix.lower()
        if self.kind not in LOG_KINDS:
            raise ValueError(f"command log {str(self.path)!r}: unknown kind "
                             f"{self.path.suffix or '(none)'!r} (known: {', '.join(LOG_KINDS)})")
        self.records = 0
        self._names = _names()
        self._ctx = atomic_write(self.path, "wb")
        self._fh = self._ctx.__enter__()
        self._closed = False
        try:
            if self.kind == ".csv":
                self._fh.write(_csv_header())
            else:
                self._header_len = self._write_npy_header(0)
        except BaseException as exc:  # (a full disk at the header: no temporary file left;
            self._closed = True          # an OSError becomes atomic_write's OutputError)
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
            raise

    def _write_npy_header(self, n: int) -> int:
        from numpy.lib import format as npf

        start = self._fh.tell()
        npf.write_array_header_1_0(self._fh, {"descr": npf.dtype_to_descr(log_dtype()),
                                              "fortran_order": False, "shape": (n,)})
        return self._fh.tell() - start

    def write(self, log: np.ndarray, log_type: np.ndarray | None = None) -> None:
        """Append the records ``log`` (LOG_DTYPE, issue order) and, for CSV, their request
        types (``log_type``; read from the commands when None)."""
        if self._closed:
            raise ValueError(f"command log {str(self.path)!r}: already closed")
        log = np.asarray(log)
        if log.dtype != log_dtype() or log.ndim != 1:
            raise ValueError(f"command log: expected a 1-D array of LOG_DTYPE, got "
                             f"{log.dtype} of shape {log.shape}")
        if not len(log):
            return
        if self.kind == ".csv":
            self._fh.write(_csv_rows(log, log_type, self._names))
        else:
            self._fh.write(np.ascontiguousarray(log).tobytes())
        self.records += len(log)

    def close(self) -> None:
        """Complete the file and move it into place."""
        if self._closed:
            return
        self._closed = True
        try:
            if self.kind == ".npy":
                self._fh.seek(0)
                if self._write_npy_header(self.records) != self._header_len:
                    raise ValueError("command log: the .npy header changed length")  # numpy
        except BaseException as exc:
            self._ctx.__exit__(type(exc), exc, exc.__traceback__)
            raise
        self._ctx.__exit__(None, None, None)

    def abort(self) -> None:
        """Remove the temporary file; ``path`` stays as it was."""
        if self._closed:
            return
        self._closed = True
        exc = KeyboardInterrupt("command log aborted")
        try:
            self._ctx.__exit__(KeyboardInterrupt, exc, None)
        except KeyboardInterrupt:
            pass

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, typ, exc, tb) -> None:
        if typ is None:
            self.close()
        else:
            self.abort()
