"""Reader for Ramulator 2.0 command traces (the ``TraceRecorder`` controller plugin).

Ramulator 2.0's ``TraceRecorder`` plugin writes one file per channel (``<path>.ch<N>``) with one
line per issued command::

    <clk>, <command name>, <addr_vec[0]>, <addr_vec[1]>, ...

where ``clk`` is the controller's clock (1 CK per clock for HBM2/HBM3 in 2.0, counted from 1)
and ``addr_vec`` has one entry per level of the DRAM standard, ``-1`` where unspecified
(e.g. ``channel, pseudochannel, bankgroup, bank, row, column`` for 2.0's HBM2/HBM3). This module
turns such lines into a :data:`sieve.dram.log.LOG_DTYPE` array. It does not know Ramulator's
timing tables: a trace is checked against a sieve spec, so the spec must match the simulated
device (Ramulator 2.0's "HBM3" preset is an HBM2-class device, see docs/checker.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from sieve.dram.commands import COMMAND_INDEX
from sieve.dram.log import LOG_DTYPE
from sieve.dram.spec import DramSpec
from sieve.errors import TraceFormatError

__all__ = ["RAMULATOR2_HBM_LEVELS", "read_ramulator_cmd_trace"]

#: addr_vec levels of Ramulator 2.0's HBM2 and HBM3 standards (src/dram/impl/HBM{2,3}.cpp).
RAMULATOR2_HBM_LEVELS = ("channel", "pseudochannel", "bankgroup", "bank", "row", "column")

_FIELD = {"channel": "ch", "pseudochannel": "pc", "sid": "sid", "rank": "sid",
          "bankgroup": "bg", "bank": "bank", "row": "row", "column": "col"}
#: Ramulator command names that differ from sieve's.
_ALIASES = {"REFsb": "REFpb", "PREab": "PREA", "PREsb": "PRE"}


def read_ramulator_cmd_trace(source: str | Path | Iterable[str], spec: DramSpec, *,
                             levels: Iterable[str] = RAMULATOR2_HBM_LEVELS,
                             ticks_per_clk: int | None = None) -> np.ndarray:
    """Parse a Ramulator 2.0 ``TraceRecorder`` command trace into a command log.

    Args:
        source: a file path, or an iterable of lines.
        spec: the spec the log will be checked against (for ticks per CK).
        levels: the standard's addr_vec levels, in order (case-insensitive; "rank" is taken as
            sieve's "sid" level). Levels sieve lacks are missing fields: sid defaults to 0 for
            bank-scope commands.
        ticks_per_clk: sieve ticks per Ramulator clock (default ``spec.timing.ticks_per_ck``,
            i.e. one Ramulator 2.0 clock = one CK).

    Returns:
        A :data:`sieve.dram.log.LOG_DTYPE` array; ``seq`` is the line order.

    Raises:
        TraceFormatError: unreadable file, unknown level or command, or a malformed line (the
            message names the file, line and field).
    """
    levels = tuple(lv.lower() for lv in levels)
    unknown = [lv for lv in levels if lv not in _FIELD]
    if unknown:
        raise TraceFormatError(f"Ramulator trace: unknown level(s) {', '.join(unknown)} "
                               f"(known: {', '.join(sorted(_FIELD))})")
    name = "<lines>"
    if isinstance(source, (str, Path)):
        name = str(source)
        try:
            lines: Iterable[str] = Path(source).read_text().splitlines()
        except OSError as exc:
            raise TraceFormatError(f"Ramulator trace {name!r}: cannot read ({exc.strerror})"
                                   ) from None
    else:
        lines = source
    scale = spec.timing.ticks_per_ck if ticks_per_clk is None else int(ticks_per_clk)
    recs = []
    for lineno, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(",")]
        where = f"Ramulator trace {name!r} line {lineno}"
        if len(parts) != 2 + len(levels):
            raise TraceFormatError(f"{where}: expected clk, command and {len(levels)} address "
                                   f"fields ({', '.join(levels)}), got {len(parts)} fields")
        cmd = _ALIASES.get(parts[1], parts[1])
        if cmd not in COMMAND_INDEX:
            raise TraceFormatError(f"{where}: unknown command {parts[1]!r} (known: "
                                   f"{', '.join(list(COMMAND_INDEX) + list(_ALIASES))})")
        try:
            clk = int(parts[0])
            addr = [int(p) for p in parts[2:]]
        except ValueError:
            raise TraceFormatError(f"{where}: clk and address fields must be integers: "
                                   f"{line!r}") from None
        rec = {"ch": -1, "pc": -1, "sid": -1, "bg": -1, "bank": -1, "row": -1, "col": -1}
        for lv, a in zip(levels, addr):
            rec[_FIELD[lv]] = a
        if "sid" not in [_FIELD[lv] for lv in levels] and rec["bank"] >= 0:
            rec["sid"] = 0
        recs.append((clk * scale, len(recs), COMMAND_INDEX[cmd], rec["ch"], rec["pc"],
                     rec["sid"], rec["bg"], rec["bank"], rec["row"], rec["col"]))
    return np.array(recs, dtype=LOG_DTYPE)
