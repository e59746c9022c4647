"""The door into the compiled engine ``sieve._dram``: the only module of sieve that imports it.

It owns what the Python side must agree on with the engine: the check at import that the
engine's command order and log record equal :mod:`sieve.dram.commands` and
:mod:`sieve.dram.log`, the engine's status codes (:data:`STATUS_MESSAGES`) and the error a
stopped run raises (:func:`_run_error`), and the engine's classes, functions and constants
that the rest of the package uses (:data:`Engine`, :data:`RequestRun`, :func:`run_pim`,
:data:`MAX_TICK`, ...). The front ends (:mod:`~sieve.dram.device`,
:mod:`~sieve.dram.controller`, :mod:`~sieve.dram.pim_device`) reach the engine only through
these names. Importing it raises :class:`~sieve.errors.NotBuiltError` (with the build
command) when the engine is not built.
"""

from __future__ import annotations

from collections.abc import Sequence

from sieve.dram.commands import COMMANDS
from sieve.dram.log import LOG_FIELDS
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, NotBuiltError, SieveError, TimingViolation

try:
    from sieve import _dram
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    raise NotBuiltError.of("DRAM engine", "sieve._dram", exc) from None

__all__ = [
    "DEBUG_BUILD",
    "KERNEL_FIELDS",
    "LIFECYCLES",
    "MAX_TICK",
    "MAX_VPP",
    "PULL_IN_INTERVALS",
    "STATUS_MESSAGES",
    "Engine",
    "RequestRun",
    "named_counts",
    "run_pim",
]

#: True when the extension was built with SIEVE_CYTHON_DEBUG=1 (bounds checks on).
DEBUG_BUILD: bool = bool(_dram.DEBUG_BUILD)

# The engine's command ids are compile-time constants (_dram.pxd); they must match the spec.
_ENGINE_ORDER = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFpb", "ACTAB",
                 "MACAB", "PREAB", "GWRITE", "RDRES", "ACTSB", "MACSB", "PRESB", "ACTPB",
                 "MACPB", "PREPB")
assert tuple(c.name for c in COMMANDS) == _ENGINE_ORDER, "commands.COMMANDS and _dram.pxd disagree"
assert tuple(_dram.LOG_FIELDS) == LOG_FIELDS, \
    "sieve.dram.log.LOG_FIELDS and the engine's LogRec disagree"

#: Engine status codes (E_* in _dram.pxd) -> explanation.
STATUS_MESSAGES = {
    1: "issued before its earliest legal tick",
    2: "bank has an open row (precharge it first)",
    3: "bank is closed (activate a row first)",
    4: "a different row is open in the bank",
    5: "the row is not open in every bank the PIM MAC reads (ACTAB / ACTSB / ACTPB first)",
    6: "refresh needs every bank closed",
    7: "command is not part of this spec (PIM command on a DRAM without PIM units)",
    8: "column command off a rising clock edge",
    9: "out of memory for the command log",
    10: "no progress (livelock): work was waiting but no data command could issue for many "
        "refresh intervals",
    11: "barriers that can never all be reached (PCs meet barrier sets in different orders)",
}

# ---- the engine's surface used by the front ends (nothing else reaches sieve._dram) -------
#: Device state and the single-command API (``Engine(arrays, n_channels, log)``).
Engine = _dram.Engine
#: One request-trace run over an :data:`Engine` (front end 1, ``_dram_requests.pxi``).
RequestRun = _dram.RequestRun
#: Runs one PIM program on an :data:`Engine` (front end 2, ``_dram_pim.pxi``).
run_pim = _dram.run_pim
#: Largest tick the engine represents (times are checked against it before a run).
MAX_TICK: int = _dram.MAX_TICK
#: Largest ``vectors_per_pass`` of a kernel (the engine's per-pass bound).
MAX_VPP: int = _dram.MAX_VPP
#: Field order of a kernel descriptor row as the engine reads it.
KERNEL_FIELDS = _dram.KERNEL_FIELDS
#: How many refresh intervals a refresh may be pulled in before a run's start (idle "open").
PULL_IN_INTERVALS: int = _dram.PULL_IN_INTERVALS
#: Request lifecycles of the controller (:attr:`~sieve.dram.controller.ControllerConfig.lifecycle`),
#: in engine order.
LIFECYCLES: tuple[str, ...] = tuple(_dram.LIFECYCLES)


def named_counts(counts: Sequence[int]) -> dict[str, int]:
    """Per-command counts indexed as :data:`~sieve.dram.commands.COMMANDS` (the engine's
    order) as a dict by command name, zero counts left out."""
    return {c.name: int(counts[i]) for i, c in enumerate(COMMANDS) if counts[i]}


def _run_error(spec: DramSpec, what: str, status: int) -> SieveError:
    """The error for a run the engine stopped (status E_*)."""
    if status == 10:  # E_STALL
        return TimingViolation(
            f"{spec.name}: {what} stopped: {STATUS_MESSAGES[10]}; check the spec's timings "
            f"against its refresh interval (nREFI {spec.timing.nREFI} CK, nRFC "
            f"{spec.timing.nRFC} CK)")
    if status == 11:  # E_BARRIER
        return ConfigError(f"{spec.name}: {what} stopped: {STATUS_MESSAGES[11]}")
    return TimingViolation(f"{spec.name}: {what} stopped: "
                           f"{STATUS_MESSAGES.get(status, f'engine status {status}')}")
