"""Running points: in this process, in local worker processes (``--jobs N``) or on a Dask
cluster (``--scheduler tcp://host:port``), resumably.

:func:`execute` takes the points of a sweep and returns one :class:`~sieve.experiments.store.
RunRecord` per point, in point order:

1. every point gets its run id (:func:`sieve.experiments.config.run_id`); a point whose run
   file in the store is reusable (same id, point and code) is not run again;
2. the others run, longest first by :func:`estimate_cost` (so the last runs to finish are
   short ones), each worker preferring runs that share step inputs with the runs it did before
   (:mod:`sieve.experiments.cache`); each finished run is written to the store at once
   (atomically), so a sweep killed at any moment keeps every run that finished;
3. progress goes to stderr (:mod:`sieve.experiments.progress`).

A run's result depends only on its point (every random choice comes from its seed), so
results are identical whatever the backend, the number of workers, the order or the store
(tests/test_experiments.py). The first run that fails stops the sweep: the workers are stopped
and the error is raised, naming the point; runs that finished stay in the store. Ctrl-C (or
SIGTERM, which the command line turns into the same interrupt) stops the workers the same
way.

Local workers are processes of this machine started by :mod:`multiprocessing` (``forkserver``
where available: they fork from a clean process that has imported sieve, so starting one is
cheap and no thread of the caller is inherited), each serving runs over a pipe until the sweep
ends (:func:`sieve.experiments.worker.serve`). Only the calling process writes files.
"""

from __future__ import annotations

import functools
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from sieve.errors import ConfigError, SieveError
from sieve.experiments import worker
from sieve.experiments.config import code_digest, run_id
from sieve.experiments.points import Point, PointResult
from sieve.experiments.progress import Progress
from sieve.experiments.store import RunRecord, RunStore

__all__ = ["ExecResult", "default_jobs", "estimate_cost", "execute"]

#: Relative cost of a run per method, and its factor for colocated batches (ordering and ETA
#: only; rough fits to the run times of `sieve run --paper`, docs/performance.md): methods
#: that put experts on PIM run engine programs for them, AllExp every expert and, in a
#: colocated batch, every prompt token.
_METHOD_COST = {"gpu-only": 0.05, "noexp": 0.5, "pimoe": 1.0, "allexp": 3.0}
_COLOCATED_COST = {"gpu-only": 1.0, "noexp": 1.0, "allexp": 30.0}


@functools.lru_cache(maxsize=256)
def _n_gpus(system: str, overrides: tuple) -> int:
    try:
        from sieve.hw.system import get_system

        return get_system(system, dict(overrides) or None).n_gpus
    except SieveError:
        return 1


def default_jobs() -> int:
    """Worker processes by default: the CPUs this process may use."""
    try:
        return max(len(os.sched_getaffinity(0)), 1)
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return max(os.cpu_count() or 1, 1)


def estimate_cost(point: Point) -> float:
    """A rough relative cost of a run (ordering and ETA only, never a result): batch size to
    the power 0.8, times the square root of the simulated GPUs, layers, steps and per-method
    factors."""
    c = point.config
    gpus = _n_gpus(c.system, c.system_overrides) if c.parallel == "ep" else 1
    layers = c.layers if c.layers is not None else 48
    return ((1 + c.batch) ** 0.8 * gpus ** 0.5 * layers * (c.steps + c.warmup)
            * _METHOD_COST.get(c.method, 1.5)
            * (_COLOCATED_COST.get(c.method, 3.0) if c.colocated else 1.0))


@dataclass
class ExecResult:
    """What :func:`execute` returns.

    Attributes:
        records: one per point, in point order.
        reused: points found finished in the store.
        simulated: points run now.
        wall_s: wall time of the whole call.
        worker_peak_rss_bytes: peak resident memory of each worker (by worker name).
        cache_entries: GEMV layout choices the workers learned (for the cache file).
    """

    records: list[RunRecord]
    reused: int = 0
    simulated: int = 0
    wall_s: float = 0.0
    worker_peak_rss_bytes: dict[str, int] = field(default_factory=dict)
    cache_entries: list = field(default_factory=list)


def _group(point: Point) -> tuple:
    """Runs with equal groups share their step inputs (sieve.system.run.step_input_key)."""
    c = point.config
    return (c.model, c.workload, c.batch, c.colocated, c.n_prefill, c.seed, c.trace)


def execute(points: Sequence[Point], *, jobs: int | None = None, scheduler: str | None = None,
            store: RunStore | None = None, rerun: bool = False, cache_entries: list | None = None,
            progress: bool | Callable[..., Progress] = True, label: str = "") -> ExecResult:
    """Run every point not already finished in ``store`` (module doc).

    Args:
        points: the points.
        jobs: local worker processes (default :func:`default_jobs`; 1 runs in this process).
        scheduler: a Dask scheduler address (``tcp://host:port``) instead of local processes.
        store: where finished runs are found and written (None: nothing stored).
        rerun: simulate every point again (their files are replaced).
        cache_entries: GEMV layout choices to give every worker first (a cache file's).
        progress: show progress on stderr.
        label: prefix of the progress lines.

    Raises:
        SieveError: a run failed (the message names it); ConfigError for a bad ``jobs`` or
            an unreachable scheduler.
        KeyboardInterrupt: interrupted (the workers are stopped first).
    """
    t0 = time.perf_counter()
    if jobs is None:
        jobs = default_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1:
        raise ConfigError(f"--jobs must be an integer >= 1, got {jobs!r}")
    if scheduler is not None:
        probe_scheduler(scheduler)  # before any line of progress or any run
    pts = list(points)
    ids = [run_id(p) for p in pts]
    records: list[RunRecord | None] = [None] * len(pts)
    reused = 0
    if store is not None and not rerun:
        for i, (p, rid) in enumerate(zip(pts, ids)):
            rec = store.get(p, rid)
            if rec is not None:
                records[i] = rec
                reused += 1
    todo = [i for i, r in enumerate(records) if r is None]
    cost = {i: estimate_cost(pts[i]) for i in todo}
    todo.sort(key=lambda i: (-cost[i], i))  # longest first; ties in point order
    prog = None
    if progress:
        prog = (progress if callable(progress) else Progress)(
            len(pts), reused, sum(cost.values()), label=label)
    out = ExecResult([], reused=reused)
    learned: list = []
    code = code_digest()

    def done(i: int, res: dict) -> None:
        if not res.get("ok"):
            if res.get("sieve_error"):
                # the worker's own line and error class, as if it had run here; a sweep of
                # several points says which point (not its run id: the id is for the store)
                raise _worker_error(res, None if len(pts) == 1 else _short(pts[i]))
            what = f"run {ids[i]} ({pts[i].describe()})"
            raise RuntimeError(f"{what} failed in a worker:\n{res.get('traceback') or ''}"
                               f"{res['error']}")
        r = res["result"]
        rec = RunRecord(ids[i], pts[i], PointResult(r["row"], r["timeline"], r["channels"],
                                                    r["system"]),
                        seconds=res["seconds"], worker=res["worker"], code=res["code"],
                        cpu_seconds=res.get("cpu_seconds", 0.0))
        if store is not None:
            store.put(rec)
        records[i] = rec
        learned.extend(res.get("entries") or [])
        w = res.get("worker", "")
        out.worker_peak_rss_bytes[w] = max(out.worker_peak_rss_bytes.get(w, 0),
                                           int(res.get("peak_rss_bytes") or 0))
        out.simulated += 1
        if prog is not None:
            prog.finished(ids[i], _short(pts[i]), res["seconds"], cost[i])

    payloads = {i: {"id": ids[i], "point": pts[i].to_dict(), "code": code} for i in todo}
    if todo:
        if scheduler is not None:
            _run_dask(scheduler, todo, payloads, cache_entries, done, prog, pts)
        elif jobs == 1 or len(todo) == 1:
            _run_here(todo, payloads, cache_entries, done, prog, pts)
        else:
            _run_local(min(jobs, len(todo)), todo, payloads, cache_entries, done, prog, pts)
    out.records = records  # type: ignore[assignment]
    out.cache_entries = learned
    out.wall_s = time.perf_counter() - t0
    if prog is not None:
        cpu = sum(r.cpu_seconds for r in records if r is not None and not r.stored)
        peak = max(out.worker_peak_rss_bytes.values(), default=0)
        prog.close(f"{out.simulated} simulated ({cpu:.0f} s of worker CPU"
                   + (f", worker peak memory {peak / 2**20:.0f} MiB" if peak else "")
                   + f"), {reused} reused")
    return out


def _worker_error(res: dict, point: str | None) -> SieveError:
    """The SieveError a worker reported, of its class (ConfigError, TimingViolation, ...)."""
    from sieve import errors

    cls = getattr(errors, str(res.get("error_class")), None)
    if not (isinstance(cls, type) and issubclass(cls, SieveError)):
        cls = SieveError
    msg = str(res.get("error", ""))
    return cls(msg if point is None else f"{msg} (point: {point})")


def _short(p: Point) -> str:
    c = p.config
    return (f"{c.model} {c.system} {c.method} B={c.batch}" + (" coloc" if c.colocated else "")
            + (f" {c.workload}" if c.workload != "hh-rlhf" else "")
            + (f" seed {c.seed}" if c.seed else ""))


# ---- in this process ---------------------------------------------------------------------------

def _run_here(todo, payloads, entries, done, prog, pts) -> None:
    if entries or worker._CACHE is None:
        worker.init(entries)
    for i in todo:
        if prog is not None:
            prog.started(payloads[i]["id"], _short(pts[i]))
        done(i, worker.run_task(payloads[i]))


# ---- local worker processes -------------------------------------------------------------------

def _context():
    import multiprocessing as mp

    if "forkserver" in mp.get_all_start_methods():
        ctx = mp.get_context("forkserver")
        ctx.set_forkserver_preload(["sieve.experiments.worker"])
        return ctx
    return mp.get_context("spawn")  # pragma: no cover - not Linux


class _Worker:
    __slots__ = ("proc", "conn", "task", "groups")

    def __init__(self, proc, conn):
        self.proc, self.conn, self.task = proc, conn, None
        self.groups: deque = deque(maxlen=8)


def _run_local(n: int, todo, payloads, entries, done, prog, pts) -> None:
    from multiprocessing.connection import wait

    ctx = _context()
    workers: list[_Worker] = []
    pending = deque(todo)
    try:
        for _ in range(n):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=worker.serve, args=(child, entries), daemon=True,
                               name="sieve-worker")
            proc.start()
            child.close()
            workers.append(_Worker(proc, parent))

        def assign(w: _Worker) -> None:
            if not pending:
                return
            busy = {g for o in workers if o is not w and o.task is not None
                    for g in (_group(pts[o.task]),)}
            pick = next((i for i in pending if _group(pts[i]) in w.groups), None)
            if pick is None:
                pick = next((i for i in pending if _group(pts[i]) not in busy), pending[0])
            pending.remove(pick)
            w.task = pick
            w.groups.append(_group(pts[pick]))
            w.conn.send(payloads[pick])
            if prog is not None:
                prog.started(payloads[pick]["id"], _short(pts[pick]))

        for w in workers:
            assign(w)
        while any(w.task is not None for w in workers):
            busy = [w for w in workers if w.task is not None]
            ready = wait([w.conn for w in busy] + [w.proc.sentinel for w in busy], timeout=1.0)
            if prog is not None:
                prog.tick()
            for w in busy:
                if w.conn in ready or (w.proc.sentinel in ready and w.conn.poll()):
                    try:
                        res = w.conn.recv()
                    except (EOFError, OSError):
                        res = None
                    if res is not None:
                        i, w.task = w.task, None
                        if res.get("ok"):
                            assign(w)  # keep the worker busy while the result is written
                        done(i, res)
                        continue
                if w.proc.sentinel in ready or not w.proc.is_alive():
                    code = w.proc.exitcode
                    why = " (killed: out of memory?)" if code in (-9, 137) else ""
                    raise SieveError(f"run {payloads[w.task]['id']} ({pts[w.task].describe()})"
                                     f": its worker process died with exit code {code}{why}")
    finally:
        for w in workers:
            if w.task is None and w.proc.is_alive():
                try:
                    w.conn.send(None)
                except OSError:
                    pass
        for w in workers:
            if w.task is not None and w.proc.is_alive():
                w.proc.terminate()  # interrupted or failed: stop its run now
        for w in workers:
            w.proc.join(timeout=5)
            if w.proc.is_alive():  # pragma: no cover
                w.proc.kill()
                w.proc.join()
            w.conn.close()


# ---- Dask -------------------------------------------------------------------------------------

#: Seconds a TCP connection to a Dask scheduler may take in :func:`probe_scheduler` (a live
#: scheduler answers in milliseconds; dask's own connect retries for ``timeout``, 20 s here).
PROBE_TIMEOUT_S = 3.0


def probe_scheduler(address: str) -> None:
    """Check, in seconds, that ``--scheduler`` can be used: dask.distributed installed, the
    address well formed and, for ``tcp://host:port`` (or ``host:port``), something listening
    there. A refused or unroutable address is one ConfigError line at once instead of dask's
    20 s of retries followed by its traceback; other schemes (tls://, ucx://, inproc://) are
    left to dask.

    Raises:
        ConfigError: naming ``--scheduler`` and the reason.
    """
    import socket

    try:
        import distributed  # noqa: F401
    except ImportError:
        raise ConfigError("--scheduler needs dask.distributed, an optional extra: pip install "
                          "'sieve-sim[dask]' (or '.[dask]' in a checkout)") from None
    if not isinstance(address, str) or not address.strip():
        raise ConfigError("--scheduler: expected an address such as tcp://host:8786")
    rest = address[len("tcp://"):] if address.startswith("tcp://") else address
    if "://" in rest:
        return
    host, sep, port = rest.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"--scheduler {address!r}: expected tcp://host:port (port "
                          "1..65535), e.g. tcp://127.0.0.1:8786")
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S):
            pass
    except OSError as exc:
        reason = exc.strerror or (f"no answer within {PROBE_TIMEOUT_S:g} s"
                                  if isinstance(exc, TimeoutError) else type(exc).__name__)
        raise ConfigError(f"--scheduler {address!r}: cannot connect ({reason}); is the "
                          "scheduler running (dask scheduler) and the address right?") from None
    # something listens: ask it who it is, in the scheduler's own protocol, with a deadline
    # (a non-Dask server there made dask.Client read garbage, run out of memory, and then
    # spend 40 s closing)
    import asyncio

    from distributed.core import rpc

    async def identity():
        r = rpc(address, connection_args={}, timeout=PROBE_TIMEOUT_S)
        try:
            return await asyncio.wait_for(r.identity(), PROBE_TIMEOUT_S)
        finally:
            await r.close_rpc()

    try:
        ident = asyncio.run(identity())
    except Exception as exc:
        raise ConfigError(f"--scheduler {address!r}: something answers there but not as a Dask "
                          f"scheduler ({type(exc).__name__}: {str(exc)[:120]})") from None
    if not isinstance(ident, dict) or ident.get("type") != "Scheduler":
        kind = ident.get("type") if isinstance(ident, dict) else type(ident).__name__
        raise ConfigError(f"--scheduler {address!r}: answers as {kind!r}, not a Dask "
                          "scheduler (give the scheduler's address, not a worker's)")


def _run_dask(address: str, todo, payloads, entries, done, prog, pts) -> None:
    probe_scheduler(address)
    from distributed import Client, as_completed

    try:
        client = Client(address, timeout="20s", set_as_default=False)
    except (OSError, TimeoutError, ValueError) as exc:
        raise ConfigError(f"--scheduler {address!r}: cannot connect ({exc})") from None
    futures = []
    try:
        here = code_digest()
        ids = client.run(worker.identity)
        if not ids:
            raise ConfigError(f"--scheduler {address!r}: the cluster has no worker")
        other = {w: i for w, i in ids.items() if i.get("code") != here}
        if other:
            w, i = next(iter(other.items()))
            raise ConfigError(f"--scheduler {address!r}: worker {w} runs other sieve code "
                              f"(version {i.get('version')}, code digest "
                              f"{str(i.get('code'))[:12]}, here {here[:12]}); install the "
                              "same sieve on every worker")
        client.run(worker.init, entries)
        futures = client.map(worker.run_task, [payloads[i] for i in todo], pure=False,
                             key=[f"sieve-run-{payloads[i]['id']}" for i in todo])
        index = {f.key: i for f, i in zip(futures, todo)}
        left = len(todo)
        if prog is not None:
            prog.started("dask", f"{left} on the cluster ({len(ids)} workers)")
        for fut in as_completed(futures, loop=client.loop):
            i = index[fut.key]
            left -= 1
            if prog is not None:
                prog.running["dask"] = f"{left} on the cluster ({len(ids)} workers)"
                if not left:
                    prog.running.pop("dask")
            try:
                res = fut.result()
            except (SieveError, KeyboardInterrupt):
                raise
            except Exception as exc:  # the cluster, not the run: a lost scheduler or worker
                raise SieveError(f"--scheduler {address!r}: the cluster failed while "
                                 f"running ({type(exc).__name__}: {exc}); the finished runs "
                                 "are kept, the same command resumes") from None
            done(i, res)
    except (SieveError, KeyboardInterrupt):
        raise
    except (OSError, TimeoutError) as exc:  # the scheduler went away between the calls
        raise SieveError(f"--scheduler {address!r}: lost the scheduler ({type(exc).__name__}: "
                         f"{exc}); the finished runs are kept, the same command resumes"
                         ) from None
    finally:
        if futures:
            client.cancel(futures)
        client.close()


def run_points_here(points: Sequence[Point]) -> list[PointResult]:
    """Simulate points in this process, in order, without a store or progress (library use
    and tests)."""
    return [r.result for r in execute(points, jobs=1, progress=False).records]
