"""Front end 2, PIM programs: GEMV kernel descriptors expanded to commands inside the engine
(``_dram_pim.pxi``), run back to back on one stateful device.

It owns the kernel descriptor (:class:`GemvKernel`, :data:`BARRIER_SCOPES`,
:data:`MAX_KERNEL_COUNT`), the device that runs programs and keeps its state
(:class:`PimDevice`, :data:`IDLE_POLICIES`), the result (:class:`PimResult`) and the one-shot
:func:`run_pim`. The symmetric fast path's class rule lives in :mod:`sieve.dram.symmetry`, the
exact program memo in :mod:`sieve.dram.memo`; the compiled engine is reached only through
:mod:`sieve.dram.engine`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from sieve.dram import engine
from sieve.dram.commands import COMMANDS
from sieve.dram.engine import _run_error
from sieve.dram.log import LOG_DTYPE
from sieve.dram.memo import ProgramMemo
from sieve.dram.pimmode import OVERHEADS, mode_sequences, reserved_rows, result_rows
from sieve.dram.presets import PRESETS, get_spec
from sieve.dram.spec import DramSpec
from sieve.dram.symmetry import (
    _class_log,
    _csr_rows,
    _stream_ids,
    _sync_insensitive,
    channel_classes,
)
from sieve.errors import ConfigError
from sieve.validate import check_bool

__all__ = [
    "BARRIER_SCOPES",
    "IDLE_POLICIES",
    "MAX_KERNEL_COUNT",
    "GemvKernel",
    "PimDevice",
    "PimResult",
    "run_pim",
]


#: What a :class:`PimDevice` does where a pseudo-channel has no work (``PimDevice(idle=)``):
#: ``"open"`` leaves rows open and defers the refreshes of channels without work to their next
#: work; ``"closed"`` closes a PC's PIM row when its stream ends and refreshes idle PCs on
#: schedule (docs/model-of-computation.md, *Front end 2*, idle policy).
IDLE_POLICIES = ("open", "closed")

#: Barrier scopes of a kernel (:attr:`GemvKernel.sync`).
BARRIER_SCOPES = ("channel", "all", "group")

#: Largest count accepted in a kernel descriptor (sanity bound: 2**40 vectors, chunks, ...).
MAX_KERNEL_COUNT = 1 << 40


_COUNT_FIELDS = ("n_vectors", "n_chunks", "gw_per_chunk", "rows_per_chunk", "macs_per_row",
                 "n_res", "base_row")
_KERNEL_CHECKS = ("vectors_per_pass", *_COUNT_FIELDS, "gap_ns", "sync", "group")


def _check_kernel_field(name: str, v) -> None:
    """One field of a :class:`GemvKernel`, checked (ConfigError naming it)."""
    if name == "vectors_per_pass":
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (
                1 <= v <= engine.MAX_VPP):
            raise ConfigError(f"PIM kernel: vectors_per_pass must be an integer in "
                              f"[1, {engine.MAX_VPP}], got {v!r}")
    elif name in _COUNT_FIELDS:
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not (
                0 <= v <= MAX_KERNEL_COUNT):
            raise ConfigError(f"PIM kernel: {name} must be an integer >= 0 and <= 2**40, "
                              f"got {v!r}")
    elif name == "gap_ns":
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
                or not math.isfinite(v) or v < 0:
            raise ConfigError(f"PIM kernel: gap_ns must be a finite number >= 0, got {v!r}")
    elif name == "sync":
        if not (isinstance(v, (bool, np.bool_)) or v in BARRIER_SCOPES):
            raise ConfigError(f"PIM kernel: sync must be a bool or one of "
                              f"{', '.join(BARRIER_SCOPES)}, got {v!r}")
    elif name == "group":
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
            raise ConfigError(f"PIM kernel: group must be an integer >= 0, got {v!r}")


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
        for name in _KERNEL_CHECKS:
            _check_kernel_field(name, getattr(self, name))
        if self.n_vectors < 1 or self.n_chunks < 1:
            raise ConfigError("PIM kernel: n_vectors and n_chunks must be >= 1")

    def evolve(self, **changes) -> GemvKernel:
        """``dataclasses.replace(self, **changes)`` that checks only the changed fields (the
        others were checked when this kernel was made): a program builder derives tens of
        thousands of kernels a step, and ``replace`` re-ran every check and ``__init__``."""
        out = object.__new__(type(self))
        d = out.__dict__
        d.update(self.__dict__)
        for name, v in changes.items():
            if name not in _KERNEL_CHECKS:
                raise TypeError(f"GemvKernel has no field {name!r}")
            _check_kernel_field(name, v)
            d[name] = v
        if d["n_vectors"] < 1 or d["n_chunks"] < 1:
            raise ConfigError("PIM kernel: n_vectors and n_chunks must be >= 1")
        return out

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

    def dram_rows(self, bundles: int = 1, parity: bool = False) -> int:
        """DRAM rows per bank the weights occupy from ``base_row``: :attr:`rows_used`, or with
        ``bundles`` > 1 bank bundles (``spec.pim.bundles``) the rows striped over them (kernel
        row ``i`` in bundle ``i % bundles``, DRAM row ``base_row + i // bundles``), or with
        bank-parity rows (``spec.pim.bank_parity``) the even chunks' rows (the first
        ``ceil(n_chunks / 2)`` chunks in the even banks, the rest in the odd ones)."""
        if parity:
            return 0 if not self.rows_used else -(-self.n_chunks // 2) * self.rows_per_chunk
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
        """The engine's descriptor row of this kernel (:data:`engine.KERNEL_FIELDS` order),
        checked against the spec (ConfigError when it does not fit)."""
        bursts, bundles, parity, res_rows, n_rows, reserved, tick_ns, fields = \
            _row_context(spec)
        if self.macs_per_row > bursts:
            raise ConfigError(
                f"PIM kernel: macs_per_row ({self.macs_per_row}) exceeds the "
                f"{bursts} bursts a PU can read from one activated row")
        used = self.dram_rows(bundles, parity)
        if used:  # the GRF_B writes of an "hbm-pim" protocol go to the row after the weights
            used += res_rows
        if used and self.base_row + used > n_rows:
            extra = " and the result row after them" if res_rows else ""
            raise ConfigError(
                f"PIM kernel {self}: its weights{extra} need rows {self.base_row}.."
                f"{self.base_row + used - 1} of every bank ({used} rows from base_row "
                f"{self.base_row}) but a bank of {spec.name} has {n_rows} rows")
        hit = [r for r in reserved if used and self.base_row <= r < self.base_row + used]
        if hit:
            raise ConfigError(
                f"PIM kernel {self}: its weights use rows {self.base_row}.."
                f"{self.base_row + used - 1}, which hold row {hit[0]:#x} that the "
                f"{spec.pim.modes!r} mode protocol of {spec.name} reserves (reserved: "
                f"{', '.join(f'{r:#x}' for r in reserved)}); use base_row")
        gap = int(np.ceil(self.gap_ns / tick_ns - 1e-9)) if self.gap_ns else 0
        if gap > engine.MAX_TICK // 2:
            raise ConfigError(f"PIM kernel: gap_ns {self.gap_ns} is beyond the simulated time "
                              f"range ({engine.MAX_TICK // 2 * tick_ns:.3g} ns)")
        d = self.__dict__
        return [gap if f == "gap_ticks" else int(d[f]) for f in fields]


def _row_context(spec: DramSpec) -> tuple:
    """What :meth:`GemvKernel._row` reads of a spec, computed once per spec object (specs are
    frozen) and kept on it."""
    ctx = spec.__dict__.get("_kernel_row_context")
    if ctx is None:
        ctx = (spec.pim_row_bursts, spec.pim.bundles, spec.pim.bank_parity, result_rows(spec),
               spec.org.rows,
               reserved_rows(spec), spec.tick_ns, tuple(engine.KERNEL_FIELDS))
        object.__setattr__(spec, "_kernel_row_context", ctx)
    return ctx


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
        arrays = self.spec.engine_arrays()
        arrays["refresh_perbank"] = 0  # PIM programs refresh all-bank (see the docstring)
        self._engine = engine.Engine(arrays, self.spec.org.total_channels, self.logging)
        self._steps, self._seq_ptr = mode_sequences(self.spec)  # empty without a protocol
        self._horizon = self._engine.history_horizon()
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
        return engine.named_counts(self._engine.counts())

    def _start_tick(self, start_ns) -> int:
        if start_ns is None:
            return self._now_tick
        if isinstance(start_ns, bool) or not isinstance(
                start_ns, (int, float, np.integer, np.floating)) or not math.isfinite(
                start_ns) or start_ns < 0:
            raise ConfigError(f"PIM device: start_ns must be a finite number >= 0, got "
                              f"{start_ns!r}")
        tick = int(np.ceil(start_ns / self.tick_ns - 1e-9)) if start_ns else 0
        if tick > engine.MAX_TICK // 2:
            raise ConfigError(f"PIM device: start_ns {start_ns} is beyond the simulated time "
                              f"range ({engine.MAX_TICK // 2 * self.tick_ns:.3g} ns)")
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
        :meth:`channel_classes` (computed by :func:`sieve.dram.symmetry.channel_classes`)."""
        eng = self._engine
        return channel_classes(eng.state_by_channel(), eng.refresh_interval, self._horizon,
                               self.idle, start, stream_ids)

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
        n_fields = len(engine.KERNEL_FIELDS)
        empty = [1 if f in ("n_vectors", "n_chunks", "vectors_per_pass") else 0
                 for f in engine.KERNEL_FIELDS]
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
                end = engine.run_pim(eng, kernels, prog_ptr, pk, pb, len(sets), sim, start,
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
        counts = engine.named_counts(delta)
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
