"""Speed of composing and routing one step's batch (issue 10, item 4).

One line per case: the best of ``--repeat`` runs in seconds, and for the routing of a
decode-only step the ratio to the router's own ``generate(B, 1)`` (one decode step of the
same batch size, measured in the same run): what the per-request streams of ``route_step``
cost on top of the routing itself. The colocated rows route every prompt token, so they scale
with prompt tokens x MoE layers x experts.

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_workload.py [--repeat 3] [--model M]
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from sieve.workload import SyntheticRouter, colocated_batch, decode_batch, step_trace


def _best(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--model", default="qwen3-30b-a3b")  # the seed's colocated model (§7.3)
    args = ap.parse_args(argv)
    r = SyntheticRouter(args.model, seed=0)
    print(f"# {platform.processor() or platform.machine()}, Python {platform.python_version()}"
          f", numpy {np.__version__}; {args.model} ({r.shape.n_layers} MoE layers, "
          f"{r.shape.n_experts} experts, top-{r.shape.top_k}); best of {args.repeat}")
    print(f"{'case':<52} {'seconds':>9} {'x_generate':>10}")
    for b in (64, 256):
        t = _best(lambda b=b: decode_batch("math-500", b, 0), args.repeat)
        print(f"{f'decode_batch math-500 B={b}':<52} {t:9.4f}")
    for b in (64, 256):
        batch = decode_batch("math-500", b, 0)
        base = _best(lambda b=b: r.generate(b, 1), args.repeat)
        t = _best(lambda batch=batch: step_trace(batch, r), args.repeat)
        print(f"{f'step_trace decode-only B={b}':<52} {t:9.4f} {t / base:10.2f}")
    for name, b in (("hh-rlhf", 32), ("math-500", 64), ("inferencemax-8k1k", 64)):
        n = 2 if b < 64 else 8
        batch = colocated_batch(name, b, 0, n_prefill=n)
        t = _best(lambda batch=batch: step_trace(batch, r), args.repeat)
        label = f"step_trace colocated {name} B={b} ({batch.n_tokens} rows)"
        print(f"{label:<52} {t:9.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
