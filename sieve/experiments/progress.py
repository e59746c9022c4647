"""Progress of a sweep on stderr: finished, running, elapsed, ETA.

On a terminal one status line is redrawn in place (``\\r``) after every event and every
second; otherwise (a log file, CI) one line is printed per finished run. The ETA scales the
elapsed time by the estimated work left over the estimated work done
(:func:`sieve.experiments.executor.estimate_cost` per run; runs reused from the store count
as neither).
"""

from __future__ import annotations

import shutil
import sys
import time
from typing import TextIO

__all__ = ["Progress", "format_seconds"]


def format_seconds(s: float) -> str:
    """``42s``, ``3m05s``, ``1h02m``."""
    s = max(0.0, float(s))
    if s < 60:
        return f"{s:.0f}s"
    if s < 3600:
        return f"{int(s // 60)}m{int(s % 60):02d}s"
    return f"{int(s // 3600)}h{int(s % 3600 // 60):02d}m"


class Progress:
    """A sweep's progress display.

    Args:
        total: runs in the sweep.
        reused: runs found finished in the store (not run again).
        work: estimated cost of the runs to simulate (for the ETA).
        stream: where to write (default stderr); ``quiet`` writes nothing.
    """

    def __init__(self, total: int, reused: int, work: float, *, stream: TextIO | None = None,
                 quiet: bool = False, label: str = ""):
        self.total, self.reused = total, reused
        self.work_left = float(work)
        self.work_done = 0.0
        self.done = 0
        self.running: dict[str, str] = {}
        self.stream = stream or sys.stderr
        self.quiet = quiet
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.t0 = time.perf_counter()
        self._last_draw = 0.0
        self.label = label
        if not quiet:
            todo = total - reused
            msg = (f"{label}{total} run(s): {reused} already finished (reused), "
                   f"{todo} to simulate")
            print(msg, file=self.stream, flush=True)

    def eta_s(self) -> float | None:
        if self.work_done <= 0:
            return None
        el = time.perf_counter() - self.t0
        return el * self.work_left / self.work_done

    def _status(self) -> str:
        el = time.perf_counter() - self.t0
        eta = self.eta_s()
        n = self.reused + self.done
        return (f"[{n}/{self.total}] {len(self.running)} running, elapsed {format_seconds(el)}"
                + (f", ETA {format_seconds(eta)}" if eta is not None and self.running else ""))

    def started(self, key: str, what: str) -> None:
        self.running[key] = what
        self._draw()

    def finished(self, key: str, what: str, seconds: float, cost: float) -> None:
        self.running.pop(key, None)
        self.done += 1
        self.work_done += cost
        self.work_left = max(self.work_left - cost, 0.0)
        if self.quiet:
            return
        if self.tty:
            self._draw(force=True)
        else:
            run = ("; running: " + ", ".join(list(self.running.values())[:4])
                   + (", ..." if len(self.running) > 4 else "")) if self.running else ""
            print(f"{self._status()} | done {what} ({seconds:.1f} s){run}", file=self.stream,
                  flush=True)

    def tick(self) -> None:
        """Redraw the terminal line if a second has passed."""
        if self.tty and time.perf_counter() - self._last_draw >= 1.0:
            self._draw(force=True)

    def _draw(self, force: bool = False) -> None:
        if self.quiet or not self.tty:
            return
        self._last_draw = time.perf_counter()
        width = shutil.get_terminal_size((100, 20)).columns - 1
        line = self._status()
        if self.running:
            line += " | " + ", ".join(self.running.values())
        print("\r" + line[:width].ljust(width), end="", file=self.stream, flush=True)

    def close(self, summary: str = "") -> None:
        if self.quiet:
            return
        if self.tty:
            print("\r" + " " * (shutil.get_terminal_size((100, 20)).columns - 1) + "\r", end="",
                  file=self.stream)
        el = time.perf_counter() - self.t0
        print(f"[{self.reused + self.done}/{self.total}] finished in {format_seconds(el)}"
              + (f": {summary}" if summary else ""), file=self.stream, flush=True)
