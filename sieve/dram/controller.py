"""Front end 1, the request controller: a read/write request trace through an address mapper
and per-channel FR-FCFS controllers (``_dram_requests.pxi`` in the engine).

It owns :func:`simulate_requests`, the controller's knobs (:class:`ControllerConfig`,
:data:`PAGE_POLICIES`, :data:`LIFECYCLES`) and the run's statistics (:class:`DramResult`). It
reaches the compiled engine only through :mod:`sieve.dram.engine`.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from array import array
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

from sieve.dram import engine
from sieve.dram.engine import LIFECYCLES, _run_error
from sieve.dram.mapping import AddressMapper
from sieve.dram.memtrace import CHUNK_REQUESTS, RequestTrace, TraceFile, open_trace
from sieve.dram.pimmode import reserved_rows
from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError
from sieve.lazy import numpy as np
from sieve.validate import check_bool, check_int

__all__ = [
    "LIFECYCLES",
    "PAGE_POLICIES",
    "ControllerConfig",
    "DramResult",
    "simulate_requests",
]


def _decimal_ratio(x: float) -> tuple[int, int]:
    """``x`` as the exact fraction (numerator, denominator > 0) of its shortest decimal form
    (``repr``): 0.8 is 4/5, not the binary double nearest to it. (Integer arithmetic: the
    fractions module's import is ~2 ms of every `sieve dram` start.)"""
    text = repr(float(x))
    mant, _, exp = text.partition("e")
    whole, _, frac = mant.partition(".")
    num, den = int(whole + frac), 10 ** len(frac)
    e = int(exp) if exp else 0
    if e >= 0:
        return num * 10 ** e, den
    return num, den * 10 ** -e


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
    pc_burst_counts: tuple[int, ...] = field(repr=False)  # column commands per pseudo-channel
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
    def pc_bursts(self) -> np.ndarray:
        """Column commands per pseudo-channel (:attr:`pc_burst_counts` as an int64 array)."""
        return np.array(self.pc_burst_counts, dtype=np.int64)

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
# LIFECYCLES (imported from sieve.dram.engine): the request lifecycles of the controller
# (:attr:`ControllerConfig.lifecycle`), in engine order.


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
        if isinstance(q, bool) or not isinstance(q, numbers.Integral) or not (
                1 <= q <= self.MAX_QUEUE):
            raise ConfigError(f"{who}: queue_size must be an integer in [1, {self.MAX_QUEUE}], "
                              f"got {q!r}")
        for name in ("write_high_watermark", "write_low_watermark"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, numbers.Real) \
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
        elif isinstance(ipt, bool) or not isinstance(ipt, numbers.Integral) or not (
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
        q = int(self.queue_size)
        hn, hd = _decimal_ratio(self.write_high_watermark)
        ln, ld = _decimal_ratio(self.write_low_watermark)
        hi_floor = hn * q // hd  # floor(hi * q), exactly
        lo_floor = ln * q // ld
        if self.lifecycle == "ramulator2":
            lo_ceil = -(-ln * q // ld)
            return hi_floor + 1, max(0, lo_ceil - 1)
        return max(1, hi_floor), lo_floor

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
    reserved = frozenset(reserved_rows(spec))
    # the engine as DramDevice(spec, mapper.channels, log) builds it (same check and message)
    eng = engine.Engine(spec.engine_arrays(), mapper.channels,
                        check_bool("DramDevice", "log", log or log_sink is not None))
    tpc = spec.timing.ticks_per_ck
    hi, lo = controller.write_thresholds()
    run = engine.RequestRun(eng, mapper.bursts, int(controller.queue_size), hi, lo,
                            controller.page_policy == "closed",
                            LIFECYCLES.index(controller.lifecycle),
                            int(controller.inject_per_tick))
    if in_memory:
        n = len(trace)
        inject = np.zeros(n, dtype=np.int64)
        depart = np.zeros(n, dtype=np.int64)
        rclass = np.full(n, -1, dtype=np.int8)
        run.set_outputs(inject, depart, rclass)
    # a LoadStore text file is read into reused buffers without numpy (sieve.lazy); numpy
    # traces and traces in memory come as numpy arrays
    if isinstance(trace, TraceFile) and trace.format == "loadstore":
        chunks = trace.chunk_buffers(chunk_requests)
    else:
        chunks = _numpy_chunks(trace.chunks(chunk_requests))
    n_reads = n_writes = 0
    # buffers reused from chunk to chunk (the engine has consumed a chunk before it asks for
    # the next): fresh n-element arrays per chunk cost fresh pages from the kernel. dec holds
    # the decoded fields, 7 rows of `cap` entries (mapping._FIELDS order)
    cap = 0
    dec = memoryview(array("i"))
    zero_arrive = memoryview(array("q"))
    rc = run.advance()
    while rc == 1:  # RUN_NEED_INPUT
        part = next(chunks, None)
        if part is None:
            run.finish_input()
        else:
            addr, w8, arr, nw = part
            k = len(addr)
            if arr is None:
                if len(zero_arrive) < k:
                    zero_arrive = memoryview(array("q", bytes(8 * k)))
                arrive = zero_arrive[:k]
            else:
                if k and int(arr[-1]) * tpc > engine.MAX_TICK:
                    raise ConfigError(f"request trace: arrival cycles beyond "
                                      f"{engine.MAX_TICK // tpc} CK")
                arrive = np.ascontiguousarray(arr * tpc, dtype=np.int64)
            if cap < k:
                cap = k
                dec = memoryview(array("i", bytes(4 * 7 * cap)))
            mapper.decode_buffer(addr, dec, cap)
            fields = [dec[f * cap:f * cap + k] for f in range(7)]  # ch pc sid bg ba ro co
            if reserved and (hit := np.flatnonzero(np.isin(  # (numpy: PIM specs only)
                    np.frombuffer(fields[5], dtype=np.int32), sorted(reserved)))).size:
                i = int(hit[0])
                raise ConfigError(
                    f"request trace {trace.source!r}: request {n_reads + n_writes + i} "
                    f"(address {int(addr[i]):#x}) maps to row {fields[5][i]:#x}, which "
                    f"{spec.name}'s PIM mode protocol reserves (rows "
                    f"{', '.join(f'{r:#x}' for r in sorted(reserved))}: an access there "
                    "switches the device's mode, which the request front end does not "
                    "model); keep the trace's addresses out of those rows, or simulate "
                    "plain memory without the protocol (sieve dram --set pim.modes=none "
                    "--set pim.park=false --set pim.crf_bursts=0)")
            n_writes += nw
            n_reads += k - nw
            run.feed(arrive, *fields, w8, addr)
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
    counts = engine.named_counts(eng.counts_list())
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
        latency_ns=lat_ns, pc_burst_counts=tuple(st["pc_bursts"]),
        log=eng.get_log() if log else None,
        controller=controller, accept_cycles=int(st["last_inject_tick"]) // tpc,
        log_type=run.log_types() if log else None, source=trace.source,
    )


def _numpy_chunks(chunks):
    """(addr, is_write, arrive_ck) numpy chunks as the run loop takes them: (addr int64,
    writes as int8 0 / 1, arrive_ck, number of writes)."""
    for addr, w, arr in chunks:
        w8 = (w.view(np.int8) if w.dtype == np.bool_ and w.flags.c_contiguous
              else np.ascontiguousarray(w, dtype=np.int8))
        yield (np.ascontiguousarray(addr, dtype=np.int64), w8, arr,
               int(np.count_nonzero(w8)))


def _percentile_ticks(hist: Sequence[int], tail: Sequence[int], q: float) -> float:
    """The q-th percentile (numpy's default, linear between order statistics) of latencies
    given as a histogram (``hist[t]`` = requests of t ticks) plus the sorted long tail."""
    cum = list(accumulate(hist))
    n_h = cum[-1] if cum else 0
    n = n_h + len(tail)
    if n == 0:
        return 0.0

    def kth(k: int) -> int:
        if k < n_h:
            return bisect_right(cum, k)
        return int(tail[k - n_h])

    pos = (n - 1) * q / 100.0
    k = math.floor(pos)
    lo_v = kth(k)
    hi_v = kth(min(k + 1, n - 1))
    return lo_v + (hi_v - lo_v) * (pos - k)
