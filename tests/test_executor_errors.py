"""Errors from where the runs execute (issue 18): a worker's error reaches the user as its own
one line and class, without the run id; an unusable Dask scheduler is refused in seconds, in
one line, before any run; a cluster lost mid-sweep is one line, not dask's traceback."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from sieve.errors import ConfigError, SieveError, TimingViolation
from sieve.experiments import executor, worker
from sieve.experiments.points import Point
from sieve.system.run import RunConfig


def _points(n: int) -> list[Point]:
    return [Point(RunConfig(model="qwen3-30b-a3b", system="8xb200",
                            method="gpu-only", batch=4 * (k + 1), steps=1, warmup=0))
            for k in range(n)]


@pytest.mark.parametrize("n", [1, 2])
def test_a_worker_error_is_its_own_line_and_class(monkeypatch, n, tmp_path):
    from sieve.experiments.store import RunStore

    def fail(point, inputs=None):
        raise TimingViolation("hbm3-6400: request simulation stopped: livelock")

    monkeypatch.setattr(worker, "simulate_point", fail)
    pts = _points(n)
    store = RunStore(tmp_path)
    with pytest.raises(TimingViolation) as exc:
        executor.execute(pts, jobs=1, progress=False, store=store)
    msg = str(exc.value)
    assert msg.startswith("hbm3-6400: request simulation stopped: livelock")
    assert "\n" not in msg
    from sieve.experiments.config import run_id

    assert all(run_id(p) not in msg for p in pts)  # no run-id noise
    if n == 1:
        assert msg == "hbm3-6400: request simulation stopped: livelock"
    else:
        assert "(point: qwen3-30b-a3b 8xb200 gpu-only B=" in msg
    assert not (tmp_path / "runs").exists()  # nothing ran: no store


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_a_refused_scheduler_is_one_line_in_seconds_before_any_run(tmp_path, capsys):
    pytest.importorskip("distributed")
    from sieve.cli import main

    addr = f"tcp://127.0.0.1:{_closed_port()}"
    t0 = time.perf_counter()
    rc = main(["run", "--steps", "1", "--batch", "4", "--scheduler", addr,
               "--out", str(tmp_path / "o")])
    took = time.perf_counter() - t0
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "cannot connect" in err and addr in err and "Traceback" not in err
    assert took < executor.PROBE_TIMEOUT_S + 5  # dask's own retries took 20 s
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("addr, msg", [("foo", "expected tcp://host:port"),
                                       ("tcp://host:99999", "expected tcp://host:port"),
                                       ("", "expected an address"),
                                       ("tcp://127.0.0.1:", "expected tcp://host:port")])
def test_malformed_scheduler_addresses(addr, msg):
    pytest.importorskip("distributed")
    with pytest.raises(ConfigError, match=msg):
        executor.probe_scheduler(addr)


def test_a_server_that_is_not_a_scheduler_is_refused_in_seconds():
    pytest.importorskip("distributed")
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    port = srv.getsockname()[1]
    stop = threading.Event()

    def serve():  # answers every connection with garbage, as a proxy or a web server would
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                c, _ = srv.accept()
            except OSError:
                continue
            try:
                c.sendall(b"\xff" * 64 + b"HTTP/1.1 400 Bad Request\r\n\r\n")
                time.sleep(0.1)
            finally:
                c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    try:
        t0 = time.perf_counter()
        with pytest.raises(ConfigError, match="not as a Dask scheduler"):
            executor.probe_scheduler(f"tcp://127.0.0.1:{port}")
        assert time.perf_counter() - t0 < 2 * executor.PROBE_TIMEOUT_S + 2
    finally:
        stop.set()
        t.join(2)
        srv.close()


def test_a_cluster_lost_mid_sweep_is_one_line(monkeypatch):
    distributed = pytest.importorskip("distributed")

    class Lost(Exception):
        pass

    class Fut:
        def __init__(self, key):
            self.key = key

        def result(self):
            raise Lost("scheduler connection closed")

    class FakeClient:
        loop = None

        def __init__(self, *a, **k):
            pass

        def run(self, fn, *a):
            return {"tcp://w:1": worker.identity()} if fn is worker.identity else None

        def map(self, fn, payloads, pure, key):
            return [Fut(k) for k in key]

        def cancel(self, futures):
            pass

        def close(self):
            pass

    monkeypatch.setattr(executor, "probe_scheduler", lambda address: None)
    monkeypatch.setattr(distributed, "Client", FakeClient)
    monkeypatch.setattr(distributed, "as_completed", lambda futs, loop=None: iter(futs))
    with pytest.raises(SieveError) as exc:
        executor.execute(_points(2), scheduler="tcp://127.0.0.1:8786", progress=False)
    msg = str(exc.value)
    assert "the cluster failed while running (Lost: scheduler connection closed)" in msg
    assert "the same command resumes" in msg and "\n" not in msg
