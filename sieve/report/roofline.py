"""Figure 4: GPU and HBM-PIM rooflines with the operations of one sampled decode step.

Computing is separate from plotting: :func:`roofline_table` returns tidy rows (one per
operation, plus one per ceiling), :func:`plot_roofline` draws a figure from such rows only, and
:func:`run_roofline` writes CSV + PNG + PDF atomically (nothing is written if anything fails).

Operations of one decode step with ``batch`` requests (docs/pim.md, *Figure 4*):

* **attention** per layer type (``full``, ``sliding``, ``mla``, ``gdn``), the whole batch:
  GQA ``4 n_q d L`` FLOP over ``2 n_kv d L`` cached elements per request (sliding: ``L`` capped
  at the window), MLA ``2 n_h (d_k + d_v) L`` FLOP over ``(kv_lora_rank + rope) L`` elements
  (absorbed weights), Gated DeltaNet ``8 n_v d_k d_v`` FLOP over the state read + written;
* **QKV generation** per layer type: a GEMM of ``batch`` tokens over the token mixer's input
  projections (bytes as :func:`sieve.hw.gpu.gemm_time_ns`);
* **routed experts**: every expert with ``N > 0`` tokens in every MoE layer of the step,
  FLOPs and bytes from :func:`sieve.hw.gpu.expert_gemm_cost` (gate/up + down, bf16); and the
  shared experts (``N = batch``).

The step's routing comes from the calibrated synthetic router (:mod:`sieve.workload.router`,
seeded). Every request holds ``context`` cached tokens (⚠ one length for all, default 2048: the
attention intensity depends on the layer's shape, not on the length). Ceilings: the GPU's dense BF16
peak and HBM bandwidth (:mod:`sieve.hw.presets`), the PIM's peak and internal bandwidth
(:mod:`sieve.dram.spec`); attainable = ``min(peak, intensity x bandwidth)``.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from sieve.errors import ConfigError

if TYPE_CHECKING:  # pragma: no cover
    from sieve.dram.spec import DramSpec
    from sieve.hw.presets import GpuSpec

__all__ = ["COLUMNS", "roofline_table", "plot_roofline", "table_to_csv", "run_roofline"]

COLUMNS = ("kind", "name", "layer", "layer_type", "expert", "n_tokens", "flops", "bytes",
           "intensity_flop_per_byte", "gpu_attainable_tflops", "pim_attainable_tflops",
           "peak_tflops", "bandwidth_tbs")

ATTN_COLOR = "#e7298a"  # pink, as the seed's Figure 4 marks attention and QKV generation
FIGSIZE_IN = (6.4, 4.4)


def _attention_cost(m, layer: int, batch: int, context: int) -> tuple[float, float]:
    t = m.layer_types[layer]
    if t == "gdn":
        la = m.linear_attention
        flops = 8.0 * batch * la.n_v_heads * la.qk_head_dim * la.v_head_dim
        return flops, 2.0 * batch * m.recurrent_state_bytes(layer, "bf16")
    a = m.attention
    n = min(context, m.sliding_window) if t == "sliding" else context
    if t == "mla":
        d_k = a.kv_lora_rank + a.qk_rope_head_dim
        flops = 2.0 * a.n_heads * (d_k + a.kv_lora_rank) * n * batch
        return flops, 2.0 * d_k * n * batch
    flops = 4.0 * a.n_heads * a.head_dim * n * batch
    q_o = 2 * a.n_heads * a.head_dim * 2.0  # q in, o out per request
    return flops, batch * (2.0 * 2 * a.n_kv_heads * a.head_dim * n + q_o)


def _qkv_params(m, layer: int) -> int:
    """Input-projection weights of the layer's token mixer (q, k, v [+ gate]; MLA's q path and
    kv_a; Gated DeltaNet's in_proj)."""
    h = m.hidden_size
    t = m.layer_types[layer]
    if t == "gdn":
        la = m.linear_attention
        return h * (2 * la.key_dim + 2 * la.value_dim) + h * 2 * la.n_v_heads
    a = m.attention
    if t == "mla":
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        q = (h * a.q_lora_rank + a.q_lora_rank * a.n_heads * qk if a.q_lora_rank
             else h * a.n_heads * qk)
        return q + h * (a.kv_lora_rank + a.qk_rope_head_dim)
    q_out = a.n_heads * a.head_dim * (2 if a.output_gate else 1)
    return h * (q_out + 2 * a.n_kv_heads * a.head_dim)


def _row(kind, name, flops, nbytes, gpu_c, pim_c, *, layer=-1, layer_type="", expert=-1,
         n_tokens=0) -> dict:
    ai = flops / nbytes
    return {"kind": kind, "name": name, "layer": layer, "layer_type": layer_type,
            "expert": expert, "n_tokens": n_tokens, "flops": float(flops),
            "bytes": float(nbytes), "intensity_flop_per_byte": ai,
            "gpu_attainable_tflops": min(gpu_c[0], ai * gpu_c[1]),
            "pim_attainable_tflops": min(pim_c[0], ai * pim_c[1]),
            "peak_tflops": float("nan"), "bandwidth_tbs": float("nan")}


def _check_int(flag: str, v, lo: int = 1) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
        raise ConfigError(f"roofline: {flag} must be an integer >= {lo}, got {v!r}")
    return int(v)


def _resolved(gpu: GpuSpec, spec: DramSpec | None) -> tuple[GpuSpec, DramSpec]:
    """The GPU and the PIM spec (None: the GPU's own stacks), or one ConfigError."""
    from sieve.dram.spec import DramSpec
    from sieve.hw.presets import GpuSpec

    if not isinstance(gpu, GpuSpec):
        raise ConfigError(f"roofline: gpu must be a GpuSpec (resolve a preset name once with "
                          f"sieve.hw.get_gpu, or pass SystemConfig.gpu), got {gpu!r}")
    if spec is None:
        return gpu, gpu.dram_spec()
    if not isinstance(spec, DramSpec):
        raise ConfigError(f"roofline: spec must be a DramSpec (sieve.dram.get_spec, or "
                          f"SystemConfig.memory) or None (the GPU's own stacks), got {spec!r}")
    return gpu, spec


def roofline_table(model, batch: int, *, gpu: GpuSpec, spec: DramSpec | None = None,
                   seed: int = 0, context: int = 2048, counts: np.ndarray | None = None
                   ) -> list[dict]:
    """Tidy rows of Figure 4 (columns :data:`COLUMNS`).

    Args:
        model: model preset name, config path or :class:`~sieve.model.moe.MoeModel`.
        batch: decode requests in the step (tokens routed).
        gpu: the GPU (a :class:`~sieve.hw.presets.GpuSpec`, e.g. ``SystemConfig.gpu``).
        spec: the PIM stacks (a :class:`~sieve.dram.spec.DramSpec`, e.g.
            ``SystemConfig.memory``; None: the GPU's attached stacks,
            :meth:`GpuSpec.dram_spec`).
        seed: router seed.
        context: cached tokens per request.
        counts: ``(n_moe_layers, n_experts)`` token counts to use instead of sampling.
    """
    from sieve.hw.gpu import expert_gemm_cost
    from sieve.model.moe import get_model

    m = model if hasattr(model, "expert_gemv") else get_model(model)
    batch = _check_int("batch", batch)
    context = _check_int("context", context)
    seed = _check_int("seed", seed, 0)
    g, s = _resolved(gpu, spec)
    if s.pim is None:
        raise ConfigError(f"roofline: spec {s.name!r} has no PIM units")
    gpu_c = (g.peak_tflops("bf16"), g.hbm_bw_gbs / 1e3)  # TFLOP/s, TB/s
    pim_c = (s.pim_peak_tflops, s.pim_internal_bandwidth_gbs / 1e3)
    if counts is None:
        from sieve.workload.router import SyntheticRouter

        router = SyntheticRouter(m.name, seed=seed) if m.name in _router_models() else \
            SyntheticRouter(_shape(m), seed=seed)
        counts = router.generate(batch, 1).counts(0)
    counts = np.asarray(counts)
    if counts.shape != (m.n_moe_layers, m.n_experts):
        raise ConfigError(f"roofline: counts must have shape ({m.n_moe_layers}, "
                          f"{m.n_experts}), got {counts.shape}")
    rows = []
    for dev, (peak, bw), label in (("gpu", gpu_c, g.name), ("pim", pim_c, s.name)):
        r = _row("ceiling", f"{dev}:{label}", 1.0, 1.0, gpu_c, pim_c)
        r.update(peak_tflops=peak, bandwidth_tbs=bw, flops=float("nan"), bytes=float("nan"),
                 intensity_flop_per_byte=peak / bw, gpu_attainable_tflops=float("nan"),
                 pim_attainable_tflops=float("nan"))  # intensity = the ridge point
        rows.append(r)
    for t in dict.fromkeys(m.layer_types):  # one row per layer type, first layer of that type
        layer = m.layer_types.index(t)
        f, b = _attention_cost(m, layer, batch, context)
        rows.append(_row("attention", f"attention ({t})", f, b, gpu_c, pim_c, layer=layer,
                         layer_type=t, n_tokens=batch))
        p = _qkv_params(m, layer)
        f = 2.0 * batch * p
        b = p * 2.0 + batch * (m.hidden_size + p / m.hidden_size) * 2.0
        rows.append(_row("qkv", f"QKV generation ({t})", f, b, gpu_c, pim_c, layer=layer,
                         layer_type=t, n_tokens=batch))
    h, i = m.hidden_size, m.moe_intermediate_size
    for li, layer in enumerate(m.moe_layer_ids):
        for e in np.flatnonzero(counts[li]):
            n = int(counts[li, e])
            b, f = expert_gemm_cost([n], h, i, "bf16")
            rows.append(_row("expert", "routed expert", f, b, gpu_c, pim_c, layer=int(layer),
                             layer_type=m.layer_types[layer], expert=int(e), n_tokens=n))
    if m.n_shared_experts:
        b, f = expert_gemm_cost([batch], h, m.shared_intermediate_size, "bf16")
        rows.append(_row("shared_expert", "shared expert", f, b, gpu_c, pim_c,
                         n_tokens=batch))
    return rows


def _router_models() -> set[str]:
    from sieve.workload.router import ROUTER_PRESETS

    return set(ROUTER_PRESETS)


def _shape(m):
    from sieve.workload.router import RouterShape

    return RouterShape(m.name, m.n_experts, m.top_k, tuple(m.moe_layer_ids))


def table_to_csv(rows: Sequence[dict]) -> str:
    """CSV text of tidy rows (floats with 6 significant digits)."""
    out = io.StringIO()
    out.write(",".join(COLUMNS) + "\n")
    for r in rows:
        out.write(",".join(f"{r[c]:.6g}" if isinstance(r[c], float) else str(r[c])
                           for c in COLUMNS) + "\n")
    return out.getvalue()


def _mpl():
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_roofline(rows: Sequence[dict], *, title: str | None = None, ax=None) -> Any:
    """Draw Figure 4 from :func:`roofline_table` rows; returns the matplotlib Figure.

    Both ceilings as lines; operations as points on the GPU roofline (filled) and on the PIM
    roofline (hollow): routed experts colored by token count N (color bar), shared experts,
    attention and QKV generation in pink with text labels.
    """
    plt = _mpl()
    from matplotlib.colors import LogNorm

    ceil = {r["name"].split(":")[0]: r for r in rows if r["kind"] == "ceiling"}
    if set(ceil) != {"gpu", "pim"}:
        raise ConfigError("plot_roofline: the table needs one 'gpu' and one 'pim' ceiling row")
    ops = [r for r in rows if r["kind"] != "ceiling"]
    if not ops:
        raise ConfigError("plot_roofline: the table has no operations")
    if ax is None:
        fig, ax = plt.subplots(figsize=FIGSIZE_IN)
    else:
        fig = ax.figure
    ai = np.array([r["intensity_flop_per_byte"] for r in ops])
    x = np.logspace(np.floor(np.log10(min(ai.min(), 0.5))) - 0.3,
                    np.ceil(np.log10(max(ai.max(), ceil["gpu"]["intensity_flop_per_byte"])))
                    + 0.5, 200)
    for dev, style, label in (("gpu", "-", "GPU"), ("pim", "--", "HBM-PIM")):
        c = ceil[dev]
        ax.plot(x, np.minimum(c["peak_tflops"], x * c["bandwidth_tbs"]), style, color="0.2",
                lw=1.6, label=f"{label} roofline: {c['name'].split(':', 1)[1]} "
                f"({c['peak_tflops']:.0f} TFLOP/s, {c['bandwidth_tbs']:.1f} TB/s)")
    cmap = plt.get_cmap("viridis")
    ex = [r for r in ops if r["kind"] == "expert"]
    if ex:
        n = np.array([r["n_tokens"] for r in ex])
        norm = LogNorm(vmin=1, vmax=max(int(n.max()), 2))
        exai = np.array([r["intensity_flop_per_byte"] for r in ex])
        sc = ax.scatter(exai, [r["gpu_attainable_tflops"] for r in ex], c=n, cmap=cmap,
                        norm=norm, s=22, edgecolors="k", linewidths=0.3, zorder=3,
                        label="routed experts")
        ax.scatter(exai, [r["pim_attainable_tflops"] for r in ex], facecolors="none",
                   edgecolors=cmap(norm(n)), s=22, linewidths=0.8, zorder=3)
        cbar = fig.colorbar(sc, ax=ax, pad=0.02)
        cbar.set_label("tokens per routed expert N")
        ticks = [t for t in 2 ** np.arange(0, 12) if t <= norm.vmax]
        cbar.set_ticks(ticks, labels=[str(int(t)) for t in ticks])
        cbar.ax.minorticks_off()
    marks = {"attention": ("^", ATTN_COLOR, "attention"),
             "qkv": ("s", ATTN_COLOR, "QKV generation"),
             "shared_expert": ("D", "#7570b3", "shared expert")}
    for kind, (mk, color, label) in marks.items():
        sel = [r for r in ops if r["kind"] == kind]
        if not sel:
            continue
        xs = [r["intensity_flop_per_byte"] for r in sel]
        ax.scatter(xs, [r["gpu_attainable_tflops"] for r in sel], marker=mk, color=color,
                   s=40, edgecolors="k", linewidths=0.4, zorder=4, label=label)
        ax.scatter(xs, [r["pim_attainable_tflops"] for r in sel], marker=mk,
                   facecolors="none", edgecolors=color, s=40, linewidths=0.9, zorder=4)
        # QKV and shared experts sit at high intensity next to each other: label them on
        # the left (above / below), attention on the right
        off, ha = {"attention": ((5, -11), "left"), "qkv": ((-8, -12), "right"),
                   "shared_expert": ((-8, 8), "right")}[kind]
        for (xv, yv), text in _coinciding(sel).items():
            ax.annotate(text, (xv, yv), textcoords="offset points", xytext=off, ha=ha,
                        fontsize=6.5, color=color)
    ax.scatter([], [], marker="o", facecolors="none", edgecolors="0.3",
               label="hollow: the same operation on the PIM roofline")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("Arithmetic intensity (FLOP/B)")
    ax.set_ylabel("Attainable performance (TFLOP/s)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(True, which="major", lw=0.4, alpha=0.5)
    ax.legend(fontsize=6.5, loc="lower right")
    return fig


def _coinciding(rows: Sequence[dict]) -> dict[tuple[float, float], str]:
    """One label per point: rows that land within 2 % of each other share it, e.g.
    "QKV generation (gdn, full)"."""
    groups: dict[tuple[float, float], list[dict]] = {}
    for r in rows:
        xy = (r["intensity_flop_per_byte"], r["gpu_attainable_tflops"])
        for k in groups:
            if abs(np.log(k[0] / xy[0])) < 0.02 and abs(np.log(k[1] / xy[1])) < 0.02:
                groups[k].append(r)
                break
        else:
            groups[xy] = [r]
    out = {}
    for xy, rs in groups.items():
        types = [r["layer_type"] for r in rs if r["layer_type"]]
        base = rs[0]["name"].split(" (")[0]
        out[xy] = f"{base} ({', '.join(types)})" if types else rs[0]["name"]
    return out


def run_roofline(model, batch: int, out_dir: str | Path, *, gpu: GpuSpec,
                 spec: DramSpec | None = None, seed: int = 0, context: int = 2048,
                 flag: str = "--out") -> list[Path]:
    """Compute the table, draw the figure, then write ``roofline.csv``, ``roofline.png``,
    ``roofline.pdf`` and ``config.json`` to ``out_dir`` as one run folder (all or nothing; the
    folder is checked before any work, see :func:`sieve.outputs.write_run`). ``gpu``,
    ``spec``: as :func:`roofline_table`."""
    import json

    from sieve.outputs import check_out_dir, write_run
    from sieve.report import plots

    check_out_dir(out_dir, flag=flag)
    gpu, spec = _resolved(gpu, spec)
    rows = roofline_table(model, batch, spec=spec, gpu=gpu, seed=seed, context=context)
    name = model if isinstance(model, str) else model.name
    n_exp = sum(r["kind"] == "expert" for r in rows)
    n_layers = len({r["layer"] for r in rows if r["kind"] == "expert"})
    fig = plot_roofline(rows, title=f"{name}: one decode step of {batch} requests\n"
                        f"{n_exp} active routed experts in {n_layers} MoE layers "
                        f"(router seed {seed}), {context} cached tokens per request")
    payload = {"roofline.csv": table_to_csv(rows).encode()}
    try:
        for ext in ("png", "pdf"):
            payload[f"roofline.{ext}"] = plots.render(fig, ext)
    finally:
        plots.close(fig)
    payload["config.json"] = (json.dumps(
        {"command": "roofline", "model": name, "batch": batch, "spec": spec.name,
         "gpu": gpu.name,
         "seed": seed, "context": context,
         "router": "sieve.workload.router.SyntheticRouter (preset)"},
        indent=2, sort_keys=True) + "\n").encode()
    return write_run(out_dir, payload, command="roofline", flag=flag)
