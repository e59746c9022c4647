"""Runs hostile-input cases in a child process under a memory limit (tests/test_hostile_corpus.py).

Usage: ``python tests/hostile_runner.py CASES.json RESULTS.jsonl`` with the environment the
test sets. Each case is ``{"id", "kind": "cli"|"lib", ...}``; the runner sets an address-space
limit (``SIEVE_HOSTILE_AS_BYTES``) and a per-case alarm (``SIEVE_HOSTILE_CASE_S``) first, so
a regression that allocates without bound or hangs fails its case instead of taking the machine
down, then appends one JSON line per case to RESULTS as it finishes (a case that crashes the
interpreter is the one after the last line written; the test restarts the runner after it).

cli: ``argv`` run through ``sieve.cli.main`` in a fresh working folder ``cwd``; recorded: exit
code, stdout, stderr, and every path that exists under ``cwd`` afterwards.
lib: ``call`` names an entry of :data:`LIB_CALLS` and ``value`` (a key of :data:`VALUES`) the
hostile argument; recorded: the exception's class, its message and whether it is a SieveError.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import signal
import sys
import time


class CaseTimeout(BaseException):
    pass


def _alarm(signum, frame):
    raise CaseTimeout


#: Hostile argument values of the library cases, by name (JSON cannot carry them).
VALUES = {
    "nan": float("nan"), "inf": float("inf"), "-inf": float("-inf"), "neg": -1,
    "2**63": 2**63, "2**200": 2**200, "float2.7": 2.7, "str3": "3", "true": True,
    "list": [], "dict": {}, "object": object(), "bytes": b"3", "complex": 3j,
}


def _lib_calls():
    """name -> (function of one hostile value, values that are legitimate for it)."""
    import numpy as np

    from sieve import pim
    from sieve.dram import device as dram
    from sieve.dram import memtrace
    from sieve.dram.mapping import AddressMapper
    from sieve.dram.presets import get_spec
    from sieve.hw.presets import get_gpu
    from sieve.hw.system import get_system
    from sieve.model import get_model
    from sieve.model.parts import GqaAttention
    from sieve.system.run import RunConfig
    from sieve.system.step import StepOptions
    from sieve.workload.router import SyntheticRouter
    from sieve.workload.trace import RoutingTrace, TraceMeta

    spec = "hbm3-6400"
    tr = memtrace.synthetic_trace("seq", 64)
    rt = RoutingTrace(expert_ids=np.tile(np.array([0, 1], dtype=np.int16), (4, 1, 1)),
                      step_offsets=np.array([0, 2, 4]), request_ids=np.arange(4),
                      phase=np.ones(4, dtype=np.int8),
                      meta=TraceMeta("m", 8, 2, (0,)))

    def run(**kw):
        base = dict(model="qwen3-30b-a3b", system="8xb200", method="gpu-only", batch=4,
                    steps=1, warmup=0)
        base.update(kw)
        return RunConfig(**base)

    calls = {
        "DramDevice.channels": (lambda v: dram.DramDevice(spec, channels=v), ()),
        "DramDevice.log": (lambda v: dram.DramDevice(spec, log=v), ("true",)),
        "DramDevice.spec": (lambda v: dram.DramDevice(v), ()),
        "simulate_requests.channels": (lambda v: dram.simulate_requests(spec, tr, channels=v),
                                       ()),
        "simulate_requests.request_bytes": (
            lambda v: dram.simulate_requests(spec, tr, request_bytes=v), ()),
        "simulate_requests.chunk_requests": (
            lambda v: dram.simulate_requests(spec, tr, chunk_requests=v), ()),
        "simulate_requests.queue_size": (
            lambda v: dram.simulate_requests(spec, tr, queue_size=v), ()),
        "simulate_requests.trace": (lambda v: dram.simulate_requests(spec, v), ()),
        "simulate_requests.log_sink": (lambda v: dram.simulate_requests(spec, tr, log_sink=v),
                                       ()),
        "ControllerConfig.queue_size": (lambda v: dram.ControllerConfig(queue_size=v), ()),
        "ControllerConfig.write_high_watermark": (
            lambda v: dram.ControllerConfig(write_high_watermark=v), ()),
        "synthetic_trace.n": (lambda v: memtrace.synthetic_trace("seq", v), ()),
        "synthetic_trace.stride_bytes": (
            lambda v: memtrace.synthetic_trace("seq", 8, stride_bytes=v), ()),
        "synthetic_trace.write_fraction": (
            lambda v: memtrace.synthetic_trace("seq", 8, write_fraction=v), ()),
        "synthetic_trace.seed": (lambda v: memtrace.synthetic_trace("rand", 8, seed=v),
                                 ("2**63", "2**200")),
        "get_spec.name": (lambda v: get_spec(v), ()),
        "get_spec.override": (lambda v: get_spec(spec, {"nRCDRD": v}), ()),
        "AddressMapper.channels": (lambda v: AddressMapper(get_spec(spec), channels=v), ()),
        "AddressMapper.request_bytes": (
            lambda v: AddressMapper(get_spec(spec), request_bytes=v), ()),
        "gemv_layout.out_rows": (lambda v: pim.gemv_layout("b200-hbm3e-pim", v, 64), ()),
        "gemv_layout.in_cols": (lambda v: pim.gemv_layout("b200-hbm3e-pim", 64, v), ()),
        "get_model.name": (lambda v: get_model(v), ()),
        "get_gpu.name": (lambda v: get_gpu(v), ()),
        "get_system.name": (lambda v: get_system(v), ()),
        "GqaAttention.n_heads": (lambda v: GqaAttention(v, 4, 128), ()),
        "GqaAttention.head_dim": (lambda v: GqaAttention(32, 4, v), ()),
        "TraceMeta.n_experts": (lambda v: TraceMeta("m", v, 2, (0,)), ()),
        "TraceMeta.top_k": (lambda v: TraceMeta("m", 8, v, (0,)), ()),
        "RoutingTrace.counts": (lambda v: rt.counts(v), ()),
        "RoutingTrace.steps": (lambda v: rt.steps(0, v), ()),
        "SyntheticRouter.generate.batch": (
            lambda v: SyntheticRouter("qwen3-30b-a3b").generate(v, 1), ()),
        "SyntheticRouter.generate.steps": (
            lambda v: SyntheticRouter("qwen3-30b-a3b").generate(4, v), ()),
        "RunConfig.batch": (lambda v: run(batch=v), ()),
        "RunConfig.steps": (lambda v: run(steps=v), ()),
        "RunConfig.warmup": (lambda v: run(warmup=v), ()),
        "RunConfig.seed": (lambda v: run(seed=v), ("2**63", "2**200")),
        "RunConfig.layers": (lambda v: run(layers=v), ()),
        "RunConfig.microbatches": (lambda v: run(microbatches=v), ()),
        "RunConfig.scheduler_ns": (lambda v: run(scheduler_ns=v),
                                   ("2**63", "2**200", "float2.7")),  # any time >= 0
        "RunConfig.model": (lambda v: run(model=v), ("str3",)),  # a name, resolved when run
        "RunConfig.method": (lambda v: run(method=v), ()),
        "StepOptions.layers": (lambda v: StepOptions(layers=v), ()),
        "StepOptions.expert_dtype": (lambda v: StepOptions(expert_dtype=v), ()),
    }
    return calls


def _files_under(d: str) -> list[str]:
    out = []
    for root, dirs, files in os.walk(d):
        out += [os.path.relpath(os.path.join(root, n), d) for n in dirs + files]
    return sorted(out)


def _cli(case: dict) -> dict:
    from sieve.cli import main

    cwd = case["cwd"]
    os.makedirs(cwd, exist_ok=True)
    os.chdir(cwd)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(case["argv"])
        except SystemExit as exc:  # main handles these; a leak is a failure of the case
            rc = f"SystemExit({exc.code})"
        except BaseException as exc:  # noqa: BLE001 - recorded, the test fails the case
            if isinstance(exc, CaseTimeout):
                raise
            rc = f"raised {type(exc).__name__}: {exc}"
    return {"rc": rc, "stdout": out.getvalue()[-2000:], "stderr": err.getvalue()[-4000:],
            "files": _files_under(cwd)}


def _lib(case: dict, calls: dict) -> dict:
    from sieve.errors import SieveError

    fn, _ = calls[case["call"]]
    try:
        fn(VALUES[case["value"]])
    except BaseException as exc:  # noqa: BLE001
        if isinstance(exc, CaseTimeout):
            raise
        return {"raised": type(exc).__name__, "message": str(exc)[:2000],
                "sieve_error": isinstance(exc, SieveError)}
    return {"raised": None}


def main() -> int:
    cases_path, results_path = sys.argv[1], sys.argv[2]
    limit = int(os.environ.get("SIEVE_HOSTILE_AS_BYTES", str(6 << 30)))
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    case_s = int(os.environ.get("SIEVE_HOSTILE_CASE_S", "60"))
    signal.signal(signal.SIGALRM, _alarm)
    cases = json.loads(open(cases_path).read())
    home = os.getcwd()
    calls = None
    with open(results_path, "a") as res:
        for case in cases:
            t0 = time.perf_counter()
            signal.alarm(case_s)
            try:
                if case["kind"] == "cli":
                    r = _cli(case)
                else:
                    if calls is None:
                        calls = _lib_calls()
                    r = _lib(case, calls)
            except CaseTimeout:
                r = {"timeout": case_s}
            finally:
                signal.alarm(0)
                os.chdir(home)
            r["id"] = case["id"]
            r["seconds"] = round(time.perf_counter() - t0, 3)
            res.write(json.dumps(r) + "\n")
            res.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
