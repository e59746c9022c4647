"""One command at a time: :class:`DramDevice` and its :class:`Address`.

:class:`DramDevice` drives a memory system command by command: :meth:`~DramDevice.earliest`,
:meth:`~DramDevice.probe`, strict :meth:`~DramDevice.issue` (raises
:class:`~sieve.errors.TimingViolation`); the basis of the tight-gate tests. It validates its
inputs and reaches the compiled engine through :mod:`sieve.dram.engine` (the door). The other
ways in have their own modules: :mod:`sieve.dram.controller` (front end 1: a read/write
request trace through per-channel FR-FCFS controllers, :func:`simulate_requests`) and
:mod:`sieve.dram.pim_device` (front end 2: PIM programs on a :class:`PimDevice`,
:func:`run_pim`).

Times returned to users are in memory-clock cycles (CK, ``*_ck``) and nanoseconds (``*_ns``);
engine ticks (``*_ticks``) appear only where exactness matters (logs, gates).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import numpy as np

from sieve.dram import engine
from sieve.dram.commands import COMMAND_INDEX, COMMANDS, LEVEL_INDEX

# Re-exports: these names moved out of this module (issue 17, one concept per module) and are
# imported here only so that ``from sieve.dram.device import X`` keeps working for users and
# tests. Code inside sieve imports each name from the module that owns it.
from sieve.dram.controller import (  # noqa: F401  (re-export)
    LIFECYCLES,
    PAGE_POLICIES,
    ControllerConfig,
    DramResult,
    simulate_requests,
)
from sieve.dram.engine import DEBUG_BUILD, STATUS_MESSAGES  # noqa: F401  (re-export)
from sieve.dram.log import LOG_DTYPE  # noqa: F401  (re-export)
from sieve.dram.memo import ProgramMemo  # noqa: F401  (re-export)
from sieve.dram.pim_device import (  # noqa: F401  (re-export)
    BARRIER_SCOPES,
    IDLE_POLICIES,
    MAX_KERNEL_COUNT,
    GemvKernel,
    PimDevice,
    PimResult,
    run_pim,
)
from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, TimingViolation
from sieve.validate import check_bool, check_int

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
        self._engine = engine.Engine(self.spec.engine_arrays(), self.channels,
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
                -engine.MAX_TICK <= clk <= engine.MAX_TICK):
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
                f"{engine.STATUS_MESSAGES.get(rc, f'status {rc}')} "
                f"(earliest by timing: {earliest})"
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
        return engine.named_counts(self._engine.counts())

    def open_rows(self, buffer: int = 0) -> np.ndarray:
        """Open row of every bank (-1 closed) in row buffer ``buffer`` (1 = the PIM buffer of
        a spec with dual row buffers)."""
        n = 2 if (self.spec.pim is not None and self.spec.pim.dual_row_buffer) else 1
        if isinstance(buffer, bool) or buffer not in range(n):
            raise ConfigError(f"{self.spec.name}: row buffer {buffer!r} out of range [0, {n})")
        return self._engine.open_rows(int(buffer))

    def ns(self, ticks: int) -> float:
        return ticks * self.tick_ns
