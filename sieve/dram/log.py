"""The command-log record: one row per issued DRAM/PIM command.

The engine writes its log in exactly this layout (``LogRec`` in ``sieve/_dram.pxd``; the
engine's ``LOG_DTYPE`` must equal this one, which :mod:`sieve.dram.device` asserts at import),
and the independent checker (:mod:`sieve.dram.checker`) reads it. This module is the one home
of the format, so neither side imports the other.
"""

from __future__ import annotations

import numpy as np

__all__ = ["CSV_COLUMNS", "LOG_DTYPE", "RAMULATOR_NAMES", "log_to_csv", "log_to_npy"]

#: One record per issued command. ``tick``: engine tick of the command's first tick;
#: ``seq``: global issue order (orders commands at equal ticks); ``cmd``: index into
#: :data:`sieve.dram.commands.COMMANDS`; ``ch``: channel (simulated index); address fields are
#: -1 below the command's scope; ``row`` is -1 except for ACT/RD/WR/RDA/WRA/ACTAB/MACAB;
#: ``col`` is -1 except for column commands.
LOG_DTYPE = np.dtype([
    ("tick", np.int64), ("seq", np.int64), ("cmd", np.int32),
    ("ch", np.int32), ("pc", np.int32), ("sid", np.int32), ("bg", np.int32), ("bank", np.int32),
    ("row", np.int32), ("col", np.int32),
])


#: Ramulator 2.1 names of sieve's commands where they differ (``python/ramulator/dram/hbm3.py``).
RAMULATOR_NAMES = {"PRE": "PREpb", "PREA": "PREab"}

#: Columns of a command log in CSV, in Ramulator 2.1's ``CmdTraceRecorder`` text order
#: (``clock,command,<one column per level>,type,source``; HBM3 levels).
CSV_COLUMNS = ("clock", "command", "Channel", "PseudoChannel", "Sid", "BankGroup", "Bank", "Row",
               "Column", "type", "source")


def log_to_csv(log: np.ndarray, log_type: np.ndarray | None = None) -> str:
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
    np.save(buf, np.ascontiguousarray(log, dtype=LOG_DTYPE), allow_pickle=False)
    return buf.getvalue()
