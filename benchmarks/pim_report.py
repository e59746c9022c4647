"""PIM kernel report: cycle-accurate expert FFN times vs rooflines, and GPU/PIM crossovers.

Regenerate the *PIM kernels* section of docs/validation.md with::

    python benchmarks/pim_report.py --write docs/validation.md

Every number comes from the engine (sieve.pim.ffn, sieve.pim.attention), the GPU model
(sieve.hw.gpu) or a spec's derived peaks; nothing is typed by hand. --write only touches the
text between the ``<!-- pimk:begin/end -->`` markers (the section is appended if absent).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sieve.dram.presets import get_spec  # noqa: E402
from sieve.dram.spec import DramSpec  # noqa: E402
from sieve.hw import gpu  # noqa: E402
from sieve.hw.system import SystemConfig, get_system  # noqa: E402
from sieve.model.moe import MODELS, get_model  # noqa: E402
from sieve.outputs import write_section  # noqa: E402
from sieve.pim.attention import run_attention  # noqa: E402
from sieve.pim.costs import PimCostTable  # noqa: E402
from sieve.pim.ffn import ffn_shape, run_expert_ffn, run_moe_tp  # noqa: E402
from sieve.pim.host import gpu_step  # noqa: E402

CMD = "python benchmarks/pim_report.py --write docs/validation.md"
#: The system this report is about: one B200 with its HBM3E-PIM stacks (seed §7); the section
#: resolves it once and passes it down.
SYSTEM = "1xb200"
#: A second PIM design for reference (Samsung HBM2-PIM, pim-simulators.md).
REFERENCE_SPEC = "samsung-hbm2-pim"
EVALUATED = ("gpt-oss-120b", "qwen3.5-397b-a17b", "qwen3-30b-a3b")
N_MAX = 128  # crossover search range


def _gpu_expert_ns(system: SystemConfig, shape, n: int) -> float:
    """The calibrated GPU time of one expert with ``n`` tokens (two grouped kernels), ns."""
    return gpu.grouped_gemm_time_ns([n], shape.hidden, shape.intermediate, "bf16",
                                    gpu=system.gpu, calib=system.gpu_calibration)


def expert_rows(spec: DramSpec, model: str, ns, system: SystemConfig) -> list[dict]:
    """Per N: PIM kernel time on ``spec``, end-to-end times per order, rooflines, and the
    times of ``system``'s GPU (µs)."""
    shape = ffn_shape(model)
    bw = spec.pim_internal_bandwidth_gbs  # B/ns
    cal = system.gpu_calibration
    rows = []
    for n in ns:
        tok = run_expert_ffn(spec, shape, n, order="token", gpu=system.gpu)
        exp = run_expert_ffn(spec, shape, n, order="expert", gpu=system.gpu)
        kern = float(exp.pim.pc_busy_ns.max())  # the two GEMV kernels, no GPU step
        roof = shape.weight_bytes_bf16 / bw
        fallback = n * shape.flops_per_token / (spec.pim_peak_tflops * 1e3)
        g = _gpu_expert_ns(system, shape, n)
        rows.append({
            "n": n, "kernel_us": kern / 1e3, "token_us": tok.total_ns / 1e3,
            "expert_us": exp.total_ns / 1e3, "roof_us": roof / 1e3,
            "fallback_us": fallback / 1e3, "ratio_fallback": kern / fallback,
            "ratio_roof": kern / roof, "gpu_us": g / 1e3,
            "gpu_running_us": (g - 2 * cal.t0_gemm_bf16_s * 1e9) / 1e3,
            "padding": tok.padding, "cg": (tok.gate_up.col_groups, tok.down.col_groups),
        })
    return rows


def crossover(model: str, system: SystemConfig) -> dict:
    """Smallest N in 1..N_MAX at which the GPU is faster, for three PIM/GPU pairings, on
    ``system`` (its GPU and its stacks)."""
    spec = system.memory
    shape = ffn_shape(model)
    cal = system.gpu_calibration
    tables = {o: PimCostTable(spec, order=o, gpu=system.gpu.name) for o in ("token", "expert")}
    out = {}

    def first(pim_ns, gpu_ns):
        for n in range(1, N_MAX + 1):
            if gpu_ns(n) < pim_ns(n):
                return n
        return None

    def g(n):
        return _gpu_expert_ns(system, shape, n)

    out["token"] = first(lambda n: tables["token"].expert_ns(shape, n), g)
    out["expert"] = first(lambda n: tables["expert"].expert_ns(shape, n), g)

    def kern(n):
        return float(run_expert_ffn(spec, shape, n, order="expert",
                                    gpu=system.gpu).pim.pc_busy_ns.max())

    out["kernel"] = first(kern, lambda n: g(n) - 2 * cal.t0_gemm_bf16_s * 1e9)
    return out


def _fmt_n(n) -> str:
    return f">{N_MAX}" if n is None else str(n)


def layer_vs_table(model: str, system: SystemConfig, seed: int = 0
                   ) -> tuple[float, float, float, int, int]:
    """A whole layer simulated at once vs the sum of its experts' memoised entries (t = 0,
    and the mean over 8 refresh phases), on ``system``'s stacks."""
    from sieve.workload.router import SyntheticRouter

    m = get_model(model)
    shape = ffn_shape(m)
    counts = SyntheticRouter(model, seed=seed).generate(16, 1).counts(0)[0]  # first MoE layer
    spec, g = system.memory, system.gpu
    layer = run_moe_tp(spec, shape, counts, order="expert", gpu=g)
    t0 = PimCostTable(spec, order="expert", gpu=g.name)
    avg = PimCostTable(spec, order="expert", gpu=g.name, phases=8)
    s0 = sum(t0.expert_ns(shape, int(c)) for c in counts if c)
    s8 = sum(avg.expert_ns(shape, int(c)) for c in counts if c)
    return layer.total_ns, s0, s8, int((counts > 0).sum()), int(counts.sum())


def section() -> str:
    system = get_system(SYSTEM)
    spec = system.memory
    step = gpu_step(system.gpu)
    L = ["<!-- pimk:begin (generated by benchmarks/pim_report.py) -->", ""]
    L += [
        "Model: docs/model-of-computation.md, *PIM kernels*. One routed expert FFN (bf16 "
        "weights on PIM, seed §7) with N tokens under TP over every pseudo-channel, started "
        f"at t = 0, on `{spec.name}` (256 PCs x 32 PUs, internal "
        f"{spec.pim_internal_bandwidth_gbs / 1e3:.1f} TB/s, peak {spec.pim_peak_tflops:.1f} "
        "TFLOPS). Columns (µs):",
        "",
        "* *PIM kernels*: the engine's busy time of the gate/up and down kernels (N vectors "
        "each, GWRITE, MACs, readback; refresh that falls inside included) on one PC, "
        "without the GPU step between them. Steps in this column (e.g. where the ratio jumps "
        "by ~0.2) are a refresh (tRFC 450 ns + row re-open) falling inside a kernel rather "
        "than in the idle GPU step: the program starts at the refresh reset and the first "
        "REFab is due at 3.9 µs (docs/model-of-computation.md K10);",
        "* *roofline*: weight bytes / internal bandwidth (one pass over the weights, "
        "N-independent); *seed fallback*: N x FLOPs / PIM peak (seed §5; for bf16 this is N "
        "x the roofline, since the PIM peak is 1 FLOP per weight byte);",
        "* *token* / *expert*: end-to-end PIM time with the GPU steps (activation, partial "
        f"sums; {step.fixed_ns / 1e3:.2f} µs fixed each, {step.source}) in the seed's "
        "per-token order and in the one-step-per-expert order;",
        "* *GPU*: `sieve.hw.gpu.grouped_gemm_time_ns([N])` for the B200 (two grouped kernels "
        "with their t0); *GPU running*: the same without the two kernel fixed costs (the "
        "expert joins a grouped GEMM that runs anyway).",
        "",
    ]
    for model in EVALUATED:
        rows = expert_rows(spec, model, range(1, 17), system)
        sh = ffn_shape(model)
        r0 = rows[0]
        L += [f"**{model}** (H = {sh.hidden}, I = {sh.intermediate}; gate/up "
              f"{sh.up_rows} x {sh.hidden} on {r0['cg'][0]} column groups, down "
              f"{sh.hidden} x {sh.intermediate} on {r0['cg'][1]}; padding "
              f"{100 * r0['padding']:.1f} %)", "",
              "| N | PIM kernels | roofline | seed fallback | kernels / fallback | token | "
              "expert | GPU | GPU running |", "|---|---|---|---|---|---|---|---|---|"]
        for r in rows:
            L.append(f"| {r['n']} | {r['kernel_us']:.2f} | {r['roof_us']:.3f} | "
                     f"{r['fallback_us']:.2f} | {r['ratio_fallback']:.2f} | "
                     f"{r['token_us']:.2f} | {r['expert_us']:.2f} | {r['gpu_us']:.2f} | "
                     f"{r['gpu_running_us']:.2f} |")
        L.append("")
    L += ["**GPU/PIM crossover** (smallest N in 1..128 at which the B200 model is faster; "
          f"{spec.name}). *token* / *expert*: GPU standalone vs PIM end-to-end in that "
          "order; *kernels*: GPU running vs PIM kernels only (both fixed costs hidden). "
          "Ratios: PIM kernels / seed fallback at N = 1, 4, 16.", "",
          "| model | H x I | token | expert | kernels | ratio N=1 | N=4 | N=16 |",
          "|---|---|---|---|---|---|---|---|"]
    for model in MODELS:
        sh = ffn_shape(model)
        c = crossover(model, system)
        rr = {r["n"]: r["ratio_fallback"] for r in expert_rows(spec, model, (1, 4, 16),
                                                               system)}
        L.append(f"| {model} | {sh.hidden} x {sh.intermediate} | {_fmt_n(c['token'])} | "
                 f"{_fmt_n(c['expert'])} | {_fmt_n(c['kernel'])} | {rr[1]:.2f} | "
                 f"{rr[4]:.2f} | {rr[16]:.2f} |")
    L.append("")
    hb = get_spec(REFERENCE_SPEC)
    L += ["**samsung-hbm2-pim** (reference; 64 PCs x 8 PUs, internal "
          f"{hb.pim_internal_bandwidth_gbs / 1e3:.2f} TB/s, 256 B global buffer): PIM "
          "kernels / seed fallback.", "",
          "| model | N=1 | N=2 | N=4 | N=8 | N=16 | PIM kernels N=1 (µs) |",
          "|---|---|---|---|---|---|---|"]
    for model in EVALUATED:
        rows = expert_rows(hb, model, (1, 2, 4, 8, 16), system)
        L.append(f"| {model} | " + " | ".join(f"{r['ratio_fallback']:.2f}" for r in rows)
                 + f" | {rows[0]['kernel_us']:.2f} |")
    L.append("")
    L += ["**Memo table vs a whole layer** (refresh phase). A layer's experts simulated in "
          "one program (order *expert*) vs the sum of their `PimCostTable` entries: started "
          "at t = 0 (`phases=1`), or the mean over 8 refresh phases (`phases=8`). Routing: "
          "the first MoE layer of one decode step of 16 requests from the calibrated "
          "synthetic router (`sieve.workload.router.SyntheticRouter`, preset, seed 0).", "",
          "| model | experts | tokens | layer (µs) | sum, t = 0 | sum, 8 phases |",
          "|---|---|---|---|---|---|"]
    for model in EVALUATED:
        lay, s0, s8, ne, nt = layer_vs_table(model, system)
        L.append(f"| {model} | {ne} | {nt} | {lay / 1e3:.2f} | {s0 / 1e3:.2f} "
                 f"({100 * (s0 / lay - 1):+.1f} %) | {s8 / 1e3:.2f} "
                 f"({100 * (s8 / lay - 1):+.1f} %) |")
    L.append("")
    L += ["**Decode attention on PIM** (one layer, batch 16, every request 2048 tokens; "
          "softmax on the GPU). *bound*: cache bytes x query heads per KV head / internal "
          "bandwidth (each query head is a serialized GEMV).", "",
          "| model | layer | slices | PCs/slice | PIM (µs) | bound (µs) | softmax step (µs) "
          "| imbalance |", "|---|---|---|---|---|---|---|---|"]
    for model in EVALUATED + ("deepseek-v3",):
        m = get_model(model)
        for lt in sorted(set(m.layer_types)):
            layer = m.layer_types.index(lt)
            r = run_attention(spec, m, layer, [2048] * 16, gpu=system.gpu)
            if not r.on_pim:
                L.append(f"| {model} | {lt} | – | – | GPU: {r.gpu_ns / 1e3:.2f} | – | – | – |")
                continue
            att = m.attention
            g = att.n_heads if lt == "mla" else att.n_heads // att.n_kv_heads
            bound = r.kv_bytes * g / spec.pim_internal_bandwidth_gbs
            if lt == "mla":  # the value pass reads the latent again
                bound *= (2 * att.kv_lora_rank + att.qk_rope_head_dim) / (
                    att.kv_lora_rank + att.qk_rope_head_dim)
            L.append(f"| {model} | {lt} | {r.n_slices} | {r.pcs_per_slice} | "
                     f"{r.time_ns / 1e3:.2f} | {bound / 1e3:.2f} | {r.softmax_ns / 1e3:.2f} | "
                     f"{r.imbalance:.3f} |")
    L += ["", f"Regenerate: `{CMD}` (a few seconds; deterministic, and "
          "tests/test_pim_kernels.py checks this section is current).", "", "<!-- pimk:end -->"]
    return "\n".join(L)


def write(path: Path, md: str) -> None:
    write_section(path, "<!-- pimk:begin", "<!-- pimk:end -->", md, heading="PIM kernels",
                  new_file="# Validation\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", type=Path, help="update the PIM kernels section of this file")
    args = ap.parse_args(argv)
    md = section()
    if args.write:
        write(args.write, md)
        print(f"wrote {args.write}")
    else:
        print(md)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
