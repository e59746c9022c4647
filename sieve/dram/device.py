"""The only door into the compiled engine ``sieve._dram``.

This module validates inputs, turns a :class:`~sieve.dram.spec.DramSpec` into flat arrays, runs
the engine and returns result dataclasses. Three ways in:

* :class:`DramDevice` - one command at a time: :meth:`~DramDevice.earliest`,
  :meth:`~DramDevice.probe`, strict :meth:`~DramDevice.issue` (raises
  :class:`~sieve.errors.TimingViolation`); the basis of the tight-gate tests.
* :func:`simulate_requests` - front end 1: a read/write request trace through an address
  mapper and per-channel FR-FCFS controllers (``_dram_requests.pxi``).
* :func:`run_pim` - front end 2: PIM programs (GEMV kernel descriptors) expanded to commands
  inside the engine (``_dram_pim.pxi``).

Times returned to users are in memory-clock cycles (CK, ``*_ck``) and nanoseconds (``*_ns``);
engine ticks (``*_ticks``) appear only where exactness matters (logs, gates).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from sieve.dram.commands import COMMAND_INDEX, COMMANDS, LEVEL_INDEX
from sieve.dram.log import LOG_DTYPE
from sieve.dram.mapping import AddressMapper
from sieve.dram.memtrace import CHUNK_REQUESTS, RequestTrace, TraceFile, open_trace
from sieve.dram.pimmode import OVERHEADS, mode_sequences, reserved_rows, result_rows
from sieve.dram.presets import PRESETS, get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, NotBuiltError, SieveError, TimingViolation
from sieve.validate import check_bool, check_int

try:
    from sieve import _dram
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    raise NotBuiltError.of("DRAM engine", "sieve._dram", exc) from None

__all__ = [
    "DEBUG_BUILD",
    "LOG_DTYPE",
    "STATUS_MESSAGES",
    "Address",
    "DramDevice",
    "DramResult",
    "GemvKernel",
    "IDLE_POLICIES",
    "PimDevice",
    "PimResult",
    "ProgramMemo",
    "ControllerConfig",
    "run_pim",
    "simulate_requests",
]

#: True when the extension was built with SIEVE_CYTHON_DEBUG=1 (bounds checks on).
DEBUG_BUILD: bool = bool(_dram.DEBUG_BUILD)

# The engine's command ids are compile-time constants (_dram.pxd); they must match the spec.
_ENGINE_ORDER = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFpb", "ACTAB",
                 "MACAB", "PREAB", "GWRITE", "RDRES", "ACTSB", "MACSB", "PRESB")
assert tuple(c.name for c in COMMANDS) == _ENGINE_ORDER, "commands.COMMANDS and _dram.pxd disagree"
assert _dram.LOG_DTYPE == LOG_DTYPE, "sieve.dram.log.LOG_DTYPE and the engine's LogRec disagree"

#: Engine status codes (E_* in _dram.pxd) -> explanation.
STATUS_MESSAGES = {
    1: "issued before its earliest legal tick",
    2: "bank has an open row (precharge it first)",
    3: "bank is closed (activate a row first)",
    4: "a different row is open in the bank",
    5: "the row is not open in every bank of the pseudo-channel (ACTAB first)",
    6: "refresh needs every bank closed",
    7: "command is not part of this spec (PIM command on a DRAM without PIM units)",
    8: "column command off a rising clock edge",
    9: "out of memory for the command log",
    10: "no progress (livelock): work was waiting but no data command could issue for many "
        "refresh intervals",
    11: "barriers that can never all be reached (PCs meet barrier sets in different orders)",
}


class Address(NamedTuple):
    """A DRAM address. Pseudo-channel-scope commands ignore sid/bg/bank."""

    ch: int = 0
    pc: int = 0
    sid: int = 0
    bg: int = 0
    bank: int = 0
    row: int = -1
    col: int = -1


class DramDevice:
    """A memory system of ``channels`` channels driven one command at a time.

    Args:
        spec: a :class:`DramSpec` or preset name.
        channels: channels to model (default: every channel of the spec).
        log: keep a command log (see :meth:`log`).
    """

    def __init__(self, spec: DramSpec | str, channels: int | None = None, log: bool = False):
        self.spec = get_spec(spec)
        total = self.spec.org.total_channels
        # integers only (2.7, "3", True and NaN are refused, not coerced), at most the spec's
        self.channels = total if channels is None else check_int(
            "DramDevice", "channels", channels, lo=1, hi=total)
        self._engine = _dram.Engine(self.spec.to_arrays(), self.channels,
                                    check_bool("DramDevice", "log", log))
        self.tick_ns = self.spec.tick_ns
        self._last_tick = [0] * self.channels  # issue order must follow time, per channel

    # ---- addressing ----------------------------------------------------------------------
    def _cmd(self, cmd: str | int) -> int:
        if isinstance(cmd, str):
            if cmd not in COMMAND_INDEX:
                raise ConfigError(f"DRAM command {cmd!r}: unknown (known: "
                                  f"{', '.join(COMMAND_INDEX)})")
            return COMMAND_INDEX[cmd]
        if isinstance(cmd, bool) or not isinstance(cmd, (int, np.integer)) or not (
                0 <= cmd < len(COMMANDS)):
            raise ConfigError(f"DRAM command id {cmd!r}: not a name or an id in "
                              f"[0, {len(COMMANDS)})")
        return int(cmd)

    def _check_addr(self, cmd: int, a: Address) -> None:
        o = self.spec.org
        limits = (("ch", self.channels), ("pc", o.pseudochannels), ("sid", o.sids),
                  ("bg", o.bankgroups), ("bank", o.banks))
        scope = LEVEL_INDEX[COMMANDS[cmd].scope]
        for i, (name, n) in enumerate(limits):
            v = getattr(a, name)
            if i <= scope and not 0 <= v < n:
                raise ConfigError(f"{self.spec.name}: address {name}={v} out of range "
                                  f"[0, {n})")
        if a.row >= o.rows:
            raise ConfigError(f"{self.spec.name}: row {a.row} out of range [0, {o.rows})")
        if a.col >= o.columns:
            raise ConfigError(f"{self.spec.name}: column {a.col} out of range "
                              f"[0, {o.columns})")

    @staticmethod
    def _addr(addr: Address | Iterable[int] | None) -> Address:
        if addr is None:
            return Address()
        try:
            a = addr if isinstance(addr, Address) else Address(*addr)
        except TypeError:
            raise ConfigError(f"DRAM address: expected (ch, pc, sid, bg, bank[, row, col]), "
                              f"got {addr!r}") from None
        for name, v in zip(Address._fields, a):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (
                    -2**31 <= v < 2**31):
                raise ConfigError(f"DRAM address: {name} must be a 32-bit integer, got {v!r}")
        return Address(*(int(v) for v in a))

    # ---- single commands -----------------------------------------------------------------
    def earliest(self, cmd: str | int, addr: Address | Iterable[int] | None = None, *,
                 aligned: bool = True) -> int:
        """Earliest tick at which ``cmd`` is legal at ``addr`` by timing. Column commands are
        moved to the next rising clock edge unless ``aligned=False`` (the raw bound of the
        timing rows). Bank state is not considered; see :meth:`state_ok`."""
        c = self._cmd(cmd)
        a = self._addr(addr)
        self._check_addr(c, a)
        return int(self._engine.earliest(c, a.ch, a.pc, a.sid, a.bg, a.bank, aligned))

    def state_ok(self, cmd: str | int, addr: Address | Iterable[int] | None = None) -> bool:
        """Whether the bank state allows ``cmd`` (right row open, bank closed for ACT, ...)."""
        c = self._cmd(cmd)
        a = self._addr(addr)
        self._check_addr(c, a)
        return self._engine.state_check(c, a.ch, a.pc, a.sid, a.bg, a.bank, a.row) == 0

    def probe(self, cmd: str | int, addr: Address | Iterable[int] | None, clk: int) -> bool:
        """Read-only: would ``cmd`` be legal at tick ``clk``? (timing, edge and bank state)"""
        c = self._cmd(cmd)
        a = self._addr(addr)
        self._check_addr(c, a)
        clk = self._tick(clk)
        align = self.spec.timing.ticks_per_ck if COMMANDS[c].bus == 1 else 1
        return (clk >= self._engine.earliest(c, a.ch, a.pc, a.sid, a.bg, a.bank)
                and clk % align == 0 and self.state_ok(c, a))

    @staticmethod
    def _tick(clk) -> int:
        if isinstance(clk, bool) or not isinstance(clk, (int, np.integer)) or not (
                -_dram.MAX_TICK <= clk <= _dram.MAX_TICK):
            raise ConfigError(f"DRAM command: tick must be an integer in [-2**61, 2**61], "
                              f"got {clk!r}")
        return int(clk)

    def issue(self, cmd: str | int, addr: Address | Iterable[int] | None, clk: int) -> None:
        """Issue ``cmd`` at tick ``clk``; raises :class:`TimingViolation` if it is illegal."""
        c = self._cmd(cmd)
        a = self._addr(addr)
        self._check_addr(c, a)
        clk = self._tick(clk)
        if clk < self._last_tick[a.ch]:
            raise TimingViolation(
                f"{self.spec.name}: {COMMANDS[c].name} at tick {clk} is earlier than a command "
                f"already issued on channel {a.ch} (tick {self._last_tick[a.ch]}): the engine "
                "is driven in time order")
        rc = self._engine.issue(c, a.ch, a.pc, a.sid, a.bg, a.bank, a.row, a.col, int(clk))
        if rc == 0:
            self._last_tick[a.ch] = int(clk)
        else:
            earliest = self._engine.earliest(c, a.ch, a.pc, a.sid, a.bg, a.bank)
            raise TimingViolation(
                f"{self.spec.name}: {COMMANDS[c].name} at tick {clk} to {a}: "
                f"{STATUS_MESSAGES.get(rc, f'status {rc}')} (earliest by timing: {earliest})"
            )

    def force_issue(self, cmd: str | int, addr: Address | Iterable[int] | None,
                    clk: int) -> None:
        """Record ``cmd`` at ``clk`` without any timing or state check (to build faulty logs
        for the checker); the address must still exist."""
        c = self._cmd(cmd)
        a = self._addr(addr)
        self._check_addr(c, a)
        clk = self._tick(clk)
        self._engine.issue(c, a.ch, a.pc, a.sid, a.bg, a.bank, a.row, a.col, int(clk), True)
        self._last_tick[a.ch] = max(self._last_tick[a.ch], int(clk))

    # ---- state and results -----------------------------------------------------------------
    def reset(self) -> None:
        self._engine.reset()
        self._last_tick = [0] * self.channels

    def log(self) -> np.ndarray:
        """The command log (LOG_DTYPE) in issue order; empty unless created with log=True."""
        return self._engine.get_log()

    def command_counts(self) -> dict[str, int]:
        counts = self._engine.counts()
        return {c.name: int(counts[i]) for i, c in enumerate(COMMANDS) if counts[i]}

    def open_rows(self, buffer: int = 0) -> np.ndarray:
        """Open row of every bank (-1 closed) in row buffer ``buffer`` (1 = the PIM buffer of
        a spec with dual row buffers)."""
        n = 2 if (self.spec.pim is not None and self.spec.pim.dual_row_buffer) else 1
        if isinstance(buffer, bool) or buffer not in range(n):
            raise ConfigError(f"{self.spec.name}: row buffer {buffer!r} out of range [0, {n})")
        return self._engine.open_rows(int(buffer))

    def ns(self, ticks: int) -> float:
        return ticks * self.tick_ns


# ============================================================================================
# Front end 1: memory requests
# ============================================================================================


@dataclass(frozen=True)
class DramResult:
    """Statistics of a request-trace simulation (front end 1)."""

    spec: str
    mapping: str
    channels: int
    page_policy: str
    requests: int
    reads: int
    writes: int
    request_bytes: int
    cycles: int  # memory CK until the last request completed
    time_ns: float
    bandwidth_gbs: float  # bytes moved / time (decimal GB/s)
    peak_bandwidth_gbs: float  # of the simulated channels
    latency_mean_ns: float  # read latency: accepted by the controller -> last data beat
    latency_p99_ns: float
    row_hits: int
    row_misses: int
    row_conflicts: int
    command_counts: dict[str, int]
    refreshes: int
    latency_ns: np.ndarray | None = field(repr=False)  # per read request (None: streamed)
    pc_bursts: np.ndarray = field(repr=False)  # column commands per pseudo-channel
    log: np.ndarray | None = field(default=None, repr=False)
    controller: ControllerConfig | None = None
    #: memory CK until the last request entered the controller (Ramulator 2's LoadStoreTrace
    #: ends its simulation there, without the drain that ``cycles`` includes)
    accept_cycles: int = 0
    #: per log record: the request type it served, 0 read / 1 write / -1 refresh (the 'type'
    #: column of Ramulator 2.1's command trace); with ``log``
    log_type: np.ndarray | None = field(default=None, repr=False)
    #: where the trace came from (file path or generator description)
    source: str = ""

    @property
    def row_hit_rate(self) -> float:
        return self.row_hits / self.requests if self.requests else 0.0

    @property
    def bandwidth_utilization(self) -> float:
        return self.bandwidth_gbs / self.peak_bandwidth_gbs if self.peak_bandwidth_gbs else 0.0

    def to_dict(self) -> dict:
        """Machine-readable summary (what `sieve dram --json` prints)."""
        return {
            "spec": self.spec, "mapping": self.mapping, "channels": self.channels,
            "page_policy": self.page_policy, "requests": self.requests, "reads": self.reads,
            "writes": self.writes, "request_bytes": self.request_bytes, "cycles": self.cycles,
            "time_ns": self.time_ns, "bandwidth_gbs": self.bandwidth_gbs,
            "peak_bandwidth_gbs": self.peak_bandwidth_gbs,
            "bandwidth_utilization": self.bandwidth_utilization,
            "latency_mean_ns": self.latency_mean_ns, "latency_p99_ns": self.latency_p99_ns,
            "row_hits": self.row_hits, "row_misses": self.row_misses,
            "row_conflicts": self.row_conflicts, "row_hit_rate": self.row_hit_rate,
            "refreshes": self.refreshes, "command_counts": dict(self.command_counts),
            "controller": self.controller.to_dict() if self.controller else None,
            "accept_cycles": self.accept_cycles,
        }

    def summary(self) -> str:
        """A Ramulator-like plain-text stats block."""
        lines = [
            f"memory_system: {self.spec}  ({self.channels} channel(s), mapping {self.mapping}, "
            f"{self.page_policy}-page, FR-FCFS"
            + (f", queues {self.controller.queue_size}, write drain "
               f"{self.controller.write_thresholds()[0]}->{self.controller.write_thresholds()[1]}"
               if self.controller else "") + ")",
            f"  total_num_read_requests:  {self.reads}",
            f"  total_num_write_requests: {self.writes}",
            f"  memory_system_cycles:     {self.cycles}  (last request accepted at "
            f"{self.accept_cycles})",
            f"  time:                     {self.time_ns:.1f} ns",
            f"  bandwidth:                {self.bandwidth_gbs:.2f} GB/s "
            f"({100 * self.bandwidth_utilization:.1f} % of {self.peak_bandwidth_gbs:.1f} GB/s)",
            f"  avg_read_latency:         {self.latency_mean_ns:.2f} ns",
            f"  p99_read_latency:         {self.latency_p99_ns:.2f} ns",
            f"  row_hits / misses / conflicts: {self.row_hits} / {self.row_misses} / "
            f"{self.row_conflicts}  (hit rate {100 * self.row_hit_rate:.1f} %)",
            f"  refreshes:                {self.refreshes}",
            "  commands:                 " + ", ".join(f"{k} {v}" for k, v in
                                                       self.command_counts.items()),
        ]
        return "\n".join(lines)


#: Page policies of the request controller.
PAGE_POLICIES = ("closed", "open")
#: Request lifecycles of the controller (:attr:`ControllerConfig.lifecycle`), in engine order.
LIFECYCLES: tuple[str, ...] = tuple(_dram.LIFECYCLES)


@dataclass(frozen=True)
class ControllerConfig:
    """The request controller's knobs (front end 1, one controller per channel). Frozen.

    Attributes:
        queue_size: read-queue and write-queue entries per channel (each). Default 32:
            Ramulator 2's ``ReqBuffer`` default ``max_size`` (src/dram_controller/controller.h
            of CMU-SAFARI/ramulator2; shared/reference/ramulator2.md: 32-entry queues).
        write_high_watermark: the controller enters write mode when the write queue holds at
            least ``max(1, floor(queue_size * write_high_watermark))`` requests (or the read
            queue is empty). Default 0.8: Ramulator 2 ``GenericDRAMController``
            ``wr_high_watermark`` (which enters at strictly more than 0.8 x 32 = 25.6, i.e.
            26 writes; sieve enters at 25 - kept from sieve's earlier releases).
        write_low_watermark: write mode is left when the write queue holds at most
            ``floor(queue_size * write_low_watermark)`` requests and reads are waiting, or it
            is empty. Default 0.2: Ramulator 2 ``wr_low_watermark`` (leaves below 6.4, i.e.
            at 6 writes, as sieve).
        page_policy: ``"open"`` (rows stay open) or ``"closed"`` (RDA/WRA when no other
            queued request hits the row).
        lifecycle: how a request moves through the controller. ``"sieve"`` (default): a
            request stays queued until its last burst, row hits go first among ready commands
            and a row is not closed while a queued request hits it, refresh holds only its
            own pseudo-channel. ``"ramulator2"``: Ramulator 2.1's generic controller with its
            HBM3/4 tick: a request moves to an active buffer when its ACT issues (freeing its
            queue slot), FR-FCFS is ready-first then oldest with the active buffer first, a
            refresh holds every queued request of the channel, ACT/REF issue on rising edges,
            and the write thresholds are strict (sieve._dram.RequestRun lists every rule;
            docs/validation.md compares both with Ramulator 2.1).
        inject_per_tick: requests the front end may hand to the controllers per engine tick
            (all channels together); 0 = as many as the queues take. Ramulator 2.1's
            LoadStoreTrace sends one per front-end tick, i.e. ``clock_ratio`` per memory tick
            (one tick = half a CK on HBM3). Default: 0 for the sieve lifecycle, 1 for
            ramulator2 (``None`` picks it).
    """

    queue_size: int = 32
    write_high_watermark: float = 0.8
    write_low_watermark: float = 0.2
    page_policy: str = "open"
    lifecycle: str = "sieve"
    inject_per_tick: int | None = None

    #: Largest queue accepted (the queues are lists over the trace; this bounds nothing in
    #: memory, it only rejects typos such as 10**12).
    MAX_QUEUE = 1 << 20

    def __post_init__(self):
        who = "controller"
        q = self.queue_size
        if isinstance(q, bool) or not isinstance(q, (int, np.integer)) or not (
                1 <= q <= self.MAX_QUEUE):
            raise ConfigError(f"{who}: queue_size must be an integer in [1, {self.MAX_QUEUE}], "
                              f"got {q!r}")
        for name in ("write_high_watermark", "write_low_watermark"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                    or not 0.0 <= float(v) <= 1.0:
                raise ConfigError(f"{who}: {name} must be a number in [0, 1], got {v!r}")
        if not self.write_low_watermark < self.write_high_watermark:
            raise ConfigError(f"{who}: write_low_watermark ({self.write_low_watermark}) must be "
                              f"below write_high_watermark ({self.write_high_watermark})")
        if self.page_policy not in PAGE_POLICIES:
            raise ConfigError(f"{who}: page policy {self.page_policy!r} unknown (known: "
                              f"{', '.join(PAGE_POLICIES)})")
        if self.lifecycle not in LIFECYCLES:
            raise ConfigError(f"{who}: lifecycle {self.lifecycle!r} unknown (known: "
                              f"{', '.join(LIFECYCLES)})")
        ipt = self.inject_per_tick
        if ipt is None:
            object.__setattr__(self, "inject_per_tick", 1 if self.lifecycle == "ramulator2"
                               else 0)
        elif isinstance(ipt, bool) or not isinstance(ipt, (int, np.integer)) or not (
                0 <= ipt <= self.MAX_QUEUE):
            raise ConfigError(f"{who}: inject_per_tick must be an integer in [0, "
                              f"{self.MAX_QUEUE}] (0 = unlimited), got {ipt!r}")
        else:
            object.__setattr__(self, "inject_per_tick", int(ipt))

    def write_thresholds(self) -> tuple[int, int]:
        """(enter, leave) write-queue fills of the write mode: it is entered at ``>= enter``
        queued writes and left at ``<= leave``. Computed exactly from the decimal watermarks
        (0.8 of 32 is 25.6, not a binary rounding of it): sieve enters at ``floor(0.8 q)``
        and leaves at ``floor(0.2 q)``; ramulator2 enters above ``0.8 q`` and leaves below
        ``0.2 q`` (``ControllerBase::set_write_mode``), i.e. 26 and 6 for 32 entries."""
        from fractions import Fraction

        q = int(self.queue_size)
        hi_x = Fraction(repr(float(self.write_high_watermark))) * q
        lo_x = Fraction(repr(float(self.write_low_watermark))) * q
        if self.lifecycle == "ramulator2":
            return math.floor(hi_x) + 1, max(0, math.ceil(lo_x) - 1)
        return max(1, math.floor(hi_x)), math.floor(lo_x)

    def to_dict(self) -> dict:
        return {"queue_size": int(self.queue_size),
                "write_high_watermark": float(self.write_high_watermark),
                "write_low_watermark": float(self.write_low_watermark),
                "page_policy": self.page_policy, "lifecycle": self.lifecycle,
                "inject_per_tick": int(self.inject_per_tick)}


def simulate_requests(spec: DramSpec | str, trace: RequestTrace | TraceFile | str | Path, *,
                      channels: int | None = None, mapping: str | Sequence[str] = "sieve",
                      request_bytes: int = 64, controller: ControllerConfig | None = None,
                      queue_size: int | None = None, page_policy: str | None = None,
                      log: bool = False, log_sink: Callable[[np.ndarray, np.ndarray], Any]
                      | None = None, chunk_requests: int = CHUNK_REQUESTS) -> DramResult:
    """Run a request trace through per-channel FR-FCFS controllers (front end 1).

    Args:
        spec: memory spec or preset name (its PIM units, if any, are unused here).
        trace: requests in memory (:class:`~sieve.dram.memtrace.RequestTrace`), or a trace
            file streamed in chunks (:class:`~sieve.dram.memtrace.TraceFile`, or a path that
            :func:`~sieve.dram.memtrace.open_trace` opens): memory is then bounded by the
            queues and a read buffer, not by the file. Both give the same results; only the
            per-request ``latency_ns`` is left out (None) for a streamed trace.
        channels: channels the address space is interleaved over (default: all of the spec;
            1 = a single controller, as Ramulator 2.1 runs one controller per channel).
        mapping: address mapping preset or field list (sieve.dram.mapping).
        request_bytes: bytes per request (a multiple of the 32 B burst; 64 B = 2 bursts).
        controller: the controller's knobs (default :class:`ControllerConfig()`).
        queue_size, page_policy: shortcuts that replace those fields of ``controller``
            (kept for callers of earlier releases).
        log: return the full command log (LOG_DTYPE) in the result, with each command's
            request type in ``log_type`` (the log is held in memory: 48 B per command).
        log_sink: stream the command log instead: called as ``log_sink(records, types)``
            with the commands issued since its last call (LOG_DTYPE records in issue order and
            their request types, as ``log`` gives them) after every chunk of requests and once
            at the end, so memory stays bounded whatever the log's length (e.g.
            :meth:`sieve.dram.log.LogWriter.write`); the result then holds no log.
        chunk_requests: requests decoded and handed to the engine at a time.

    Raises:
        ConfigError: bad arguments; TraceFormatError: a malformed trace file (the run stops
        at the first bad line or record); TimingViolation: the engine stopped (livelock).
    """
    spec = get_spec(spec)
    if controller is None:
        controller = ControllerConfig()
    elif not isinstance(controller, ControllerConfig):
        raise ConfigError(f"controller: expected a ControllerConfig, got "
                          f"{type(controller).__name__}")
    changes = {k: v for k, v in (("queue_size", queue_size), ("page_policy", page_policy))
               if v is not None}
    if changes:
        controller = dataclasses.replace(controller, **changes)
    if isinstance(trace, (str, Path)):
        trace = open_trace(trace)
    if not isinstance(trace, (RequestTrace, TraceFile)):
        raise ConfigError(f"request trace: expected a RequestTrace, a TraceFile or a path, got "
                          f"{type(trace).__name__}")
    in_memory = isinstance(trace, RequestTrace)
    if in_memory and len(trace) == 0:
        raise ConfigError("request trace: empty")
    # (bounded: a file trace's reader allocates a chunk's arrays up front)
    chunk_requests = check_int("request simulation", "chunk_requests", chunk_requests, lo=1,
                               hi=1 << 24)
    if log_sink is not None:
        if not callable(log_sink):
            raise ConfigError(f"request simulation: log_sink must be callable, got "
                              f"{type(log_sink).__name__}")
        if log is True:
            raise ConfigError("request simulation: give log=True (log in the result) or "
                              "log_sink (log streamed), not both")
    mapper = AddressMapper(spec, mapping, channels=channels, request_bytes=request_bytes)
    # rows the spec's PIM mode protocol gives a meaning (HBM-PIM's ABMR/SBMR/register rows):
    # host traffic there would switch the device's mode, which this front end does not model
    reserved = np.asarray(reserved_rows(spec), dtype=np.int64)
    dev = DramDevice(spec, channels=mapper.channels, log=log or log_sink is not None)
    eng = dev._engine
    tpc = spec.timing.ticks_per_ck
    hi, lo = controller.write_thresholds()
    run = _dram.RequestRun(eng, mapper.bursts, int(controller.queue_size), hi, lo,
                           controller.page_policy == "closed",
                           LIFECYCLES.index(controller.lifecycle),
                           int(controller.inject_per_tick))
    if in_memory:
        n = len(trace)
        inject = np.zeros(n, dtype=np.int64)
        depart = np.zeros(n, dtype=np.int64)
        rclass = np.full(n, -1, dtype=np.int8)
        run.set_outputs(inject, depart, rclass)
    chunks = trace.chunks(chunk_requests)
    n_reads = n_writes = 0
    rc = run.advance()
    while rc == 1:  # RUN_NEED_INPUT
        part = next(chunks, None)
        if part is None:
            run.finish_input()
        else:
            addr, w, arr = part
            k = len(addr)
            if arr is None:
                arrive = np.zeros(k, dtype=np.int64)
            else:
                if k and int(arr[-1]) * tpc > _dram.MAX_TICK:
                    raise ConfigError(f"request trace: arrival cycles beyond "
                                      f"{_dram.MAX_TICK // tpc} CK")
                arrive = np.ascontiguousarray(arr * tpc, dtype=np.int64)
            dec = mapper.decode(addr)
            if reserved.size:
                hit = np.flatnonzero(np.isin(dec.ro, reserved))
                if hit.size:
                    i = int(hit[0])
                    raise ConfigError(
                        f"request trace {trace.source!r}: request {n_reads + n_writes + i} "
                        f"(address {int(addr[i]):#x}) maps to row {int(dec.ro[i]):#x}, which "
                        f"{spec.name}'s PIM mode protocol reserves (rows "
                        f"{', '.join(f'{r:#x}' for r in reserved.tolist())}: an access there "
                        "switches the device's mode, which the request front end does not "
                        "model); keep the trace's addresses out of those rows, or simulate "
                        "plain memory without the protocol (sieve dram --set pim.modes=none "
                        "--set pim.park=false --set pim.crf_bursts=0)")
            nw = int(np.count_nonzero(w))
            n_writes += nw
            n_reads += k - nw
            run.feed(arrive, dec.ch, dec.pc, dec.sid, dec.bg, dec.ba, dec.ro, dec.co,
                     np.ascontiguousarray(w, dtype=np.int8), addr)
        rc = run.advance()
        if log_sink is not None:
            log_sink(eng.take_log(), run.take_log_types())
    if rc < 0:
        raise _run_error(spec, "request simulation", eng.last_status)
    st = run.stats()
    n = n_reads + n_writes
    lat_ns = None
    if in_memory:
        reads = ~trace.is_write
        lat_ns = (depart[reads] - inject[reads]) * spec.tick_ns
    end = int(st["end_tick"])
    counts = dev.command_counts()
    cycles = -(-end // tpc)
    time_ns = end * spec.tick_ns
    nbytes = n * request_bytes
    return DramResult(
        spec=spec.name, mapping=mapper.name, channels=mapper.channels,
        page_policy=controller.page_policy,
        requests=n, reads=n_reads, writes=n_writes,
        request_bytes=request_bytes, cycles=cycles, time_ns=float(time_ns),
        bandwidth_gbs=nbytes / time_ns if time_ns > 0 else 0.0,
        peak_bandwidth_gbs=spec.pc_peak_bytes_per_ns * mapper.channels * spec.org.pseudochannels,
        latency_mean_ns=(st["latency_sum_ticks"] * spec.tick_ns / st["reads"]
                         if st["reads"] else 0.0),
        latency_p99_ns=_percentile_ticks(st["latency_hist"], st["latency_tail"], 99.0)
        * spec.tick_ns,
        row_hits=int(st["hits"]), row_misses=int(st["misses"]),
        row_conflicts=int(st["conflicts"]), command_counts=counts,
        refreshes=counts.get("REFab", 0) + counts.get("REFpb", 0),
        latency_ns=lat_ns, pc_bursts=st["pc_bursts"], log=dev.log() if log else None,
        controller=controller, accept_cycles=int(st["last_inject_tick"]) // tpc,
        log_type=run.log_types() if log else None, source=trace.source,
    )


def _percentile_ticks(hist: np.ndarray, tail: np.ndarray, q: float) -> float:
    """The q-th percentile (numpy's default, linear between order statistics) of latencies
    given as a histogram (``hist[t]`` = requests of t ticks) plus the sorted long tail."""
    n_h = int(hist.sum())
    n = n_h + len(tail)
    if n == 0:
        return 0.0
    cum = np.cumsum(hist)

    def kth(k: int) -> int:
        if k < n_h:
            return int(np.searchsorted(cum, k, side="right"))
        return int(tail[k - n_h])

    pos = (n - 1) * q / 100.0
    k = math.floor(pos)
    lo_v = kth(k)
    hi_v = kth(min(k + 1, n - 1))
    return lo_v + (hi_v - lo_v) * (pos - k)


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


# ============================================================================================
# Front end 2: PIM programs
# ============================================================================================


#: What a :class:`PimDevice` does where a pseudo-channel has no work (``PimDevice(idle=)``):
#: ``"open"`` leaves rows open and defers the refreshes of channels without work to their next
#: work; ``"closed"`` closes a PC's PIM row when its stream ends and refreshes idle PCs on
#: schedule (docs/model-of-computation.md, *Front end 2*, idle policy).
IDLE_POLICIES = ("open", "closed")

#: Barrier scopes of a kernel (:attr:`GemvKernel.sync`).
BARRIER_SCOPES = ("channel", "all", "group")

#: Largest count accepted in a kernel descriptor (sanity bound: 2**40 vectors, chunks, ...).
MAX_KERNEL_COUNT = 1 << 40


@dataclass(frozen=True)
class GemvKernel:
    """One GEMV kernel as run by ONE pseudo-channel's PIM units (a kernel descriptor).

    The engine expands it, per input vector (token), into::

        for chunk in range(n_chunks):                 # global-buffer fills
            GWRITE x gw_per_chunk                     # the input-vector slice
            for r in range(rows_per_chunk):           # all-bank row activations
                [PREAB] ACTAB(row), MACAB x macs_per_row
        RDRES x n_res                                 # results back to the host

    With ``vectors_per_pass = v > 1`` (a PU that applies several input vectors to one column
    read: grouped-query attention, skinny GEMMs; ``spec.pim.vectors_per_read``) the vectors
    run in passes of up to ``v``: a pass writes ``gw_per_chunk`` bursts per chunk *for each of
    its vectors*, streams the weights once (every MACAB feeds all of them) and reads ``n_res``
    bursts back per vector.

    ``row = base_row + chunk * rows_per_chunk + r`` (every row must exist: a kernel whose
    weights do not fit in a bank is refused); PREAB/ACTAB are skipped while the needed row is
    already open. Vectors are serialized, as the seed's PIM executes a multi-token expert
    (seed §5 "serialized GEMV operations"). Build descriptors with :func:`sieve.pim.gemv_kernel`
    rather than by hand. A kernel ends with its last result (last RDRES + read latency), or
    without readback (``n_res = 0``) one CK after its last command.

    Attributes:
        gap_ns: idle time between the previous kernel's end (or the program's start, or the
            barrier) and this kernel's first command on the same PC (e.g. the GPU-side
            activation between two GEMVs).
        sync: makes the kernel a barrier (a GPU step that needs the results of several PCs):
            ``False`` (none); ``True`` or ``"channel"``: the PCs of its channel; ``"all"``:
            every PC of the memory system, all channels of all stacks; ``"group"``: the PCs
            whose barrier kernels carry the same ``group`` (e.g. the PCs of one expert group
            under expert parallelism; groups do not wait for each other). The participants
            of the n-th barrier of a scope are the PCs (of that channel / of the system / of
            that group) whose streams hold more than n such kernels; each starts ``gap_ns``
            after the *latest* end among their kernels before it (docs/model-of-computation.md,
            *Front end 2*).
        group: the barrier group of a ``sync="group"`` kernel (an integer >= 0).
    """

    n_vectors: int
    n_chunks: int
    gw_per_chunk: int
    rows_per_chunk: int
    macs_per_row: int
    n_res: int
    base_row: int = 0
    gap_ns: float = 0.0
    sync: bool | str = False
    group: int = 0
    vectors_per_pass: int = 1

    def __post_init__(self):
        v = self.vectors_per_pass
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (
                1 <= v <= _dram.MAX_VPP):
            raise ConfigError(f"PIM kernel: vectors_per_pass must be an integer in "
                              f"[1, {_dram.MAX_VPP}], got {v!r}")
        for name in ("n_vectors", "n_chunks", "gw_per_chunk", "rows_per_chunk", "macs_per_row",
                     "n_res", "base_row"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (
                    0 <= v <= MAX_KERNEL_COUNT):
                raise ConfigError(f"PIM kernel: {name} must be an integer >= 0 and <= 2**40, "
                                  f"got {v!r}")
        if self.n_vectors < 1 or self.n_chunks < 1:
            raise ConfigError("PIM kernel: n_vectors and n_chunks must be >= 1")
        g = self.gap_ns
        if isinstance(g, bool) or not isinstance(g, (int, float, np.integer, np.floating)) \
                or not math.isfinite(g) or g < 0:
            raise ConfigError(f"PIM kernel: gap_ns must be a finite number >= 0, got {g!r}")
        if not (isinstance(self.sync, (bool, np.bool_)) or self.sync in BARRIER_SCOPES):
            raise ConfigError(f"PIM kernel: sync must be a bool or one of "
                              f"{', '.join(BARRIER_SCOPES)}, got {self.sync!r}")
        if isinstance(self.group, bool) or not isinstance(self.group, (int, np.integer)) or (
                self.group < 0):
            raise ConfigError(f"PIM kernel: group must be an integer >= 0, got {self.group!r}")

    @property
    def passes(self) -> int:
        """Passes over the weights: ``ceil(n_vectors / vectors_per_pass)``."""
        return -(-self.n_vectors // self.vectors_per_pass)

    @property
    def macs(self) -> int:
        """MACAB commands of the whole kernel."""
        return self.passes * self.n_chunks * self.rows_per_chunk * self.macs_per_row

    @property
    def rows_used(self) -> int:
        """DRAM rows per bank the kernel's weights occupy (0 when it issues no MAC)."""
        if self.rows_per_chunk == 0 or self.macs_per_row == 0:
            return 0
        return self.n_chunks * self.rows_per_chunk

    def dram_rows(self, bundles: int = 1) -> int:
        """DRAM rows per bank the weights occupy from ``base_row``: :attr:`rows_used`, or with
        ``bundles`` > 1 bank bundles (``spec.pim.bundles``) the rows striped over them (kernel
        row ``i`` in bundle ``i % bundles``, DRAM row ``base_row + i // bundles``)."""
        return -(-self.rows_used // bundles)

    def barrier_key(self, channel: int) -> tuple | None:
        """The barrier set this kernel belongs to on ``channel`` (None: no barrier)."""
        s = self.sync
        if s is False or (isinstance(s, np.bool_) and not s):
            return None
        if s is True or isinstance(s, np.bool_) or s == "channel":
            return ("channel", int(channel))
        if s == "all":
            return ("all",)
        return ("group", int(self.group))

    def _row(self, spec: DramSpec) -> list[int]:
        if self.macs_per_row > spec.pim_row_bursts:
            raise ConfigError(
                f"PIM kernel: macs_per_row ({self.macs_per_row}) exceeds the "
                f"{spec.pim_row_bursts} bursts a PU can read from one activated row")
        used = self.dram_rows(spec.pim.bundles)
        if used:  # the GRF_B writes of an "hbm-pim" protocol go to the row after the weights
            used += result_rows(spec)
        if used and self.base_row + used > spec.org.rows:
            extra = " and the result row after them" if result_rows(spec) else ""
            raise ConfigError(
                f"PIM kernel {self}: its weights{extra} need rows {self.base_row}.."
                f"{self.base_row + used - 1} of every bank ({used} rows from base_row "
                f"{self.base_row}) but a bank of {spec.name} has {spec.org.rows} rows")
        hit = [r for r in reserved_rows(spec) if used and self.base_row <= r < self.base_row + used]
        if hit:
            raise ConfigError(
                f"PIM kernel {self}: its weights use rows {self.base_row}.."
                f"{self.base_row + used - 1}, which hold row {hit[0]:#x} that the "
                f"{spec.pim.modes!r} mode protocol of {spec.name} reserves (reserved: "
                f"{', '.join(f'{r:#x}' for r in reserved_rows(spec))}); use base_row")
        gap = int(np.ceil(self.gap_ns / spec.tick_ns - 1e-9)) if self.gap_ns else 0
        if gap > _dram.MAX_TICK // 2:
            raise ConfigError(f"PIM kernel: gap_ns {self.gap_ns} is beyond the simulated time "
                              f"range ({_dram.MAX_TICK // 2 * spec.tick_ns:.3g} ns)")
        values = {
            "n_vectors": self.n_vectors, "n_chunks": self.n_chunks,
            "gw_per_chunk": self.gw_per_chunk, "rows_per_chunk": self.rows_per_chunk,
            "macs_per_row": self.macs_per_row, "n_res": self.n_res, "base_row": self.base_row,
            "gap_ticks": gap, "vectors_per_pass": self.vectors_per_pass,
        }
        return [int(values[f]) for f in _dram.KERNEL_FIELDS]  # the engine's descriptor layout


@dataclass(frozen=True)
class PimResult:
    """Outcome of one PIM program (front end 2). Times in ns of the memory clock domain.

    Times of a :class:`PimDevice` are absolute device times: ``start_ns`` is when the program
    was allowed to start, ``end_ns`` its latest kernel end (at least ``start_ns``);
    ``time_ns = end_ns - start_ns``. :func:`run_pim` starts at 0, so there both coincide.
    """

    spec: str
    n_pcs: int  # pseudo-channels (PIM channels) of the whole memory system
    simulated_channels: int  # channels actually simulated (1 when all channels are identical)
    cycles: int  # memory CK from start_ns until the last result is back
    time_ns: float  # duration: end_ns - start_ns
    pc_busy_ns: np.ndarray  # per PC: sum of its kernels' durations
    pc_finish_ns: np.ndarray  # per PC: its latest kernel end (start_ns if it ran none)
    kernel_ptr: np.ndarray  # CSR: kernels of PC q are kernel_*[kernel_ptr[q]:kernel_ptr[q+1]]
    kernel_start_ns: np.ndarray  # absolute
    kernel_end_ns: np.ndarray  # absolute
    command_counts: dict[str, int]  # over all PCs (replicated counts when simulated once)
    refreshes: int  # REFab issued during this program
    log: np.ndarray | None = field(default=None, repr=False)
    start_ns: float = 0.0
    end_ns: float | None = None  # (None: time_ns, for results built by hand)
    # per PC x sieve.dram.pimmode.OVERHEADS: ns its stream spent in each mode sequence and in
    # its read-backs (None: not recorded, for results built by hand)
    pc_overhead_ns: np.ndarray | None = field(default=None, repr=False)

    def __post_init__(self):
        if self.end_ns is None:
            object.__setattr__(self, "end_ns", self.start_ns + self.time_ns)

    @property
    def pc_utilization(self) -> np.ndarray:
        """Busy fraction of every PC over the program's duration."""
        return self.pc_busy_ns / self.time_ns if self.time_ns > 0 else self.pc_busy_ns * 0

    @property
    def imbalance(self) -> float:
        """max / mean PC busy time (1.0 = perfectly balanced)."""
        m = float(self.pc_busy_ns.mean())
        return float(self.pc_busy_ns.max()) / m if m > 0 else 1.0

    @property
    def overhead_ns(self) -> dict[str, float]:
        """Mean over PCs of the time each PC's in-order stream spent in every mode sequence
        (:data:`sieve.dram.pimmode.SEQUENCES`: park-in, SB->HAB, CRF writes, HAB->HAB_PIM,
        the GRF_A input writes of every chunk (``grf_a``, from the chunk's previous command:
        closing the MAC row, opening the register row), the GRF_B result writes of every
        vector (``grf_b``, likewise), HAB_PIM->HAB, HAB->SB, park-out; all 0 without a mode
        protocol, whose GWRITEs are part of the GEMV body) and in its result
        read-backs (``readback``). A span runs from the PC's command before the sequence (or
        the tick its kernel may start) to the sequence's last command; spans of one PC never
        overlap, so their sum is part of its busy time."""
        if self.pc_overhead_ns is None:
            return {}
        m = self.pc_overhead_ns.mean(axis=0)
        return {k: float(m[i]) for i, k in enumerate(OVERHEADS)}

    @property
    def mode_switch_ns(self) -> float:
        """Mean per PC of the mode transitions and park reads (every sequence but the CRF,
        GRF_A and GRF_B writes)."""
        o = self.overhead_ns
        return float(sum(v for k, v in o.items()
                         if k not in ("crf", "grf_a", "grf_b", "readback")))

    def kernel_times_ns(self, pc: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.kernel_ptr[pc], self.kernel_ptr[pc + 1]
        return self.kernel_start_ns[a:b], self.kernel_end_ns[a:b]

    def to_dict(self) -> dict:
        return {
            "spec": self.spec, "n_pcs": self.n_pcs,
            "simulated_channels": self.simulated_channels, "cycles": self.cycles,
            "time_ns": self.time_ns, "start_ns": self.start_ns, "end_ns": self.end_ns,
            "mean_pc_utilization": float(self.pc_utilization.mean()),
            "imbalance": self.imbalance, "refreshes": self.refreshes,
            "command_counts": dict(self.command_counts),
            "overhead_ns": self.overhead_ns,
        }


def _pim_spec(spec: DramSpec | str, who: str) -> DramSpec:
    spec = get_spec(spec)
    if spec.pim is None:
        raise ConfigError(f"{who}: spec {spec.name!r} has no PIM units (PIM presets: "
                          + ", ".join(n for n, s in _presets().items() if s.pim is not None)
                          + ")")
    return spec


def _streams(spec: DramSpec, program) -> list[tuple[GemvKernel, ...]]:
    """One kernel tuple per pseudo-channel (channel-major) from either form of a program."""
    n_pcs = spec.org.total_pseudochannels
    if isinstance(program, (str, bytes, GemvKernel)) or not isinstance(program, Sequence):
        raise ConfigError(f"PIM program: expected a list of GemvKernel or one list per "
                          f"pseudo-channel, got {type(program).__name__}")
    if len(program) and all(isinstance(k, GemvKernel) for k in program):
        return [tuple(program)] * n_pcs
    per_pc = []
    for s in program:
        if isinstance(s, (str, bytes, GemvKernel)) or not isinstance(s, Sequence):
            raise ConfigError(f"PIM program: expected one kernel list per pseudo-channel, got "
                              f"a {type(s).__name__} among them")
        per_pc.append(tuple(s))
    if len(per_pc) != n_pcs:
        raise ConfigError(f"PIM program: {len(per_pc)} kernel lists for {n_pcs} "
                          f"pseudo-channels of {spec.name}")
    for s in per_pc:
        for k in s:
            if not isinstance(k, GemvKernel):
                raise ConfigError(f"PIM program: expected GemvKernel, got "
                                  f"{type(k).__name__}")
    return per_pc


class PimDevice:
    """A PIM memory system that runs PIM programs one after another and keeps its state.

    Everything a program leaves behind carries over to the next one: the timing state of
    every command and bank, the open PIM rows, each pseudo-channel's refresh due time and
    last command, the command counts and the log. A decode step is a sequence of programs on
    the same stacks (attention, then the experts on PIM, layer after layer)::

        dev = PimDevice("b200-hbm3e-pim")
        a = dev.run(attention_program, start_ns=0.0)
        b = dev.run(expert_program, start_ns=a.end_ns + gpu_ns)   # absolute device times

    Args:
        spec: a spec with PIM units.
        log: keep the command log of every run (:meth:`log`, and each result's ``log``).
        symmetric: ``"auto"`` simulates one channel and copies its state to the others when
            every channel runs identical streams *and* all channels are in identical states
            (exact: channels share nothing; tests/test_pim_engine.py compares it with the full
            simulation over sequences of programs); ``False`` always simulates every channel.
        memo: a :class:`ProgramMemo` shared by devices of this spec: a run whose program and
            device state relative to its start equal an earlier run's is not simulated again
            (its result and state change are replayed, bit for bit).
        idle: what the device does where a PC has no work (:data:`IDLE_POLICIES`).
            ``"open"`` (default; the model of every earlier release, whose published results
            it keeps): rows stay open after a program (a later program reusing them skips
            the activation), and refreshes that fall due while a channel has no work are
            issued when it next has work, pulled in right after its last command.
            ``"closed"``: each PC closes its PIM row (PREAB) when its stream ends, a refresh
            is never pulled in before a program's start (one due in the idle time before it
            is issued on schedule), and every refresh due by a program's end is issued
            within it, on schedule. Channels then leave a program in the same state whatever
            their share of it (rows closed, refreshes due at the same tick), so identical
            programs after uneven ones (tensor-parallel experts after attention) are
            simulated on one channel again; the cost is a PREAB per PC per program
            (docs/model-of-computation.md, *Front end 2*; measured in docs/performance.md).

    Symmetric runs. With ``symmetric="auto"``, when every channel runs identical streams,
    channels whose states are equivalent relative to the program's start (the rule of
    :meth:`channel_classes`) form a class, one channel per class is simulated and its result
    and final state are copied to the others: bit for bit the full simulation's times,
    counts, per-PC results, final state and per-channel command log
    (tests/test_pim_symmetry.py).

    Refresh is always on and all-bank (REFab per pseudo-channel every tREFI), whatever the
    spec's ``refresh`` mode: per-bank refresh of one bank while an all-bank PIM row is open
    is not modelled (docs/model-of-computation.md, *Front end 2*).
    """

    def __init__(self, spec: DramSpec | str, *, log: bool = False,
                 symmetric: bool | str = "auto", memo: ProgramMemo | None = None,
                 idle: str = "open"):
        self.spec = _pim_spec(spec, "PIM device")
        if symmetric not in ("auto", False):
            raise ConfigError(f"PIM device: symmetric must be 'auto' or False, got "
                              f"{symmetric!r}")
        if not isinstance(idle, str) or idle not in IDLE_POLICIES:
            raise ConfigError(f"PIM device: idle policy {idle!r} unknown (known: "
                              f"{', '.join(IDLE_POLICIES)})")
        self.idle = idle
        if memo is not None and not isinstance(memo, ProgramMemo):
            raise ConfigError(f"PIM device: memo must be a ProgramMemo, got "
                              f"{type(memo).__name__}")
        self.symmetric = symmetric
        self.memo = memo
        self.logging = check_bool("PIM device", "log", log)
        arrays = self.spec.to_arrays()
        arrays["refresh_perbank"] = 0  # PIM programs refresh all-bank (see the docstring)
        self._engine = _dram.Engine(arrays, self.spec.org.total_channels, self.logging)
        self._steps, self._seq_ptr = mode_sequences(self.spec)  # empty without a protocol
        self._layout = self._engine.layout()
        self._horizon = _history_horizon(arrays, self._layout)
        self.tick_ns = self.spec.tick_ns
        self.reset()

    # ---- state ---------------------------------------------------------------------------
    def _spec_id(self) -> str:
        if not hasattr(self, "_spec_key"):
            import json

            self._spec_key = json.dumps(self.spec.to_dict(), sort_keys=True, default=str)
        return self._spec_key

    def reset(self) -> None:
        """Back to power-on: banks closed, no timing history, refresh at its reset phase
        (every PC's first REFab due tREFI after time 0), time 0, empty log."""
        self._engine.reset()
        self._now_tick = 0
        self._uniform = True  # every channel's state is identical (power-on)
        self._logs: list[np.ndarray] = []
        self._broken = False
        self.programs = 0

    @property
    def now_ns(self) -> float:
        """The latest program end so far (ns); the default start of the next program."""
        return self._now_tick * self.tick_ns

    def log(self) -> np.ndarray:
        """The command log of every run since creation or :meth:`reset` (LOG_DTYPE, in issue
        order; empty unless created with ``log=True``)."""
        if not self._logs:
            return np.empty(0, dtype=LOG_DTYPE)
        return np.concatenate(self._logs)

    def command_counts(self) -> dict[str, int]:
        """Commands issued since creation or :meth:`reset`, over all channels."""
        counts = self._engine.counts()
        return {c.name: int(counts[i]) for i, c in enumerate(COMMANDS) if counts[i]}

    def _start_tick(self, start_ns) -> int:
        if start_ns is None:
            return self._now_tick
        if isinstance(start_ns, bool) or not isinstance(
                start_ns, (int, float, np.integer, np.floating)) or not math.isfinite(
                start_ns) or start_ns < 0:
            raise ConfigError(f"PIM device: start_ns must be a finite number >= 0, got "
                              f"{start_ns!r}")
        tick = int(np.ceil(start_ns / self.tick_ns - 1e-9)) if start_ns else 0
        if tick > _dram.MAX_TICK // 2:
            raise ConfigError(f"PIM device: start_ns {start_ns} is beyond the simulated time "
                              f"range ({_dram.MAX_TICK // 2 * self.tick_ns:.3g} ns)")
        return tick

    def channel_classes(self, start_ns: float | None = None) -> np.ndarray:
        """Channels that a program in which every PC runs the same stream (tensor
        parallelism), starting at ``start_ns`` (default :attr:`now_ns`), runs identically up
        to the numbering of their PCs: one class number per channel (numbered in the order
        of their first channel). The symmetric fast path simulates one channel per class.

        The rule (exact; docs/model-of-computation.md, *Symmetry*): no command of the run
        issues on channel c before ``low_c = max(last_c, min(start, due_c - lead))``, where
        ``last_c`` is the channel's latest command, ``due_c`` its PCs' earliest refresh due
        tick and ``lead`` how far a refresh may be pulled in before the start (7 refresh
        intervals under ``idle="open"``, 0 under ``"closed"``). With each channel's PCs
        listed in their command-bus round-robin order (the order of their latest commands,
        ties by number), two channels are equivalent when they have the same ``low``, the
        same ready times once those below ``low`` are raised to it, the same window history
        once entries too old to bind a command at or after ``low`` are dropped, the same PC
        last ticks so raised, and the same open rows and refresh due times; with PCs of
        different streams, each listed PC must also run the same stream."""
        return self._channel_classes(self._start_tick(start_ns), None)[0]

    def _channel_classes(self, start: int, stream_ids: np.ndarray | None
                         ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(class of every channel, first channel of every class, every channel's PCs in
        round-robin order) for a run at tick ``start`` whose PC p runs stream
        ``stream_ids[p]`` in every channel (None: one stream for all); see
        :meth:`channel_classes`."""
        st = self._engine.get_state()
        lay = self._layout
        nch, npc = lay["n_channels"], lay["pcs_per_channel"]
        lead = 0 if self.idle == "closed" else _dram.PULL_IN_INTERVALS * lay["refresh_interval"]
        due = st["ref_due"].reshape(nch, npc)
        low = np.maximum(st["ch_last"], np.minimum(start, due.min(axis=1) - lead))
        col = low[:, None]
        # the bus round robin: on a tie the PC with the lowest (last issue, number) goes first;
        # listing each channel's PCs in that order makes the order itself the same everywhere
        order = np.argsort(st["pc_lseq"].reshape(nch, npc), axis=1, kind="stable")
        rows = np.arange(nch)[:, None]

        def pcs(a: np.ndarray) -> np.ndarray:  # (nch, npc, ...) in round-robin order
            return a[rows, order].reshape(nch, -1)

        cols = [col - start]
        for lv in range(5):
            n = lay["n_nodes"][lv] * lay["n_cmd"]
            seg = np.maximum(st["ready"][lay["lvl_off"][lv]:lay["lvl_off"][lv] + n].reshape(
                nch, -1), col) - start
            cols.append(seg if lv == 0 else pcs(seg.reshape(nch, npc, -1)))
            n = lay["n_nodes"][lv] * lay["n_slots"][lv] * lay["max_window"]
            if n:
                seg = st["hist"][lay["hist_off"][lv]:lay["hist_off"][lv] + n].reshape(
                    nch, -1, lay["n_slots"][lv], lay["max_window"])
                dead = (seg < 0) | (seg + self._horizon[lv][None, None, :, None]
                                    <= low[:, None, None, None])
                seg = np.where(dead, _NO_HIST, seg - start).reshape(nch, -1)
                cols.append(seg if lv == 0 else pcs(seg.reshape(nch, npc, -1)))
        for k in ("open_row", "ab_row", "sb_row", "n_open"):
            cols.append(pcs(st[k].reshape(lay["n_buffers"], nch, npc, -1).transpose(1, 2, 0, 3)))
        cols.append(pcs(due - start))
        cols.append(pcs(st["ref_rr"].reshape(nch, npc)))
        cols.append(pcs(np.maximum(st["pc_last"].reshape(nch, npc), col) - start))
        if stream_ids is not None:
            cols.append(stream_ids[order])
        m = np.concatenate(cols, axis=1, dtype=np.int64)
        if np.all(m == m[0]):
            return np.zeros(nch, dtype=np.intp), np.zeros(1, dtype=np.intp), order
        number: dict[bytes, int] = {}  # exact: a dict compares the keys, not only hashes
        cls = np.array([number.setdefault(m[c].tobytes(), len(number)) for c in range(nch)],
                       dtype=np.intp)
        first = np.zeros(len(number), dtype=np.intp)
        first[cls[::-1]] = np.arange(nch - 1, -1, -1)
        return cls, first, order

    # ---- running programs --------------------------------------------------------------------
    def run(self, program: Sequence[GemvKernel] | Sequence[Sequence[GemvKernel]],
            start_ns: float | None = None) -> PimResult:
        """Run one PIM program, continuing from the device's state.

        Args:
            program: one kernel list that every PC runs (tensor parallelism: identical
                streams), or one kernel list per PC (``len == total pseudo-channels``;
                expert parallelism), PCs numbered channel-major
                (``channel * pseudochannels + pc``).
            start_ns: absolute device time before which no kernel command issues (default
                :attr:`now_ns`, the end of the latest program). Each PC also issues in order
                after its previous command, and each channel in time order. Under
                ``idle="open"``, refreshes that fell due while the device was idle are issued
                when a PC next has work, at ticks possibly before ``start_ns`` (the device
                refreshed while idle); under ``"closed"`` those are issued on schedule.

        Returns:
            A :class:`PimResult` in absolute device times.
        """
        if self._broken:
            raise ConfigError("PIM device: an earlier run was interrupted and left the device "
                              "in an undefined state; call reset()")
        spec = self.spec
        per_pc = _streams(spec, program)
        start = self._start_tick(start_ns)
        o = spec.org
        npc, n_ch = o.pseudochannels, o.total_channels
        by_channel = [tuple(per_pc[c * npc:(c + 1) * npc]) for c in range(n_ch)]
        same_streams = all(ch == by_channel[0] for ch in by_channel)
        eng = self._engine
        # symmetric runs: one channel per class of equivalent channels (channel_classes),
        # each simulated with its PCs in round-robin order
        cls = reps = order = None
        if (self.symmetric is not False and same_streams and n_ch > 1
                and (self.idle == "closed" or _sync_insensitive(by_channel[0]))):
            sid = _stream_ids(by_channel[0])
            if self._uniform:
                cls, reps = np.zeros(n_ch, dtype=np.intp), np.zeros(1, dtype=np.intp)
                order = np.broadcast_to(np.arange(npc), (n_ch, npc))
            else:
                cls, reps, order = self._channel_classes(start, sid if sid.any() else None)
            if reps.size == n_ch:
                cls = reps = order = None
        sim = n_ch if cls is None else int(reps.size)
        if cls is None:
            streams = per_pc
        else:
            # the classes' first channels to the front (a permutation of the channels, so no
            # state is lost), their PCs in round-robin order
            rest = np.ones(n_ch, dtype=bool)
            rest[reps] = False
            gather = np.concatenate([reps, np.flatnonzero(rest)])
            gather_pcs = np.tile(np.arange(npc), (n_ch, 1))
            gather_pcs[:sim] = order[reps]
            if np.any(gather != np.arange(n_ch)) or np.any(gather_pcs[:sim] != np.arange(npc)):
                eng.select_channels(gather, gather_pcs)
            streams = [per_pc[p] for p in order[reps].ravel()]
        # kernel table (de-duplicated descriptor rows) and barrier sets (dense ids)
        rows: dict[tuple, int] = {}
        sets: dict[tuple, int] = {}
        table: list[list[int]] = []
        prog_ptr = np.zeros(len(streams) + 1, dtype=np.int64)
        prog_kern: list[int] = []
        prog_bar: list[int] = []
        done: dict[int, list[int]] = {}  # kernel rows of each stream object (TP: one object)
        for q, s in enumerate(streams):
            kids = done.get(id(s))
            if kids is None:
                kids = done[id(s)] = []
                for k in s:
                    row = tuple(k._row(spec))
                    if row not in rows:
                        rows[row] = len(table)
                        table.append(list(row))
                    kids.append(rows[row])
            prog_kern.extend(kids)
            for k in s:
                key = k.barrier_key(q // npc)
                prog_bar.append(-1 if key is None else sets.setdefault(key, len(sets)))
            prog_ptr[q + 1] = len(prog_kern)
        n_fields = len(_dram.KERNEL_FIELDS)
        empty = [1 if f in ("n_vectors", "n_chunks", "vectors_per_pass") else 0
                 for f in _dram.KERNEL_FIELDS]
        kernels = np.ascontiguousarray(np.array(table or [empty],
                                                dtype=np.int64).reshape(-1, n_fields))
        pk = np.ascontiguousarray(np.array(prog_kern or [0], dtype=np.int32))
        pb = np.ascontiguousarray(np.array(prog_bar or [-1], dtype=np.int32))
        nk = max(len(prog_kern), 1)
        counts0 = eng.counts()
        seq0 = eng.n_issued
        key = entry = None
        if self.memo is not None:
            key, base, norm = self.memo._key(self, (kernels, prog_ptr, pk, pb, len(sets)),
                                             start, sim)
            entry = self.memo._get(key)
        if entry is not None:
            out = self.memo._replay(self, entry, base, sim, seq0)
        else:
            k_start = np.full(nk, -1, dtype=np.int64)
            k_end = np.full(nk, -1, dtype=np.int64)
            busy = np.zeros(len(streams), dtype=np.int64)
            finish = np.full(len(streams), start, dtype=np.int64)
            n_ref = np.zeros(len(streams), dtype=np.int64)
            chc = np.zeros((sim, len(COMMANDS)), dtype=np.int64)
            ovh = np.zeros((len(streams), len(OVERHEADS)), dtype=np.int64)
            try:
                end = _dram.run_pim(eng, kernels, prog_ptr, pk, pb, len(sets), sim, start,
                                    k_start, k_end, busy, finish, n_ref,
                                    idle=IDLE_POLICIES.index(self.idle), ch_counts=chc,
                                    steps=self._steps, seq_ptr=self._seq_ptr, overhead=ovh)
            except BaseException:
                self._broken = True
                raise
            if end < 0:
                self._broken = True
                raise _run_error(spec, "PIM program", eng.last_status)
            log = eng.take_log() if self.logging else None
            out = (k_start, k_end, busy, finish, n_ref, int(end), log,
                   eng.counts() - counts0, eng.n_issued - seq0, chc, ovh)
            if key is not None:
                self.memo._put(key, self, out, base, norm, sim, seq0)
        k_start, k_end, busy, finish, n_ref, end, log, delta, n_sim_cmds, chc, ovh = out
        n = len(prog_kern)
        ks, ke = k_start[:n], k_end[:n]
        if cls is not None:
            # every channel takes its class's result and final state, its PCs in their own
            # numbering (PC p of channel c is PC back[c, p] of its class's channel); a class
            # whose channel issued nothing left its channels as they were
            back = np.argsort(order, axis=1)
            issued = chc.sum(axis=1) > 0
            pos = np.argsort(gather)  # where each channel's own state went
            src = np.where(issued[cls], cls, pos)
            src_pcs = np.where(issued[cls][:, None], back,
                               np.argsort(gather_pcs, axis=1)[pos])
            if np.any(src != np.arange(n_ch)) or np.any(src_pcs != np.arange(npc)):
                eng.select_channels(src, src_pcs)
            per_ch = chc[cls]
            extra = per_ch.sum(axis=0) - chc.sum(axis=0)
            eng.add_counts(extra, int(extra.sum()))
            # every channel now holds the same copy (same PC order): identical states
            self._uniform = bool((sim == 1 and issued[0] and np.all(back == back[0]))
                                 or (self._uniform and not issued.any()))
            if log is not None:
                log = _class_log(log, cls, order, sim, seq0)
            take = cls[:, None] * npc + back  # (channel, PC) -> simulated PC
            busy, finish, n_ref = (a[take].ravel() for a in (busy, finish, n_ref))
            ovh = ovh[take.ravel()]
            slots = _csr_rows(prog_ptr, take.ravel())
            ks, ke = k_start[slots], k_end[slots]
            delta = per_ch.sum(axis=0)
        else:
            self._uniform = self._uniform and same_streams
        if log is not None:
            self._logs.append(log)
        self._now_tick = max(self._now_tick, int(end))
        self.programs += 1
        tick = spec.tick_ns
        counts = {c.name: int(delta[i]) for i, c in enumerate(COMMANDS) if delta[i]}
        ptr_all = np.zeros(o.total_pseudochannels + 1, dtype=np.int64)
        ptr_all[1:] = np.cumsum([len(s) for s in per_pc])
        return PimResult(
            spec=spec.name, n_pcs=o.total_pseudochannels, simulated_channels=sim,
            cycles=-(-(int(end) - start) // spec.timing.ticks_per_ck),
            time_ns=float((end - start) * tick),
            pc_busy_ns=busy * tick, pc_finish_ns=finish * tick,
            pc_overhead_ns=ovh * tick,
            kernel_ptr=ptr_all, kernel_start_ns=ks * tick,
            kernel_end_ns=ke * tick, command_counts=counts,
            refreshes=int(n_ref.sum()), log=log, start_ns=float(start * tick),
            end_ns=float(end * tick),
        )


def _stream_ids(streams: tuple[tuple[GemvKernel, ...], ...]) -> np.ndarray:
    """A number per stream, equal for equal streams (compared, not hashed: hashing every
    kernel of long streams costs more than comparing the few streams of a channel, which
    are usually one object)."""
    first: list[tuple[GemvKernel, ...]] = []
    out = []
    for x in streams:
        for j, f in enumerate(first):
            if x is f or x == f:
                out.append(j)
                break
        else:
            out.append(len(first))
            first.append(x)
    return np.array(out, dtype=np.intp)


def _sync_insensitive(channel: tuple[tuple[GemvKernel, ...], ...]) -> bool:
    """Whether, under idle policy "open", a program whose every channel runs these streams
    gives each channel the same commands however many channels are simulated: true without
    barriers spanning channels ("all", "group"), or when every PC of the channel runs the same
    stream (then no channel issues while its PCs wait for another channel). Otherwise a PC
    released by another channel may pull a refresh in before commands its channel issued
    meanwhile, and the full simulation's outcome depends on the order in which it advances
    the channels."""
    if all(s == channel[0] for s in channel):
        return True
    return not any(k.sync in ("all", "group") for s in channel for k in s)


def _class_log(log: np.ndarray, cls: np.ndarray, order: np.ndarray, sim: int,
               seq0: int) -> np.ndarray:
    """The log of every channel from the log of a run that simulated one channel per class
    (channel i = class i, its PCs in round-robin order): channel c gets its class's commands
    with its own PC numbers (``order[c]``), channels in order, numbered from ``seq0`` on as a
    full simulation without cross-channel barriers numbers them."""
    own = [log[log["ch"] == i] for i in range(sim)]
    sizes = np.array([len(own[i]) for i in cls], dtype=np.int64)
    first = seq0 + np.concatenate([[0], np.cumsum(sizes)[:-1]])
    parts = []
    for c, i in enumerate(cls):
        rep = own[i].copy()
        rep["ch"] = c
        rep["pc"] = order[c][rep["pc"]]
        rep["seq"] = first[c] + np.arange(len(rep))
        parts.append(rep)
    return np.concatenate(parts) if parts else log


def _csr_rows(ptr: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Indices of the entries of CSR rows ``rows`` (pointer ``ptr``), concatenated."""
    lo, hi = ptr[rows], ptr[rows + 1]
    n = hi - lo
    out = np.arange(int(n.sum()), dtype=np.int64)
    return out + np.repeat(lo - np.concatenate([[0], np.cumsum(n)[:-1]]), n)


def _history_horizon(arrays: dict, lay: dict) -> list[np.ndarray]:
    """Per level, per window-history slot: the longest latency of a windowed constraint row
    that reads the slot (ticks). Only windowed rows read the history (the window-th most
    recent issue), so an entry ``h`` with ``h + horizon <= t`` binds no command at or after
    tick ``t``."""
    n_cmd = lay["n_cmd"]
    ptr = np.asarray(arrays["cons_ptr"])
    lat = np.asarray(arrays["cons_lat"], dtype=np.int64)
    win = np.asarray(arrays["cons_win"])
    slot_of = np.asarray(arrays["hist_slot"])
    out = []
    for lv in range(5):
        h = np.zeros(lay["n_slots"][lv], dtype=np.int64)
        for p in range(n_cmd):
            k = lv * n_cmd + p
            if slot_of[k] >= 0:
                rows = slice(ptr[k], ptr[k + 1])
                w = win[rows] > 1
                if np.any(w):
                    h[slot_of[k]] = max(h[slot_of[k]], int(lat[rows][w].max()))
        out.append(h)
    return out


_NO_HIST = np.iinfo(np.int64).min  # normalised history entry that can no longer bind


def _normalise(state: dict, lay: dict, base: int, sim: int, max_lat: int) -> dict:
    """The state of the first ``sim`` channels relative to tick ``base``, reduced to what
    decides their future: no command of channel c can issue before its last one (X_c), so
    ready times below X_c are X_c, history ticks too old to bind any windowed row are
    dropped, a PC's last tick below X_c is X_c, and the command-bus round robin depends only
    on the order of the PCs' last issues (their ranks)."""
    nch, npc = lay["n_channels"], lay["pcs_per_channel"]
    x = state["ch_last"][:sim]
    out = {"ch_last": x - base}
    ready = []
    hist = []
    for lv in range(5):
        n = lay["n_nodes"][lv] * lay["n_cmd"]
        seg = state["ready"][lay["lvl_off"][lv]:lay["lvl_off"][lv] + n].reshape(nch, -1)[:sim]
        ready.append(np.maximum(seg, x[:, None]) - base)
        n = lay["n_nodes"][lv] * lay["n_slots"][lv] * lay["max_window"]
        if n:
            seg = state["hist"][lay["hist_off"][lv]:lay["hist_off"][lv] + n].reshape(
                nch, -1)[:sim]
            dead = (seg < 0) | (seg + max_lat <= x[:, None])
            hist.append(np.where(dead, _NO_HIST, seg - base))
    out["ready"] = ready
    out["hist"] = hist
    for k in ("open_row", "ab_row", "sb_row", "n_open"):
        out[k] = state[k].reshape(lay["n_buffers"], nch, -1)[:, :sim].copy()
    out["ref_due"] = state["ref_due"].reshape(nch, npc)[:sim] - base
    out["ref_rr"] = state["ref_rr"].reshape(nch, npc)[:sim].copy()
    out["pc_last"] = np.maximum(state["pc_last"].reshape(nch, npc)[:sim], x[:, None]) - base
    lseq = state["pc_lseq"].reshape(nch, npc)[:sim]
    out["pc_rank"] = np.array([np.unique(r, return_inverse=True)[1] for r in lseq])
    return out


def _denormalise(norm: dict, state: dict, lay: dict, base: int, sim: int) -> None:
    """Write a normalised state of the first ``sim`` channels into ``state`` at ``base``
    (the inverse of :func:`_normalise` up to values that cannot influence the future).
    ``pc_lseq`` is handled by the caller."""
    nch = lay["n_channels"]
    for lv in range(5):
        n = lay["n_nodes"][lv] * lay["n_cmd"]
        seg = state["ready"][lay["lvl_off"][lv]:lay["lvl_off"][lv] + n].reshape(nch, -1)
        seg[:sim] = norm["ready"][lv] + base
    i = 0
    for lv in range(5):
        n = lay["n_nodes"][lv] * lay["n_slots"][lv] * lay["max_window"]
        if n:
            seg = state["hist"][lay["hist_off"][lv]:lay["hist_off"][lv] + n].reshape(nch, -1)
            h = norm["hist"][i]
            seg[:sim] = np.where(h == _NO_HIST, -1, h + base)
            i += 1
    for k in ("open_row", "ab_row", "sb_row", "n_open"):
        state[k].reshape(lay["n_buffers"], nch, -1)[:, :sim] = norm[k]
    npc = lay["pcs_per_channel"]
    state["ref_due"].reshape(nch, npc)[:sim] = norm["ref_due"] + base
    state["ref_rr"].reshape(nch, npc)[:sim] = norm["ref_rr"]
    state["pc_last"].reshape(nch, npc)[:sim] = norm["pc_last"] + base
    state["ch_last"][:sim] = norm["ch_last"] + base


class ProgramMemo:
    """An exact memo of PIM programs for :class:`PimDevice` (pass ``memo=`` to devices).

    Key: the spec, the program (kernel descriptors, streams, barrier sets, how many channels
    are simulated) and the device state of the simulated channels **relative to the
    program's start tick** (aligned down to a whole CK, with the offset in the key), reduced
    to what decides the future (:func:`_normalise`: ready times clipped at each channel's
    last command, history too old to bind dropped, the round-robin order of the PCs), with
    the refresh due times and open rows exact. Value: the run's outputs and its final state
    in the same relative form, and its log. A hit replays them at the new start: the result
    and the device's state are those a fresh simulation would give, bit for bit
    (tests/test_pim_engine.py). The key is a 256-bit BLAKE2 digest of these arrays.

    Hits need the same refresh phase relative to the start, to the tick: in a decode step
    they occur when a program repeats on a device in the same relative state (e.g. an idle
    device and equal phases); otherwise every run is a miss, which costs one normalisation
    of the state (a few ms for a full 128-channel b200 state, far less for symmetric runs,
    which key one channel).

    Args:
        max_entries: keep at most this many entries (the oldest are dropped); None: no limit.
    """

    def __init__(self, max_entries: int | None = None):
        if max_entries is not None and (isinstance(max_entries, bool) or not isinstance(
                max_entries, int) or max_entries < 1):
            raise ConfigError(f"ProgramMemo: max_entries must be an integer >= 1 or None, got "
                              f"{max_entries!r}")
        self.max_entries = max_entries
        self._table: dict[bytes, tuple] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        self._table.clear()

    def _key(self, dev: PimDevice, program: tuple, start: int, sim: int):
        import hashlib

        eng = dev._engine
        lay = eng.layout()
        align = lay["align"]
        base = start - start % align
        norm = _normalise(eng.get_state(), lay, base, sim, eng.max_latency)
        h = hashlib.blake2b(digest_size=32)
        h.update(repr((dev._spec_id(), sim, start - base, dev.logging, dev.idle)).encode())
        for a in program[:4]:
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(b"|")
        h.update(repr(program[4]).encode())
        for k in sorted(norm):
            v = norm[k]
            for a in (v if isinstance(v, list) else [v]):
                h.update(np.ascontiguousarray(a).tobytes())
                h.update(b"|")
        return h.digest(), base, norm

    def _get(self, key: bytes):
        entry = self._table.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def _put(self, key: bytes, dev: PimDevice, out: tuple, base: int, norm: dict, sim: int,
             seq0: int) -> None:
        eng = dev._engine
        lay = eng.layout()
        final = eng.get_state()
        fnorm = _normalise(final, lay, base, sim, eng.max_latency)
        npc = lay["pcs_per_channel"]
        lseq = final["pc_lseq"].reshape(lay["n_channels"], npc)[:sim]
        fnorm["lseq_rel"] = np.where(lseq > seq0, lseq - seq0, 0)
        k_start, k_end, busy, finish, n_ref, end, log, delta, n_cmds, chc, ovh = out
        rel = (np.where(k_start >= 0, k_start - base, -1), np.where(k_end >= 0, k_end - base, -1),
               busy.copy(), finish - base, n_ref.copy(), end - base)
        if log is not None:
            log = log.copy()
            log["tick"] -= base
            log["seq"] -= seq0
        if self.max_entries is not None and len(self._table) >= self.max_entries:
            self._table.pop(next(iter(self._table)))
        self._table[key] = (rel, fnorm, log, delta.copy(), n_cmds, chc.copy(), ovh.copy())

    def _replay(self, dev: PimDevice, entry: tuple, base: int, sim: int, seq0: int) -> tuple:
        (ks, ke, busy, finish, n_ref, end), fnorm, log, delta, n_cmds, chc, ovh = entry
        eng = dev._engine
        lay = eng.layout()
        state = eng.get_state()
        _denormalise(fnorm, state, lay, base, sim)
        npc = lay["pcs_per_channel"]
        lseq = state["pc_lseq"].reshape(lay["n_channels"], npc)
        lseq[:sim] = np.where(fnorm["lseq_rel"] > 0, seq0 + fnorm["lseq_rel"], lseq[:sim])
        state["seq"] = seq0 + n_cmds
        eng.set_state(state)
        eng.add_counts(delta, 0)
        if log is not None:
            log = log.copy()
            log["tick"] += base
            log["seq"] += seq0
        return (np.where(ks >= 0, ks + base, -1), np.where(ke >= 0, ke + base, -1),
                busy.copy(), finish + base, n_ref.copy(), end + base, log, delta, n_cmds,
                chc.copy(), ovh.copy())


def run_pim(spec: DramSpec | str,
            program: Sequence[GemvKernel] | Sequence[Sequence[GemvKernel]], *,
            symmetric: bool | str = "auto", log: bool = False, idle: str = "open") -> PimResult:
    """Run one PIM program on a fresh device from time 0 (front end 2; one-shot
    convenience for :class:`PimDevice`).

    Args:
        spec: a spec with PIM units (``spec.pim`` not None).
        program: either one kernel list that every PC runs (tensor parallelism: identical
            streams), or one kernel list per PC (``len == total pseudo-channels``; expert
            parallelism), PCs numbered channel-major (``channel * pseudochannels + pc``).
        symmetric: ``"auto"`` simulates a single channel when every channel runs identical
            streams and reports it for all (exact: channels share nothing - tests/test_pim_engine
            checks it against the full simulation); ``False`` always simulates every channel.
        log: return the command log of every channel.
        idle: the device's idle policy (:class:`PimDevice`, :data:`IDLE_POLICIES`).
    """
    spec = _pim_spec(spec, "PIM program")
    if symmetric not in ("auto", True, False):
        raise ConfigError(f"PIM program: symmetric must be 'auto' or False, got {symmetric!r}")
    dev = PimDevice(spec, log=log, symmetric=False if symmetric is False else "auto",
                    idle=idle)
    return dev.run(program, start_ns=0.0)


def _presets():
    return PRESETS
