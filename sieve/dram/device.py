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

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from sieve.dram.commands import COMMAND_INDEX, COMMANDS, LEVEL_INDEX
from sieve.dram.log import LOG_DTYPE
from sieve.dram.mapping import AddressMapper
from sieve.dram.memtrace import RequestTrace
from sieve.dram.presets import PRESETS, get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, NotBuiltError, TimingViolation

try:
    from sieve import _dram
except ImportError as exc:  # pragma: no cover - exercised by hand on an unbuilt checkout
    raise NotBuiltError(
        "sieve's compiled DRAM engine (sieve._dram) is not built: run `pip install -e .` in "
        f"the project root (SIEVE_CYTHON_DEBUG=1 for a bounds-checked build); cause: {exc}"
    ) from None

__all__ = [
    "DEBUG_BUILD",
    "LOG_DTYPE",
    "STATUS_MESSAGES",
    "Address",
    "DramDevice",
    "DramResult",
    "GemvKernel",
    "PimResult",
    "run_pim",
    "simulate_requests",
]

#: True when the extension was built with SIEVE_CYTHON_DEBUG=1 (bounds checks on).
DEBUG_BUILD: bool = bool(_dram.DEBUG_BUILD)

# The engine's command ids are compile-time constants (_dram.pxd); they must match the spec.
_ENGINE_ORDER = ("ACT", "PRE", "PREA", "RD", "WR", "RDA", "WRA", "REFab", "REFpb", "ACTAB",
                 "MACAB", "PREAB", "GWRITE", "RDRES")
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
        self.channels = total if channels is None else int(channels)
        if self.channels < 1:
            raise ConfigError(f"DramDevice: channels must be >= 1, got {channels}")
        self._engine = _dram.Engine(self.spec.to_arrays(), self.channels, bool(log))
        self.tick_ns = self.spec.tick_ns
        self._last_tick = [0] * self.channels  # issue order must follow time, per channel

    # ---- addressing ----------------------------------------------------------------------
    def _cmd(self, cmd: str | int) -> int:
        if isinstance(cmd, str):
            if cmd not in COMMAND_INDEX:
                raise ConfigError(f"DRAM command {cmd!r}: unknown (known: "
                                  f"{', '.join(COMMAND_INDEX)})")
            return COMMAND_INDEX[cmd]
        if not 0 <= int(cmd) < len(COMMANDS):
            raise ConfigError(f"DRAM command id {cmd}: out of range")
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
        if isinstance(addr, Address):
            return addr
        return Address(*addr)

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
        return self._engine.state_check(c, a.ch, a.pc, a.sid, a.bg, a.bank, a.row) == 0

    def probe(self, cmd: str | int, addr: Address | Iterable[int] | None, clk: int) -> bool:
        """Read-only: would ``cmd`` be legal at tick ``clk``? (timing, edge and bank state)"""
        c = self._cmd(cmd)
        a = self._addr(addr)
        align = self.spec.timing.ticks_per_ck if COMMANDS[c].bus == 1 else 1
        return (clk >= self._engine.earliest(c, a.ch, a.pc, a.sid, a.bg, a.bank)
                and clk % align == 0 and self.state_ok(c, a))

    def issue(self, cmd: str | int, addr: Address | Iterable[int] | None, clk: int) -> None:
        """Issue ``cmd`` at tick ``clk``; raises :class:`TimingViolation` if it is illegal."""
        c = self._cmd(cmd)
        a = self._addr(addr)
        self._check_addr(c, a)
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
        """Record ``cmd`` at ``clk`` without any check (to build faulty logs for the checker)."""
        c = self._cmd(cmd)
        a = self._addr(addr)
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
        return self._engine.open_rows(buffer)

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
    latency_ns: np.ndarray = field(repr=False)  # per read request
    pc_bursts: np.ndarray = field(repr=False)  # column commands per pseudo-channel
    log: np.ndarray | None = field(default=None, repr=False)

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
        }

    def summary(self) -> str:
        """A Ramulator-like plain-text stats block."""
        lines = [
            f"memory_system: {self.spec}  ({self.channels} channel(s), mapping {self.mapping}, "
            f"{self.page_policy}-page, FR-FCFS)",
            f"  total_num_read_requests:  {self.reads}",
            f"  total_num_write_requests: {self.writes}",
            f"  memory_system_cycles:     {self.cycles}",
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


def simulate_requests(spec: DramSpec | str, trace: RequestTrace, *,
                      channels: int | None = None, mapping: str | Sequence[str] = "sieve",
                      request_bytes: int = 64, queue_size: int = 32,
                      page_policy: str = "open", log: bool = False) -> DramResult:
    """Run a request trace through per-channel FR-FCFS controllers (front end 1).

    Args:
        spec: memory spec or preset name (its PIM units, if any, are unused here).
        trace: requests (sieve.dram.memtrace).
        channels: channels the address space is interleaved over (default: all of the spec;
            1 = a single controller, as Ramulator 2.1 runs one controller per channel).
        mapping: address mapping preset or field list (sieve.dram.mapping).
        request_bytes: bytes per request (a multiple of the 32 B burst; 64 B = 2 bursts).
        queue_size: read and write queue entries per channel (Ramulator default 32).
        page_policy: "open" (rows stay open) or "closed" (auto-precharge when no queued
            request hits the row).
        log: return the full command log (LOG_DTYPE) in the result.
    """
    spec = get_spec(spec)
    if page_policy not in ("open", "closed"):
        raise ConfigError(f"page policy {page_policy!r}: unknown (known: closed, open)")
    if queue_size < 1:
        raise ConfigError(f"controller: queue_size must be >= 1, got {queue_size}")
    if len(trace) == 0:
        raise ConfigError("request trace: empty")
    mapper = AddressMapper(spec, mapping, channels=channels, request_bytes=request_bytes)
    dec = mapper.decode(trace.addr)
    dev = DramDevice(spec, channels=mapper.channels, log=log)
    eng = dev._engine
    tpc = spec.timing.ticks_per_ck
    n = len(trace)
    arrive = (np.zeros(n, dtype=np.int64) if trace.arrive_ck is None
              else np.ascontiguousarray(trace.arrive_ck * tpc, dtype=np.int64))
    inject = np.zeros(n, dtype=np.int64)
    depart = np.zeros(n, dtype=np.int64)
    rclass = np.full(n, -1, dtype=np.int8)
    pc_bursts = np.zeros(mapper.channels * spec.org.pseudochannels, dtype=np.int64)
    end = _dram.run_requests(eng, arrive, dec.ch, dec.pc, dec.sid, dec.bg, dec.ba, dec.ro, dec.co,
                           trace.is_write.astype(np.int8), mapper.bursts, int(queue_size),
                           page_policy == "closed", inject, depart, rclass, pc_bursts)
    if end < 0:
        raise TimingViolation(f"{spec.name}: request simulation stopped: "
                              f"{STATUS_MESSAGES.get(eng.last_status, 'engine error')}")
    reads = ~trace.is_write
    lat_ns = (depart[reads] - inject[reads]) * spec.tick_ns
    counts = dev.command_counts()
    cycles = -(-int(end) // tpc)
    time_ns = end * spec.tick_ns
    nbytes = n * request_bytes
    return DramResult(
        spec=spec.name, mapping=mapper.name, channels=mapper.channels, page_policy=page_policy,
        requests=n, reads=int(reads.sum()), writes=int(trace.is_write.sum()),
        request_bytes=request_bytes, cycles=cycles, time_ns=float(time_ns),
        bandwidth_gbs=nbytes / time_ns if time_ns > 0 else 0.0,
        peak_bandwidth_gbs=spec.pc_peak_bytes_per_ns * mapper.channels * spec.org.pseudochannels,
        latency_mean_ns=float(lat_ns.mean()) if lat_ns.size else 0.0,
        latency_p99_ns=float(np.percentile(lat_ns, 99)) if lat_ns.size else 0.0,
        row_hits=int((rclass == 0).sum()), row_misses=int((rclass == 1).sum()),
        row_conflicts=int((rclass == 2).sum()), command_counts=counts,
        refreshes=counts.get("REFab", 0) + counts.get("REFpb", 0),
        latency_ns=lat_ns, pc_bursts=pc_bursts, log=dev.log() if log else None,
    )


# ============================================================================================
# Front end 2: PIM programs
# ============================================================================================


@dataclass(frozen=True)
class GemvKernel:
    """One GEMV kernel as run by ONE pseudo-channel's PIM units (a kernel descriptor).

    The engine expands it, per input vector (token), into::

        for chunk in range(n_chunks):                 # global-buffer fills
            GWRITE x gw_per_chunk                     # the input-vector slice
            for r in range(rows_per_chunk):           # all-bank row activations
                [PREAB] ACTAB(row), MACAB x macs_per_row
        RDRES x n_res                                 # results back to the host

    ``row = base_row + chunk * rows_per_chunk + r``; PREAB/ACTAB are skipped while the needed
    row is already open. Vectors are serialized, as the seed's PIM executes a multi-token expert
    (seed §5 "serialized GEMV operations"). Build descriptors with :func:`sieve.pim.gemv_kernel`
    rather than by hand.

    Attributes:
        gap_ns: idle time between the previous kernel's last result and this kernel's first
            command on the same PC (e.g. the GPU-side activation between two GEMVs).
        sync: a barrier over the PCs of the channel: the PC's n-th sync kernel starts
            ``gap_ns`` after the *latest* end of the kernels before the n-th sync kernels of
            all the channel's PCs that have one (a GPU step that needs the results of every
            PC of a GEMV). Channels are simulated independently, so a barrier spans one
            channel; PCs of different channels that run identical lists reach it together.
    """

    n_vectors: int
    n_chunks: int
    gw_per_chunk: int
    rows_per_chunk: int
    macs_per_row: int
    n_res: int
    base_row: int = 0
    gap_ns: float = 0.0
    sync: bool = False

    def __post_init__(self):
        for name in ("n_vectors", "n_chunks", "gw_per_chunk", "rows_per_chunk", "macs_per_row",
                     "n_res", "base_row"):
            v = getattr(self, name)
            if not isinstance(v, (int, np.integer)) or v < 0:
                raise ConfigError(f"PIM kernel: {name} must be an integer >= 0, got {v!r}")
        if self.n_vectors < 1 or self.n_chunks < 1:
            raise ConfigError("PIM kernel: n_vectors and n_chunks must be >= 1")
        if self.gap_ns < 0:
            raise ConfigError(f"PIM kernel: gap_ns must be >= 0, got {self.gap_ns}")
        if not isinstance(self.sync, (bool, np.bool_)):
            raise ConfigError(f"PIM kernel: sync must be a bool, got {self.sync!r}")

    @property
    def macs(self) -> int:
        """MACAB commands of the whole kernel."""
        return self.n_vectors * self.n_chunks * self.rows_per_chunk * self.macs_per_row

    def _row(self, spec: DramSpec) -> list[int]:
        if self.macs_per_row > spec.pim.banks_per_pu * spec.org.columns:
            raise ConfigError(
                f"PIM kernel: macs_per_row ({self.macs_per_row}) exceeds the "
                f"{spec.pim.banks_per_pu * spec.org.columns} bursts a PU can read from one "
                f"activated row")
        values = {
            "n_vectors": self.n_vectors, "n_chunks": self.n_chunks,
            "gw_per_chunk": self.gw_per_chunk, "rows_per_chunk": self.rows_per_chunk,
            "macs_per_row": self.macs_per_row, "n_res": self.n_res, "base_row": self.base_row,
            "gap_ticks": int(np.ceil(self.gap_ns / spec.tick_ns - 1e-9)), "sync": int(self.sync),
        }
        return [values[f] for f in _dram.KERNEL_FIELDS]  # the engine's descriptor layout


@dataclass(frozen=True)
class PimResult:
    """Outcome of a PIM program (front end 2). Times in ns of the memory clock domain."""

    spec: str
    n_pcs: int  # pseudo-channels (PIM channels) of the whole memory system
    simulated_channels: int  # channels actually simulated (1 when all channels are identical)
    cycles: int  # memory CK until the last result is back
    time_ns: float
    pc_busy_ns: np.ndarray  # per PC: sum of its kernels' durations
    pc_finish_ns: np.ndarray  # per PC: time its last result is back
    kernel_ptr: np.ndarray  # CSR: kernels of PC q are kernel_*[kernel_ptr[q]:kernel_ptr[q+1]]
    kernel_start_ns: np.ndarray
    kernel_end_ns: np.ndarray
    command_counts: dict[str, int]  # over all PCs (replicated counts when simulated once)
    refreshes: int
    log: np.ndarray | None = field(default=None, repr=False)

    @property
    def pc_utilization(self) -> np.ndarray:
        """Busy fraction of every PC over the program's duration."""
        return self.pc_busy_ns / self.time_ns if self.time_ns > 0 else self.pc_busy_ns * 0

    @property
    def imbalance(self) -> float:
        """max / mean PC busy time (1.0 = perfectly balanced)."""
        m = float(self.pc_busy_ns.mean())
        return float(self.pc_busy_ns.max()) / m if m > 0 else 1.0

    def kernel_times_ns(self, pc: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = self.kernel_ptr[pc], self.kernel_ptr[pc + 1]
        return self.kernel_start_ns[a:b], self.kernel_end_ns[a:b]

    def to_dict(self) -> dict:
        return {
            "spec": self.spec, "n_pcs": self.n_pcs,
            "simulated_channels": self.simulated_channels, "cycles": self.cycles,
            "time_ns": self.time_ns, "mean_pc_utilization": float(self.pc_utilization.mean()),
            "imbalance": self.imbalance, "refreshes": self.refreshes,
            "command_counts": dict(self.command_counts),
        }


def run_pim(spec: DramSpec | str,
            program: Sequence[GemvKernel] | Sequence[Sequence[GemvKernel]], *,
            symmetric: bool | str = "auto", log: bool = False) -> PimResult:
    """Run a PIM program on every pseudo-channel of the spec (front end 2).

    Args:
        spec: a spec with PIM units (``spec.pim`` not None).
        program: either one kernel list that every PC runs (tensor parallelism: identical
            streams), or one kernel list per PC (``len == total pseudo-channels``; expert
            parallelism), PCs numbered channel-major (``channel * pseudochannels + pc``).
        symmetric: ``"auto"`` simulates a single channel when every channel runs identical
            streams and reports it for all (exact: channels share nothing - tests/test_pim_engine
            checks it against the full simulation); ``False`` always simulates every channel.
        log: return the command log of the simulated channels.
    """
    spec = get_spec(spec)
    if spec.pim is None:
        raise ConfigError(f"PIM program: spec {spec.name!r} has no PIM units (PIM presets: "
                          + ", ".join(n for n, s in _presets().items() if s.pim is not None)
                          + ")")
    o = spec.org
    n_pcs = o.total_pseudochannels
    per_pc: list[tuple[GemvKernel, ...]]
    if len(program) and all(isinstance(k, GemvKernel) for k in program):
        per_pc = [tuple(program)] * n_pcs
    else:
        per_pc = [tuple(s) for s in program]
        if len(per_pc) != n_pcs:
            raise ConfigError(f"PIM program: {len(per_pc)} kernel lists for {n_pcs} "
                              f"pseudo-channels of {spec.name}")
        for s in per_pc:
            for k in s:
                if not isinstance(k, GemvKernel):
                    raise ConfigError(f"PIM program: expected GemvKernel, got "
                                      f"{type(k).__name__}")
    npc = o.pseudochannels
    by_channel = [tuple(per_pc[c * npc:(c + 1) * npc]) for c in range(o.total_channels)]
    if symmetric not in ("auto", True, False):
        raise ConfigError(f"PIM program: symmetric must be 'auto' or False, got {symmetric!r}")
    one = symmetric is not False and all(ch == by_channel[0] for ch in by_channel)
    sim_channels = 1 if one else o.total_channels
    streams = per_pc[:sim_channels * npc]
    # kernel table with de-duplicated descriptor rows
    rows: dict[tuple, int] = {}
    table: list[list[int]] = []
    prog_ptr = np.zeros(len(streams) + 1, dtype=np.int64)
    prog_kern: list[int] = []
    for q, s in enumerate(streams):
        for k in s:
            row = tuple(k._row(spec))
            if row not in rows:
                rows[row] = len(table)
                table.append(list(row))
            prog_kern.append(rows[row])
        prog_ptr[q + 1] = len(prog_kern)
    n_fields = len(_dram.KERNEL_FIELDS)
    kernels = np.ascontiguousarray(np.array(table or [[1, 1] + [0] * (n_fields - 2)],
                                            dtype=np.int64).reshape(-1, n_fields))
    pk = np.ascontiguousarray(np.array(prog_kern or [0], dtype=np.int32))
    nk = max(len(prog_kern), 1)
    k_start = np.full(nk, -1, dtype=np.int64)
    k_end = np.full(nk, -1, dtype=np.int64)
    busy = np.zeros(len(streams), dtype=np.int64)
    finish = np.zeros(len(streams), dtype=np.int64)
    n_ref = np.zeros(len(streams), dtype=np.int64)
    dev = DramDevice(spec, channels=sim_channels, log=log)
    end = _dram.run_pim(dev._engine, kernels, prog_ptr, pk, k_start, k_end, busy, finish, n_ref)
    if end < 0:
        raise TimingViolation(f"{spec.name}: PIM program stopped: "
                              f"{STATUS_MESSAGES.get(dev._engine.last_status, 'engine error')}")
    reps = o.total_channels // sim_channels
    tick = spec.tick_ns
    counts = {k: v * reps for k, v in dev.command_counts().items()}
    ptr_all = np.zeros(n_pcs + 1, dtype=np.int64)
    lens = np.array([len(s) for s in per_pc], dtype=np.int64)
    ptr_all[1:] = np.cumsum(lens)
    ks, ke = (k_start[:len(prog_kern)] * tick, k_end[:len(prog_kern)] * tick)
    return PimResult(
        spec=spec.name, n_pcs=n_pcs, simulated_channels=sim_channels,
        cycles=-(-int(end) // spec.timing.ticks_per_ck), time_ns=float(end * tick),
        pc_busy_ns=np.tile(busy, reps) * tick, pc_finish_ns=np.tile(finish, reps) * tick,
        kernel_ptr=ptr_all, kernel_start_ns=np.tile(ks, reps), kernel_end_ns=np.tile(ke, reps),
        command_counts=counts, refreshes=int(n_ref.sum()) * reps,
        log=dev.log() if log else None,
    )


def _presets():
    return PRESETS
