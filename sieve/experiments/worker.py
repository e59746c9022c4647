"""What runs inside a worker (a local worker process, a Dask worker, or the calling process for
``--jobs 1``): one point from its plain-data payload to a plain-data result.

Payload: ``{"id": run id, "point": Point.to_dict(), "code": code digest}``. Result: ``{"id",
"ok": True, "result": {row, timeline, channels, system}, "seconds", "worker", "code",
"entries": new GEMV layout choices, "peak_rss_bytes"}``, or ``{"id", "ok": False, "error",
"sieve_error", "traceback"}``. Plain data only, so the same function serves a process pipe and
Dask, and results are identical wherever a point runs (its randomness comes from its seed).

The process keeps a :class:`~sieve.experiments.cache.WorkerCache` across runs (module global,
guarded by a lock for Dask's threads).
"""

from __future__ import annotations

import os
import socket
import threading
import time
import traceback

from sieve.errors import SieveError
from sieve.experiments.cache import WorkerCache
from sieve.experiments.config import code_digest
from sieve.experiments.points import Point, simulate_point

__all__ = ["identity", "init", "run_task", "serve"]

_CACHE: WorkerCache | None = None
_LOCK = threading.Lock()
# the code this process runs, read when it imported sieve (a local worker forks from a server
# that imported this module at the sweep's start: editing the source during a sweep does not
# make its workers look like other code)
code_digest()


def init(entries: list | None = None) -> bool:
    """(Re)start this process's worker cache, loading layout-choice entries."""
    global _CACHE
    with _LOCK:
        _CACHE = WorkerCache(entries)
    return True


def identity() -> dict:
    """Which sieve this worker runs (checked by the collecting process)."""
    import sieve

    return {"version": sieve.__version__, "code": code_digest(), "pid": os.getpid()}


def _peak_rss_bytes() -> int:
    try:
        import resource

        return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # Linux: KiB
    except (ImportError, OSError):  # pragma: no cover
        return 0


def run_task(payload: dict) -> dict:
    """Simulate one point (see the module doc)."""
    rid = payload.get("id", "")
    try:
        if payload.get("code") not in (None, code_digest()):
            raise SieveError(f"worker {socket.gethostname()}:{os.getpid()} runs other sieve "
                             f"code than the sweep (code digest {code_digest()[:12]}, "
                             f"expected {str(payload.get('code'))[:12]}); install the same "
                             "sieve on every worker")
        if _CACHE is None:
            init()
        point = Point.from_dict(payload["point"])
        t0, c0 = time.perf_counter(), time.process_time()
        with _LOCK:  # one run at a time per process (Dask threads): the memos are shared
            res = simulate_point(point, inputs=_CACHE.inputs)
            entries = _CACHE.new_entries()
        return {"id": rid, "ok": True,
                "result": {"row": res.row, "timeline": res.timeline,
                           "channels": res.channels, "system": res.system},
                "seconds": time.perf_counter() - t0,
                "cpu_seconds": time.process_time() - c0,
                "worker": f"{socket.gethostname()}:{os.getpid()}", "code": code_digest(),
                "entries": entries, "peak_rss_bytes": _peak_rss_bytes()}
    except SieveError as exc:
        return {"id": rid, "ok": False, "error": str(exc), "sieve_error": True,
                "error_class": type(exc).__name__, "traceback": ""}
    except Exception as exc:  # a bug: its traceback goes back to the collecting process
        return {"id": rid, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                "sieve_error": False, "traceback": traceback.format_exc()}


def serve(conn, entries: list | None) -> None:
    """A local worker process: answer payloads from the pipe until it closes (or None)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the collecting process stops us
    init(entries)
    while True:
        try:
            payload = conn.recv()
        except (EOFError, OSError):
            return
        if payload is None:
            return
        out = run_task(payload)
        try:
            conn.send(out)
        except (BrokenPipeError, OSError):
            return
