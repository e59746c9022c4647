"""A variant of sieve-cp against sieve-cp at every one-GPU two-batch-overlap point of `sieve run
--paper`, on each PIM preset, and every other PIM method at the points where it moved.

The one-GPU points are Qwen3-30B-A3B on one B200 (both datasets, the drawn and the stress
colocated cases: 30 a preset), on the two-batch-overlap default's sampled layers (16) with one
warm-up and one measured step, as docs/validation.md's table (*sieve-cp against every PIM
method*). A variant that differs from sieve-cp only where no other GPU's decision enters its
look (``sieve-cp-pimskip``) leaves the table's multi-GPU points as they are; this script finds
which one-GPU points it moves and prints, for each, sieve-cp's and the variant's ratio to the
best other PIM method (docs/schedulers.md, *Skips that run all on the GPU*).

    python benchmarks/tbo_variant.py --variant sieve-cp-pimskip --jobs 2 [--store DIR]

``--every-layer``: the moved points again on every layer (sieve-cp, the variant and every
other PIM method), since a sample of layers can put a two-batch-overlap ratio a few per cent off
(docs/system.md §1); prints the same table from those runs. ``--max-batch N``: only the moved
points with B <= N (a point at B = 128 takes about a minute per method on every layer).
``--all-layers``: instead, sieve-cp and the variant at every one-GPU point on every layer, and
every other PIM method where the two differ there (no sample first: the sample can put a
two-batch-overlap ratio a few per cent off, so it can hide a point that moves); prints the same
table and how many of the moved points are below 0.99x for each (``--max-batch`` too;
``--decode-only``: the other methods at the moved decode points only; ``--unmoved-too``: the
other methods also at the points the variant left alone, and sieve-cp's ratio there).
``--all-models``: the sample's table over every point of the table instead (the eight- and
four-GPU points of Qwen3.5-397B-A17B and gpt-oss-120b too, 66 a preset; a point other than
Qwen3-30B-A3B on one B200 is named "preset model system"), for a variant that acts under
expert parallelism (``sieve-cp-layergate``, ``sieve-cp-nogate``; docs/schedulers.md, *The load
gate under expert parallelism*).
``--unmoved``: instead, the points that did not move on the sample (decode only: a colocated
point's micro-batches are unlike, where a ``skip_gpu`` variant is sieve-cp to the digit), sieve-cp
and the variant on every layer (``--max-batch`` and ``--all-models`` too), and prints those that
move there.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the presets and the other PIM methods of validation.md's table
from validate_methods import BASELINES as OTHERS  # noqa: E402
from validate_methods import PRESETS  # noqa: E402

#: The one-GPU points' model and system: their keys name the preset alone.
ONE_GPU = ("qwen3-30b-a3b", "1xb200")


def _key(c) -> tuple:
    where = dict(c.system_overrides)["memory"]
    if (c.model, c.system) != ONE_GPU:
        where = f"{where} {c.model} {c.system}"
    return (where, c.workload, c.colocated, c.n_prefill, c.batch)


def _points(variant: str, presets, decode_only: bool = False,
            max_batch: int | None = None, all_models: bool = False) -> list:
    """sieve-cp's and the variant's one-GPU two-batch-overlap points of --paper on the sampled
    layers of validate_methods.py's table (``decode_only``: no colocated point; ``max_batch``:
    B <= that; ``all_models``: every model's points)."""
    from sieve.experiments.points import Point, paper_points
    from sieve.system.step import sampled_layers_default

    layers = sampled_layers_default(1, "tbo")  # as validate_methods.py's table
    return [Point(replace(p.config, overlap="tbo", system_overrides=(("memory", pr),)))
            for pr in presets
            for p in paper_points(["sieve-cp", variant], steps=1, warmup=1, layers=layers)
            if (all_models or (p.config.model, p.config.system) == ONE_GPU)
            and not (decode_only and p.config.colocated)
            and (max_batch is None or p.config.batch <= max_batch)]


def _run(points, jobs: int, store, into: dict | None = None) -> dict[tuple, dict[str, float]]:
    """Throughput per GPU of each point, by point key and method (added to ``into``)."""
    from sieve.experiments.executor import execute

    t = {} if into is None else into
    for p, r in zip(points, execute(points, jobs=jobs, store=store, progress=False).records):
        t.setdefault(_key(p.config), {})[p.config.method] = r.result.row["throughput_tok_s_gpu"]
    return t


def _others(base, keys, jobs: int, store, t: dict) -> None:
    """Every other PIM method at the points ``keys`` of ``base`` (sieve-cp's points stand for
    them, at their own layers), added to ``t``."""
    from sieve.experiments.points import Point

    _run([Point(replace(p.config, method=m)) for p in base
          if p.config.method == "sieve-cp" and _key(p.config) in keys for m in OTHERS],
         jobs, store, into=t)


def _store(store_dir: str | None):
    from sieve.experiments.store import RunStore

    return RunStore(store_dir) if store_dir else None


def unmoved(variant: str, jobs: int, store_dir: str | None, presets=PRESETS,
            max_batch: int | None = None, all_models: bool = False) -> list[tuple]:
    """The decode points where sieve-cp and the variant are equal on 8 sampled layers, both
    re-run on every layer: (point key, sieve-cp, variant) per point where they differ there
    (``all_models``: every model's points, not only the one-GPU ones)."""
    from sieve.experiments.points import Point

    store = _store(store_dir)
    base = _points(variant, presets, decode_only=True, max_batch=max_batch,
                   all_models=all_models)
    t = _run(base, jobs, store)
    same = [k for k, d in t.items() if d[variant] == d["sieve-cp"]]
    e = _run([Point(replace(p.config, layers=None)) for p in base if _key(p.config) in same],
             jobs, store)
    out = [(k, d["sieve-cp"], d[variant]) for k, d in e.items() if d["sieve-cp"] != d[variant]]
    print(f"{len(same)} decode points where sieve-cp and {variant} are equal on the sample"
          + (f" (B <= {max_batch})" if max_batch is not None else "")
          + f"; on every layer {len(out)} differ:\n")
    print(f"| preset | point | sieve-cp | {variant} | ratio |")
    print("|---|---|---|---|---|")
    for k, a, b in out:
        print(f"| {k[0]} | {k[1]} B={k[-1]} | {a:.1f} | {b:.1f} | {a / b:.4f} |")
    return out


def _table(t: dict, keys: list, variant: str, both: bool = True) -> list[tuple]:
    """Print the Markdown table of the points ``keys``: each one's best other PIM method and
    sieve-cp's ratio to it (``both``: and the variant's); (point key, sieve-cp, variant, best
    other) per point."""
    print("| preset | point | best other | sieve-cp |" + (f" {variant} |" if both else ""))
    print("|---|---|---|---|" + ("---|" if both else ""))
    out = []
    for k in keys:
        d = t[k]
        best = max(OTHERS, key=d.get)
        preset, wl, coloc, n_pf, b = k
        case = (" colocated" + (" (stress)" if n_pf else " (drawn)")) if coloc else ""
        out.append((k, d["sieve-cp"] / d[best], d[variant] / d[best], best))
        print(f"| {preset} | {wl}{case} B={b} | {best} | {out[-1][1]:.3f} |"
              + (f" {out[-1][2]:.3f} |" if both else ""))
    return out


def compare(variant: str, jobs: int, store_dir: str | None, presets=PRESETS,
            every_layer: bool = False, max_batch: int | None = None,
            all_models: bool = False) -> list[tuple]:
    """(point key, sieve-cp / best other, variant / best other, best other) per moved point
    (``every_layer``: those of the moved points re-run on every layer; ``all_models``: every
    point of the table, not only the one-GPU ones)."""
    from sieve.experiments.points import Point

    store = _store(store_dir)
    base = _points(variant, presets, all_models=all_models)
    t = _run(base, jobs, store)
    moved = [k for k, d in t.items() if d[variant] != d["sieve-cp"]]
    _others(base, moved, jobs, store, t)
    print(f"{len(t)} {'' if all_models else 'one-GPU '}two-batch-overlap points, {len(moved)} "
          f"moved by {variant}\n")
    if every_layer:
        moved = [k for k in moved if max_batch is None or k[-1] <= max_batch]
        t = _run([Point(replace(p.config, method=m, layers=None)) for p in base
                  if p.config.method == "sieve-cp" and _key(p.config) in moved
                  for m in ("sieve-cp", variant, *OTHERS)], jobs, store)
        print(f"The moved points on every layer ({len(moved)}"
              + (f", B <= {max_batch}" if max_batch is not None else "") + "):\n")
    out = _table(t, moved, variant)
    print(f"\nOf the moved points below 0.99x the best other: sieve-cp "
          f"{sum(o[1] < 0.99 for o in out)}, {variant} {sum(o[2] < 0.99 for o in out)}; "
          f"{variant} up at {sum(o[2] > o[1] for o in out)}.")
    return out


def all_layers(variant: str, jobs: int, store_dir: str | None, presets=PRESETS,
               max_batch: int | None = None, decode_only: bool = False,
               unmoved_too: bool = False) -> list[tuple]:
    """sieve-cp and the variant at every one-GPU point on every layer (``max_batch``: B <=
    that), every other PIM method where the two differ there (``decode_only``: at the decode
    points only, the colocated ones' prefills being the slow runs); the same table as
    :func:`compare`'s, of the points that differ, and the count below 0.99x the best other
    for each (``unmoved_too``: then the other methods at the points the variant left alone
    as well, and sieve-cp's ratio there)."""
    from sieve.experiments.points import Point

    store = _store(store_dir)
    base = [Point(replace(p.config, layers=None))
            for p in _points(variant, presets, max_batch=max_batch)]
    t = _run(base, jobs, store)
    moved = [k for k, d in t.items() if d[variant] != d["sieve-cp"]]
    n_moved = len(moved)
    if decode_only:
        moved = [k for k in moved if not k[2]]
    _others(base, moved, jobs, store, t)
    print(f"{len(t)} one-GPU two-batch-overlap points on every layer"
          + (f" (B <= {max_batch})" if max_batch is not None else "")
          + f", {n_moved} moved by {variant}"
          + (f" ({n_moved - len(moved)} colocated ones not compared)" if decode_only else "")
          + ":\n")
    out = _table(t, moved, variant)
    print(f"\nOf the moved points below 0.99x the best other: sieve-cp "
          f"{sum(o[1] < 0.99 for o in out)}, {variant} {sum(o[2] < 0.99 for o in out)}.")
    if unmoved_too:
        same = [k for k, d in t.items() if d[variant] == d["sieve-cp"]
                and not (decode_only and k[2])]
        _others(base, same, jobs, store, t)
        print(f"\nThe {len(same)} points {variant} left alone, sieve-cp over the best other:\n")
        out += _table(t, same, variant, both=False)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", default="sieve-cp-pimskip")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--store", help="resumable run store")
    ap.add_argument("--every-layer", action="store_true",
                    help="re-run the moved points on every layer")
    ap.add_argument("--max-batch", type=int, help="with --every-layer: only B <= this")
    ap.add_argument("--all-models", action="store_true",
                    help="every point of the table, the eight- and four-GPU ones too")
    ap.add_argument("--unmoved", action="store_true",
                    help="the decode points equal on the sample, on every layer")
    ap.add_argument("--all-layers", action="store_true",
                    help="sieve-cp and the variant at every one-GPU point on every layer")
    ap.add_argument("--decode-only", action="store_true",
                    help="with --all-layers: the other methods at the decode points only")
    ap.add_argument("--unmoved-too", action="store_true",
                    help="with --all-layers: the other methods also where the variant moved "
                    "nothing")
    args = ap.parse_args(argv)
    if args.all_layers:
        all_layers(args.variant, args.jobs, args.store, max_batch=args.max_batch,
                   decode_only=args.decode_only, unmoved_too=args.unmoved_too)
        return 0
    if args.unmoved:
        unmoved(args.variant, args.jobs, args.store, max_batch=args.max_batch,
                all_models=args.all_models)
        return 0
    compare(args.variant, args.jobs, args.store, every_layer=args.every_layer,
            max_batch=args.max_batch, all_models=args.all_models)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
