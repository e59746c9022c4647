"""Speed of the step simulator's PIM sequence on one GPU's device: attention, then TP experts.

The multi-GPU step simulator runs, on each GPU's PimDevice, layer after layer: decode
attention (slices of different requests on different PC groups: every channel runs its own
streams, so all channels are simulated) then, after a GPU step, the layer's experts under
tensor parallelism (identical streams on every PC). This script times that sequence:

  * per layer, the wall time of the attention program and of the TP expert program that
    follows it, and the TP program's wall time on a fresh device (the target);
  * the channels the TP program simulated, and the PIM times (ns) of both programs;
  * with ``--diagnose``, what differs between channels at the TP program's start (channels
    whose latest command, open PIM row, refresh due tick or command-bus order differ from
    channel 0's) and how many equivalence classes that leaves;
  * when the build has both idle policies, how much "closed" changes the PIM times of the
    attention and TP programs against "open" (sum over the layers, and per program).

Configurations: every idle policy the build has (``PimDevice(idle=...)``; a build without
the option runs once as "default"). Work: ``--layers`` layers of each (model, batch) case;
context lengths uniform in [200, 2000] tokens, experts' token counts from routing every
request to ``top_k`` distinct uniformly random experts (seed 0; experts without tokens do not
run); order "layer"; a fixed GPU gap of ``--gap-ns`` between programs (a stand-in for the
GPU step between them). Each wall time is the best of ``--repeat`` runs of the whole sequence.
``--baseline DIR`` also times another build of sieve (a checkout with its compiled engine,
e.g. ``git worktree add /tmp/sieve-base main`` then ``python setup.py build_ext --inplace``
there) in worker processes alternating with this one; "TP vs base" is the baseline's TP
wall time over this build's, "step vs base" the same for attention + TP.

    python benchmarks/bench_pim_step.py [--layers 4] [--repeat 3] [--diagnose]
        [--baseline DIR] [--json FILE]
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CASES = (("qwen3-30b-a3b", 16), ("qwen3-30b-a3b", 64), ("gpt-oss-120b", 64))
SPEC = "b200-hbm3e-pim"


def workload(model: str, batch: int, layers: int):
    """Context lengths of the batch and per layer the tokens of every expert."""
    from sieve.model.moe import get_model

    m = get_model(model)
    rng = np.random.default_rng(0)
    lens = rng.integers(200, 2001, batch)
    counts = []
    for _ in range(layers):
        c = np.zeros(m.n_experts, dtype=np.int64)
        for _ in range(batch):
            c[rng.choice(m.n_experts, m.top_k, replace=False)] += 1
        counts.append(c)
    return lens, counts


def diagnose(dev, start_ns: float) -> dict:
    """Channels differing from channel 0 at a program's start, and the equivalence classes."""
    st = dev._engine.state_by_channel()
    pim_rows = st["ab_row"][:, :, -1]  # (channel, pc, buffer, unit): the PIM row buffer
    due = st["ref_due"]
    order = np.argsort(st["pc_lseq"], axis=1, kind="stable")
    out = {"last command": int(np.sum(st["ch_last"] != st["ch_last"][0])),
           "open PIM rows": int(np.sum(np.any(pim_rows != pim_rows[0], axis=1))),
           "refresh due": int(np.sum(np.any(due != due[0], axis=1))),
           "bus order": int(np.sum(np.any(order != order[0], axis=1)))}
    if hasattr(dev, "channel_classes"):
        out["classes"] = int(dev.channel_classes(start_ns).max()) + 1
    return out


def run_sequence(model: str, batch: int, layers: int, gap_ns: float, idle: str | None,
                 diag: bool) -> dict:
    from sieve.dram import PimDevice
    from sieve.pim.attention import run_attention
    from sieve.pim.ffn import ffn_shape, run_moe_tp

    lens, counts = workload(model, batch, layers)
    shape = ffn_shape(model)
    kw = {} if idle is None else {"idle": idle}
    dev = PimDevice(SPEC, **kw)
    att_s, tp_s, fresh_s, sims, att_ns, tp_ns, diags = [], [], [], [], [], [], []
    for layer in range(layers):
        t0 = time.perf_counter()
        a = run_attention(SPEC, model, layer, lens, device=dev,
                          start_ns=dev.now_ns + gap_ns if layer else 0.0)
        att_s.append(time.perf_counter() - t0)
        att_ns.append(a.time_ns)
        start = dev.now_ns + gap_ns
        if diag:
            diags.append(diagnose(dev, start))
        t0 = time.perf_counter()
        r = run_moe_tp(SPEC, shape, counts[layer], order="layer", device=dev, start_ns=start)
        tp_s.append(time.perf_counter() - t0)
        sims.append(r.pim.simulated_channels)
        tp_ns.append(r.time_ns)
        t0 = time.perf_counter()
        run_moe_tp(SPEC, shape, counts[layer], order="layer", device=PimDevice(SPEC, **kw),
                   start_ns=start)
        fresh_s.append(time.perf_counter() - t0)
    return {"attention_s": att_s, "tp_s": tp_s, "tp_fresh_s": fresh_s, "tp_sim_channels": sims,
            "attention_ns": att_ns, "tp_ns": tp_ns, "diagnosis": diags}


def measure(layers: int, repeat: int, gap_ns: float, diag: bool) -> list[dict]:
    """Every (case, idle policy) of this build, each wall time the best of ``repeat``."""
    from sieve import dram
    from sieve.dram import PimDevice

    policies = ([None] if "idle" not in inspect.signature(PimDevice).parameters
                else list(dram.IDLE_POLICIES))
    run_sequence(*CASES[0], 1, gap_ns, policies[-1], False)  # warm-up (imports, caches)
    rows = []
    for model, batch in CASES:
        for idle in policies:
            best = None
            for _ in range(repeat):
                r = run_sequence(model, batch, layers, gap_ns, idle, diag)
                if best is None:
                    best = r
                else:
                    for k in ("attention_s", "tp_s", "tp_fresh_s"):
                        best[k] = [min(x, y) for x, y in zip(best[k], r[k])]
            rows.append({"idle": idle or "default", "model": model, "batch": batch, **best})
    return rows


def merge(into: list[dict] | None, rows: list[dict]) -> list[dict]:
    """Best-of over runs: the element-wise minimum of every wall time."""
    if into is None:
        return rows
    for a, b in zip(into, rows):
        for k in ("attention_s", "tp_s", "tp_fresh_s"):
            a[k] = [min(x, y) for x, y in zip(a[k], b[k])]
    return into


def report(rows: list[dict], tag: str = "", base: list[dict] | None = None) -> None:
    for r in rows:
        att, tp, fresh = (float(np.mean(r[k])) for k in ("attention_s", "tp_s", "tp_fresh_s"))
        vs = ""
        if base is not None:
            b = next(x for x in base if (x["model"], x["batch"]) == (r["model"], r["batch"]))
            btp, batt = float(np.mean(b["tp_s"])), float(np.mean(b["attention_s"]))
            vs = f" {btp / tp:8.1f}x {(batt + btp) / (att + tp):8.2f}x"
        print(f"{tag + r['idle']:<14} {r['model']:<15} {r['batch']:>5} {att:7.3f} {tp:7.4f} "
              f"{fresh:10.4f} {tp / fresh:8.2f} {np.mean(r['tp_sim_channels']):9.1f} "
              f"{np.mean(r['attention_ns']):9.0f} {np.mean(r['tp_ns']):9.0f}{vs}")
        for i, d in enumerate(r["diagnosis"]):
            print(f"    layer {i}: channels differing from channel 0 at the TP start: "
                  + ", ".join(f"{k} {v}" for k, v in d.items()))
    cases = sorted({(r["model"], r["batch"]) for r in rows}, key=CASES.index)
    for case in cases:
        by = {r["idle"]: r for r in rows if (r["model"], r["batch"]) == case}
        if {"open", "closed"} <= by.keys():  # the PIM times the policy changes
            for k in ("attention_ns", "tp_ns"):
                o, c = np.array(by["open"][k]), np.array(by["closed"][k])
                print(f"{case[0]} {case[1]}: closed vs open, {k[:-3]} programs: total "
                      f"{c.sum() / o.sum() - 1:+.3%}, per program {np.min(c / o - 1):+.2%} "
                      f".. {np.max(c / o - 1):+.2%}")


HEADER = (f"{'idle':<14} {'model':<15} {'batch':>5} {'attn s':>7} {'TP s':>7} {'TP fresh s':>10} "
          f"{'TP/fresh':>8} {'TP sim ch':>9} {'attn ns':>9} {'TP ns':>9}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gap-ns", type=float, default=3000.0)
    ap.add_argument("--diagnose", action="store_true")
    ap.add_argument("--baseline", help="also time the sieve build in this directory, in "
                                       "worker processes alternating with this one")
    ap.add_argument("--json", help="also write the results to this JSON file")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.layers, 1, args.gap_ns, args.diagnose)))
        return 0
    from sieve import dram

    print(f"machine: {platform.machine()}, {platform.python_implementation()} "
          f"{platform.python_version()}, engine debug build: {dram.DEBUG_BUILD}, "
          f"sieve from {sys.modules['sieve'].__path__[0]}")
    out: dict = {"layers": args.layers, "repeat": args.repeat, "gap_ns": args.gap_ns}
    if not args.baseline:
        rows = measure(args.layers, args.repeat, args.gap_ns, args.diagnose)
        print(HEADER)
        report(rows)
        out["rows"] = rows
    else:
        base_dir = Path(args.baseline).resolve()
        if not (base_dir / "sieve").is_dir():
            print(f"--baseline {base_dir}: no sieve package there", file=sys.stderr)
            return 2
        here = Path(sys.modules["sieve"].__path__[0]).parent
        got: dict[str, list[dict] | None] = {"base": None, "new": None}
        order = (("base", base_dir), ("new", here))
        for i in range(args.repeat):
            for tag, root in (order if i % 2 == 0 else order[::-1]):  # no position advantage
                env = dict(os.environ, PYTHONPATH=str(root))
                cmd = [sys.executable, __file__, "--worker", "--layers", str(args.layers),
                       "--gap-ns", str(args.gap_ns)] + (["--diagnose"] if args.diagnose
                                                        else [])
                p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                got[tag] = merge(got[tag], json.loads(p.stdout))
        print(f"baseline: {base_dir}; best of {args.repeat} worker runs per build, "
              "alternating")
        print(HEADER + f" {'TP vs base':>9} {'step vs base':>12}")
        report(got["base"], "base ")
        report(got["new"], "new ", base=got["base"])
        out.update(base=got["base"], new=got["new"], baseline=str(base_dir))
    if args.json:
        from sieve.outputs import write_json

        write_json(args.json, out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
