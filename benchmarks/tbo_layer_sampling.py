"""Layer sampling against every layer: a step simulated on K sampled layers and scaled to the
model (sieve.system.step, ``_sampled_layers`` and ``_scaled_layers_ns``) against the same step
on every layer, under two-batch overlap and in the sequential mode.

The sample keeps the model's first and last layers and gives every layer class (token mixer, MoE
or dense FFN) its share of the sample, at least one layer. Under two-batch overlap a layer of
one micro-batch runs beside the next or previous layer of the other, so the sample also keeps
each sampled layer's neighbours' classes, and the layers not simulated are added at the mean
time of the sampled layers between the first and the last with their class and neighbours'
classes (the pipeline fill in the first layer and the drain in the last are paid once); in the
sequential mode each sampled layer's time is scaled by its class's layers over its samples.
One measured step after one warm-up, seed 0, as in ``sieve run --paper``; throughput per GPU
(tok/s) and per point the ratio of sieve-cp to the other method named. Under two-batch overlap,
in brackets: the same step on the sequential mode's sample, which need not keep the neighbours
(the two-batch-overlap sample before 2026-12-03), from the same run of this script.

    python benchmarks/tbo_layer_sampling.py [--quick] [--sampled-only]   # ~35 min on 2 cores

``--one-gpu PRESET[,PRESET]``: instead, every one-GPU decode point of ``sieve run --paper``
(Qwen3-30B-A3B on one B200, both datasets over B = 1..256, or up to ``--max-batch``; the
colocated cases are left out: with every layer simulated their prefill makes one run take
40-100 s) for every PIM method, under two-batch overlap on 8 sampled layers and on every
layer, through the experiment executor (``--jobs``, ``--store``); prints each method's
sampling error and sieve-cp's ratio to the best other method both ways.

    python benchmarks/tbo_layer_sampling.py --one-gpu duplex-logic-pim --max-batch 64 --jobs 2

``--below VSTORE``: instead, the two-batch-overlap points where sieve-cp is below 0.99x the best
other PIM method on 8 sampled layers (``--range LO,HI``: at LO-HI, default 0,0.99), read from
the run store of ``validate_methods.py --overlap tbo --store VSTORE`` (docs/validation.md,
*sieve-cp against every PIM method*), every method of each re-run on every layer (``--jobs``,
``--store`` for these runs); prints both ratios per point and how many are below 0.99x on
every layer. The stored runs' code digest is printed beside the current one (a stored run is
only read here, never reused as a result of this code).

    python benchmarks/tbo_layer_sampling.py --below /tmp/vstore --jobs 2 --store /tmp/every
    python benchmarks/tbo_layer_sampling.py --below /tmp/vstore --range 0.99,1 --jobs 2 ...

``--setup MODEL``: the decode points of ``sieve run --paper`` of one model (its Figure 9
setup, both datasets; ``--min-batch``: B at least that) on every layer, every PIM method, on
each preset (``--presets``, default the five of ``validate_methods.py``): sieve-cp over the best
other method per point, without a sampled store to choose the points from.

    python benchmarks/tbo_layer_sampling.py --setup gpt-oss-120b --min-batch 64 --jobs 2 \\
        --store /tmp/every

``--resample VSTORE``: instead, every two-batch-overlap point of that store that was run on
every layer with every PIM method (by ``--below``, ``--setup`` or ``tbo_variant.py`` with the
same ``--store``), each method again on each of ``--layers K[,K]`` sampled layers (default
8,16) through the executor: per sample size the worker CPU time of its runs (a run reused
from ``--store`` counts the time it took when it ran), each method's throughput
error and sieve-cp's ratio error against every layer (rms and largest), the points below 0.99x
both ways, and the ratio per point. The points are the ones someone chose to run on every
layer (mostly the sample's lowest ratios), so the sample they were chosen on looks worse on
them than on a random point.

    python benchmarks/tbo_layer_sampling.py --resample /tmp/vstore --layers 8,16 --jobs 2 \\
        --store /tmp/resample
"""

from __future__ import annotations

import argparse
import contextlib
import time

import numpy as np

import sieve.system.run as run_mod
import sieve.system.step as step_mod
from sieve.system.run import RunConfig, simulate_run

#: (label, RunConfig fields, methods compared; the last is sieve-cp)
CASES = [
    ("qwen3.5-397b-a17b 8xb200 hh-rlhf B=128, duplex-logic-pim",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=128,
          system_overrides=(("memory", "duplex-logic-pim"),)),
     ("allexp", "duplex", "sieve-cp")),
    ("qwen3.5-397b-a17b 8xb200 hh-rlhf B=256",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=256), ("duplex", "sieve-cp")),
    ("qwen3-30b-a3b 1xb200 hh-rlhf colocated stress B=64",
     dict(model="qwen3-30b-a3b", system="1xb200", batch=64, colocated=True, n_prefill=8),
     ("sieve", "sieve-cp")),
    ("qwen3.5-397b-a17b 8xb200 math-500 B=256",
     dict(model="qwen3.5-397b-a17b", system="8xb200", batch=256, workload="math-500"),
     ("duplex", "sieve-cp")),
    ("gpt-oss-20b 1xb200 math-500 B=32",
     dict(model="gpt-oss-20b", system="1xb200", batch=32, workload="math-500"),
     ("duplex", "sieve-cp")),
]
#: points also run in the sequential mode (indices into CASES)
SEQUENTIAL = (0, 3)


@contextlib.contextmanager
def _sequential_sample():
    """Two-batch-overlap steps sample the layers as the sequential mode does (neighbours not
    kept: the sample before 2026-12-03); the scaling is the same."""
    orig = step_mod._sampled_layers

    def plain(model, k, allowed=None, neighbours=False):
        return orig(model, k, allowed)

    step_mod._sampled_layers = run_mod._sampled_layers = plain
    try:
        yield
    finally:
        step_mod._sampled_layers = run_mod._sampled_layers = orig


def _sampled(model: str, k: int | None, neighbours: bool) -> list[int] | None:
    from sieve.model import get_model
    return None if k is None else step_mod._sampled_layers(get_model(model), k,
                                                           neighbours=neighbours)


def _pim_methods() -> tuple[list[str], list[str]]:
    """The main job's PIM methods (GPU-only keeps attention on the GPU), and those but
    sieve-cp: the methods its ratio is taken against."""
    from sieve.sched.methods import METHODS_MAIN

    methods = [m for m in METHODS_MAIN if m != "gpu-only"]
    return methods, [m for m in methods if m != "sieve-cp"]


def _point_key(c: RunConfig) -> tuple:
    """(PIM preset, model, system, workload, colocated, prefill requests, batch)."""
    return (dict(c.system_overrides).get("memory"), c.model, c.system, c.workload,
            c.colocated, c.n_prefill, c.batch)


def _point_label(key: tuple) -> tuple[str, str]:
    """(PIM preset, "model system workload[ colocated[ stress]] B=N") of a point key."""
    preset, model, system, wl, coloc, npre, b = key
    case = (" colocated" + (" stress" if npre else "")) if coloc else ""
    return preset, f"{model} {system} {wl}{case} B={b}"


def _store_runs(vstore: str, sampled_only: bool = False) -> tuple[dict, dict, set]:
    """The two-batch-overlap runs of a ``validate_methods.py`` store with decisions charged
    (``sampled_only``: those on sampled layers): ``{point key: {(method, layers):
    tok/s/GPU}}``, ``{point key: {method: a RunConfig of it}}`` and the code digests that made
    them (point keys: :func:`_point_key`)."""
    import glob
    import json
    from collections import defaultdict

    tput, cfgs, digests = defaultdict(dict), defaultdict(dict), set()
    for f in sorted(glob.glob(f"{vstore}/runs/*.json")):
        with open(f) as fh:
            d = json.load(fh)
        if d.get("format") != "sieve-run-record":
            continue  # (the store's own index)
        c = RunConfig.from_dict(d["point"]["run"])
        if c.overlap != "tbo" or c.scheduler_ns is not None or (sampled_only
                                                                 and c.layers is None):
            continue
        key = _point_key(c)
        tput[key][(c.method, c.layers)] = d["row"]["throughput_tok_s_gpu"]
        cfgs[key][c.method] = c
        digests.add(d["sieve"]["code"])
    return tput, cfgs, digests


def _validation_points(vstore: str) -> tuple[dict, dict, set]:
    """The two-batch-overlap runs of a ``validate_methods.py`` store on the sampled layers
    (decisions charged): ``{point key: {method: tok/s/GPU}}``, ``{point key: {method: its
    RunConfig}}`` and the code digests that made them (point keys: :func:`_point_key`)."""
    runs, cfgs, digests = _store_runs(vstore, sampled_only=True)
    tput = {key: {m: t for (m, _), t in by.items()} for key, by in runs.items()}
    return tput, cfgs, digests


def below(vstore: str, jobs: int, store_dir: str | None,
          lo: float = 0.0, hi: float = 0.99) -> None:
    """The sampled two-batch-overlap points at ``lo``-``hi`` x (below 0.99x by default) on
    every layer (module doc, ``--below``)."""
    from dataclasses import replace

    from sieve.experiments.config import code_digest
    from sieve.experiments.executor import execute
    from sieve.experiments.points import Point
    from sieve.experiments.store import RunStore

    methods, others = _pim_methods()
    tput, cfgs, digests = _validation_points(vstore)
    full = {k: t for k, t in tput.items() if all(m in t for m in methods)}
    if not full:
        raise SystemExit(f"tbo_layer_sampling: no two-batch-overlap point with every method "
                         f"in {vstore}/runs")
    low = sorted((k for k, t in full.items()
                  if lo <= t["sieve-cp"] / max(t[m] for m in others) < hi),
                 key=lambda k: (k[0], full[k]["sieve-cp"] / max(full[k][m] for m in others)))
    pts = [Point(replace(cfgs[k][m], layers=None)) for k in low for m in methods]
    store = RunStore(store_dir) if store_dir else None
    rows = [r.result.row for r in execute(pts, jobs=jobs, store=store, progress=True,
                                          label="every layer").records]
    every = {}
    for p, r in zip(pts, rows):
        every.setdefault(_point_key(p.config), {})[p.config.method] = r["throughput_tok_s_gpu"]
    print(f"Stored runs: {len(full)} two-batch-overlap points of {vstore} (code "
          f"{', '.join(sorted(d[:12] for d in digests))}; this code {code_digest()[:12]}); "
          f"{len(low)} at {lo:g}-{hi:g}x on the sampled layers.\n")
    print("| preset | point | sampled: ratio | best other | every layer: ratio | best other "
          "| sieve-cp every layer / sampled | best other every layer / sampled |")
    print("|---|---|---|---|---|---|---|---|")
    n_below = 0
    ratios, moved = [], []  # every layer's ratio, and its change from the sampled one
    for k in low:
        t, e = full[k], every[k]
        bs, be = max(others, key=lambda m: t[m]), max(others, key=lambda m: e[m])
        rs, re_ = t["sieve-cp"] / t[bs], e["sieve-cp"] / e[be]
        n_below += re_ < 0.99
        ratios.append(re_)
        moved.append(re_ / rs - 1.0)
        preset, point = _point_label(k)
        print(f"| {preset} | {point} | {rs:.3f} | {bs} | "
              f"{re_:.3f} | {be} | {e['sieve-cp'] / t['sieve-cp']:.3f} | "
              f"{e[bs] / t[bs]:.3f} |")
    print(f"\nPoints at {lo:g}-{hi:g}x on the sampled layers: {len(low)}; below 0.99x on every "
          f"layer: {n_below}.")
    if ratios:
        rms = float(np.sqrt(np.mean(np.square(moved))))
        print(f"On every layer the ratio is {min(ratios):.3f} / {float(np.median(ratios)):.3f} / "
              f"{max(ratios):.3f} (min / median / max); it moved from the sampled ratio by "
              f"{100 * min(moved):+.1f} % to {100 * max(moved):+.1f} % (rms {100 * rms:.2f} %).")


def one_gpu(presets: list[str], jobs: int, store_dir: str | None,
            max_batch: int | None = None) -> None:
    """The one-GPU points of ``sieve run --paper`` (at most ``max_batch`` requests) on 8
    sampled layers against every layer (module doc, ``--one-gpu``)."""
    from collections import defaultdict
    from dataclasses import replace

    from sieve.experiments.executor import execute
    from sieve.experiments.points import Point, paper_points
    from sieve.experiments.store import RunStore

    methods, others = _pim_methods()
    store = RunStore(store_dir) if store_dir else None
    for preset in presets:
        pts = [Point(replace(p.config, overlap="tbo", layers=k,
                             system_overrides=(("memory", preset),)))
               for k in (8, None)
               for p in paper_points(methods, steps=1, warmup=1, layers=8)
               if p.config.system == "1xb200" and not p.config.colocated
               and (max_batch is None or p.config.batch <= max_batch)]
        rows = [r.result.row for r in execute(pts, jobs=jobs, store=store, progress=True,
                                              label=f"one-GPU {preset}").records]
        tput = defaultdict(dict)
        for p, r in zip(pts, rows):
            c = p.config
            key = (c.workload, c.colocated, c.n_prefill, c.batch)
            tput[key][(c.method, c.layers)] = r["throughput_tok_s_gpu"]
        err = {m: np.array([t[(m, 8)] / t[(m, None)] - 1 for t in tput.values()])
               for m in methods}
        ratio = {k: np.array([t[("sieve-cp", k)] / max(t[(m, k)] for m in others)
                              for t in tput.values()]) for k in (8, None)}
        every = np.concatenate(list(err.values()))
        print(f"\n{preset}: {len(tput)} points x {len(methods)} methods, two-batch overlap, "
              f"8 sampled layers against every layer (48)")
        print("| method | mean error | rms | min | max |\n|---|---|---|---|---|")
        for m, e in [*err.items(), ("every method", every)]:
            print(f"| {m} | {100 * e.mean():+.2f} % | {100 * np.sqrt((e ** 2).mean()):.2f} % "
                  f"| {100 * e.min():+.2f} % | {100 * e.max():+.2f} % |")
        d = ratio[8] - ratio[None]
        print(f"sieve-cp / best other: 8 layers min {ratio[8].min():.3f}, below 0.99 "
              f"{int((ratio[8] < 0.99).sum())}; every layer min {ratio[None].min():.3f}, below "
              f"0.99 {int((ratio[None] < 0.99).sum())}; the ratio's error rms "
              f"{100 * np.sqrt((d ** 2).mean()):.2f} %, max |{100 * np.abs(d).max():.2f}| %")


def resample(vstore: str, ks: list[int], jobs: int, store_dir: str | None) -> None:
    """Every two-batch-overlap point of a store that was run on every layer with every PIM
    method, each method again on each of ``ks`` sampled layers (module doc, ``--resample``)."""
    from dataclasses import replace

    from sieve.experiments.executor import execute
    from sieve.experiments.points import Point
    from sieve.experiments.store import RunStore

    methods, others = _pim_methods()
    stored, cfgs, _ = _store_runs(vstore)
    keys = sorted(k for k, t in stored.items() if all((m, None) in t for m in methods))
    if not keys:
        raise SystemExit(f"tbo_layer_sampling: no point of {vstore}/runs has every method on "
                         "every layer")
    pts = [Point(replace(cfgs[key][m], layers=k)) for k in ks for key in keys for m in methods]
    recs = execute(pts, jobs=jobs, store=RunStore(store_dir) if store_dir else None,
                   progress=True, label="resample").records
    tput = {(_point_key(p.config), p.config.method, p.config.layers):
            r.result.row["throughput_tok_s_gpu"] for p, r in zip(pts, recs)}
    cpu = {k: sum(r.cpu_seconds for p, r in zip(pts, recs) if p.config.layers == k)
           for k in ks}

    def ratio(key, k):
        get = (lambda m: stored[key][(m, None)]) if k is None else \
            (lambda m: tput[(key, m, k)])
        return get("sieve-cp") / max(get(m) for m in others)

    print(f"{len(keys)} two-batch-overlap points of {vstore} with every PIM method on every "
          f"layer ({len(methods)} methods); each sample re-run here.\n")
    print("| layers sampled | worker CPU s | method throughput: rms error | max |error| "
          "| sieve-cp / best other: rms error | max |error| | points < 0.99 (every layer: "
          f"{sum(ratio(key, None) < 0.99 for key in keys)}) |")
    print("|---|---|---|---|---|---|---|")
    for k in ks:
        e = np.array([tput[(key, m, k)] / stored[key][(m, None)] - 1
                      for key in keys for m in methods])
        d = np.array([ratio(key, k) / ratio(key, None) - 1 for key in keys])
        print(f"| {k} | {cpu[k]:.0f} | {100 * np.sqrt((e ** 2).mean()):.2f} % | "
              f"{100 * np.abs(e).max():.2f} % | {100 * np.sqrt((d ** 2).mean()):.2f} % | "
              f"{100 * np.abs(d).max():.2f} % | {sum(ratio(key, k) < 0.99 for key in keys)} |")
    print("\n| preset | point | " + " | ".join(f"{k} layers" for k in ks) + " | every layer |")
    print("|---|---|" + "---|" * (len(ks) + 1))
    for key in keys:
        preset, point = _point_label(key)
        print(f"| {preset} | {point} | "
              + " | ".join(f"{ratio(key, k):.3f}" for k in ks) + f" | {ratio(key, None):.3f} |")


def setup_every_layer(model: str, presets: list[str], min_batch: int, jobs: int,
                      store_dir: str | None) -> None:
    """Every layer, every PIM method, two-batch overlap: the decode points of ``sieve run
    --paper`` of one model (its Figure 9 setup, both datasets) with at least ``min_batch``
    requests, on each preset (module doc, ``--setup``)."""
    from dataclasses import replace

    from sieve.experiments.executor import execute
    from sieve.experiments.points import Point, paper_points
    from sieve.experiments.store import RunStore

    methods, others = _pim_methods()
    pts = [Point(replace(p.config, overlap="tbo", layers=None,
                         system_overrides=(("memory", preset),)))
           for preset in presets
           for p in paper_points(methods, steps=1, warmup=1, layers=8)
           if p.config.model == model and not p.config.colocated
           and p.config.batch >= min_batch]
    if not pts:
        raise SystemExit(f"tbo_layer_sampling: no decode point of {model!r} in sieve run "
                         f"--paper with B >= {min_batch}")
    store = RunStore(store_dir) if store_dir else None
    rows = [r.result.row for r in execute(pts, jobs=jobs, store=store, progress=True,
                                          label=f"every layer {model}").records]
    tput: dict = {}
    for p, r in zip(pts, rows):
        tput.setdefault(_point_key(p.config), {})[p.config.method] = r["throughput_tok_s_gpu"]
    print(f"{model}, B >= {min_batch}, two-batch overlap, every layer, 1 warm-up + 1 measured "
          f"step: sieve-cp / the best other PIM method ({', '.join(others)})\n")
    print("| preset | point | sieve-cp tok/s/GPU | best other | its tok/s/GPU | ratio |")
    print("|---|---|---|---|---|---|")
    ratios = []
    for k, t in tput.items():
        best = max(others, key=lambda m: t[m])
        ratios.append(t["sieve-cp"] / t[best])
        preset, mdl, system, wl, _, _, b = k
        print(f"| {preset} | {mdl} {system} {wl} B={b} | {t['sieve-cp']:.1f} | {best} | "
              f"{t[best]:.1f} | {ratios[-1]:.3f} |")
    print(f"\n{len(ratios)} points; below 0.99x: {sum(r < 0.99 for r in ratios)}; ratio "
          f"{min(ratios):.3f} / {float(np.median(ratios)):.3f} / {max(ratios):.3f} "
          "(min / median / max).")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true",
                    help="the first point only (two-batch overlap and sequential)")
    ap.add_argument("--sampled-only", action="store_true",
                    help="skip the all-layer runs (the long ones)")
    ap.add_argument("--one-gpu", metavar="PRESETS",
                    help="comma-separated PIM presets: the one-GPU --paper points instead")
    ap.add_argument("--jobs", type=int, default=1,
                    help="processes (--one-gpu, --below, --setup, --resample)")
    ap.add_argument("--store", help="resumable run store (--one-gpu, --below, --setup, --resample)")
    ap.add_argument("--below", metavar="VSTORE",
                    help="the points below 0.99x of validate_methods.py's store, on every "
                         "layer")
    ap.add_argument("--range", default="0,0.99", metavar="LO,HI",
                    help="--below: the points whose sampled ratio is at LO-HI (default 0,0.99)")
    ap.add_argument("--max-batch", type=int,
                    help="--one-gpu: the points of at most this batch (B = 128 and 256 on every "
                         "layer take about a minute a run)")
    ap.add_argument("--setup", metavar="MODEL",
                    help="every layer of one model's --paper decode points (with --min-batch, "
                         "--presets), every method")
    ap.add_argument("--min-batch", type=int, default=1, help="--setup: the least batch")
    ap.add_argument("--presets", help="--setup: comma-separated PIM presets (default: the "
                                      "five of validate_methods.py)")
    ap.add_argument("--resample", metavar="VSTORE",
                    help="the points of validate_methods.py's store with every method on every "
                         "layer, again on each of --layers sampled layers")
    ap.add_argument("--layers", default="8,16", metavar="K[,K]",
                    help="--resample: the sample sizes (default 8,16)")
    args = ap.parse_args(argv)
    if args.resample:
        try:
            ks = [int(x) for x in args.layers.split(",")]
        except ValueError:
            ap.error(f"--layers: comma-separated integers, got {args.layers!r}")
        resample(args.resample, ks, args.jobs, args.store)
        return 0
    if args.setup:
        from validate_methods import PRESETS  # (this folder is on sys.path as a script)

        presets = args.presets.split(",") if args.presets else list(PRESETS)
        setup_every_layer(args.setup, presets, args.min_batch, args.jobs, args.store)
        return 0
    if args.below:
        try:
            lo, hi = (float(x) for x in args.range.split(","))
        except ValueError:
            ap.error(f"--range: two numbers LO,HI, got {args.range!r}")
        below(args.below, args.jobs, args.store, lo, hi)
        return 0
    if args.one_gpu:
        one_gpu(args.one_gpu.split(","), args.jobs, args.store, args.max_batch)
        return 0
    print("| point | layers (simulated) | "
          + " | ".join(["method: tok/s/GPU (sequential-mode sample)"] * 3)
          + " | sieve-cp / other (sequential-mode sample) |")
    print("|---|---|---|---|---|---|")
    cases = [(label, fields, methods, "tbo") for label, fields, methods in CASES]
    cases += [(CASES[i][0] + ", sequential", CASES[i][1], CASES[i][2], "none")
              for i in SEQUENTIAL]
    for label, fields, methods, overlap in ([cases[0], cases[len(CASES)]] if args.quick
                                            else cases):
        tbo = overlap == "tbo"
        for layers in (4, 8, 16, None):
            if layers is None and args.sampled_only:
                continue
            t0 = time.time()
            picks = _sampled(fields["model"], layers, tbo)
            plain = _sampled(fields["model"], layers, False)
            both = tbo and layers is not None and picks != plain
            tput, former = {}, {}
            for m in methods:
                cfg = RunConfig(method=m, overlap=overlap, microbatches=2 if tbo else 1,
                                steps=1, warmup=1, layers=layers, **fields)
                tput[m] = simulate_run(cfg).row["throughput_tok_s_gpu"]
                if both:
                    with _sequential_sample():
                        former[m] = simulate_run(cfg).row["throughput_tok_s_gpu"]
            other = methods[-2]
            cells = [f"{m} {tput[m]:.1f}" + (f" ({former[m]:.1f})" if both else "")
                     for m in methods] + [""] * (3 - len(methods))
            ratio = f"{tput['sieve-cp'] / tput[other]:.3f}" + (
                f" ({former['sieve-cp'] / former[other]:.3f})" if both else "")
            shown = "all" if layers is None else (
                f"{layers}" + (f" ({len(picks)})" if len(picks) != layers else ""))
            print(f"| {label} | {shown} | " + " | ".join(cells) + f" | {ratio} {other} |"
                  + f" <!-- {time.time() - t0:.0f} s -->", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
