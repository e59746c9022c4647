"""Command-line interface: a thin argparse layer over the library.

``main(argv) -> int``. Each subcommand parses its arguments, calls one library function and
prints or writes the result. A :class:`sieve.errors.SieveError` becomes one line on stderr and
exit code 2 (argparse usage errors also exit 2); nothing is half-written (sieve.outputs).
"""

from __future__ import annotations

import argparse
import re
import sys

from sieve.errors import ConfigError, SieveError
from sieve.limits import MAX_BATCH, MAX_CONTEXT, MAX_GPUS, MAX_LAYERS, MAX_STEPS
from sieve.validate import parse_int

__all__ = ["COMMANDS", "build_parser", "main"]


class _Parser(argparse.ArgumentParser):
    """argparse with one-line usage errors (exit code 2), like every other sieve error; no
    abbreviated options (``--method`` is not ``--methods``); an unknown option names the closest
    valid one of its subcommand and points at that subcommand's help."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)
        self._subparsers_by_name: dict[str, argparse.ArgumentParser] = {}

    def _get_formatter(self):
        # argparse's formatter asks shutil for the terminal's width, and add_argument makes one
        # per option to check it: shutil's import (with zlib, bz2 and lzma) was ~3 ms of every
        # start. The same width, computed without it (_help_width).
        return self.formatter_class(prog=self.prog, width=_help_width())

    def error(self, message: str):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:  # an unknown subcommand or choice: name the closest
            import difflib

            valid = re.findall(r"'([^']*)'", m.group(2))
            close = difflib.get_close_matches(m.group(1), valid, n=1, cutoff=0.6)
            if close:
                message += f" (did you mean {close[0]!r}?)"
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args=None, namespace=None):
        ns, extra = self.parse_known_args(args, namespace)
        if extra:
            sub = self._subparsers_by_name.get(getattr(ns, "command", None) or "", self)
            bad = extra[0]
            flag = bad.split("=", 1)[0]
            hint = ""
            if flag.startswith("-"):
                import difflib

                opts = [o for a in sub._actions for o in a.option_strings]
                close = difflib.get_close_matches(flag, opts, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]}?)" if close else ""
            what = "argument" if len(extra) == 1 else "arguments"
            sub.error(f"unrecognized {what}: {' '.join(extra)}{hint}")
        return ns


def _help_width() -> int:
    """The width argparse's HelpFormatter would take: ``shutil.get_terminal_size().columns``
    (``$COLUMNS`` when it is a positive integer, else the terminal of ``sys.__stdout__``, else
    80) less 2."""
    import os

    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
        columns = columns or 80
    return columns - 2


def _int_type(lo: int | None = None, hi: int | None = None, what: str = ""):
    """argparse ``type=``: a strict ASCII integer in ``[lo, hi]`` (no 1_000, no 1e3)."""
    rng = (f" in [{lo}, {hi}]" if lo is not None and hi is not None
           else f" >= {lo}" if lo is not None else "")

    def conv(text: str) -> int:
        v = parse_int(text.strip())
        if v is None or (lo is not None and v < lo) or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer{rng}"
                                             + (f" ({what})" if what else ""))
        return v

    conv.__name__ = "integer"
    return conv


_FLOAT = re.compile(r"-?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?\Z")


def _float_type(lo: float, hi: float):
    """argparse ``type=``: a decimal number in ``[lo, hi]`` (no nan, inf or underscores)."""

    def conv(text: str) -> float:
        t = text.strip()
        v = float(t) if t.isascii() and _FLOAT.match(t) else None
        if v is None or not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number in [{lo:g}, {hi:g}]")
        return v

    conv.__name__ = "number"
    return conv


def _cmd_specs(args: argparse.Namespace) -> int:
    from sieve.dram import presets as specs

    if args.name is None:
        width = max(len(n) for n in specs.PRESETS)
        for name, spec in specs.PRESETS.items():
            mark = "*" if name == specs.DEFAULT_SPEC else " "
            print(f"{mark} {name:<{width}}  {spec.description}")
        print("(* = default; `sieve specs NAME` shows every value with its unit and source)")
        return 0
    spec = specs.get_spec(args.name)
    rows = spec.describe()
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, value, meaning in rows:
        print(f"{name:<{w0}}  {value:<{w1}}  {meaning}")
    if spec.sources:
        print("\nsources:")
        for k, v in spec.sources.items():
            print(f"  {k}: {v}")
    return 0


def _split_list(text: str, flag: str) -> list[str]:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise ConfigError(
            f"{flag}: malformed list {text!r} (comma-separated, e.g. {flag} "
            + ("gpt-oss-120b,qwen3-30b-a3b)" if flag == "--models" else "1,4,16)")
        )
    return items


def _int_list(text: str, flag: str) -> list[int]:
    out = []
    for x in _split_list(text, flag):
        v = parse_int(x)
        if v is None:
            raise ConfigError(f"{flag}: {x!r} is not an integer (e.g. {flag} 1,4,16,64)")
        out.append(v)
    return out


def _cmd_characterize(args: argparse.Namespace) -> int:
    from sieve.outputs import check_out_dir
    from sieve.report.characterize import CharacterizeConfig, run_characterize

    check_out_dir(args.out)  # before any work
    config = CharacterizeConfig(
        models=tuple(_split_list(args.models, "--models")),
        batch_sizes=tuple(_int_list(args.batch, "--batch")),
        n_steps=args.steps,
        seed=args.seed,
        router_fit=args.router_fit,
    )
    for path in run_characterize(config, args.out):
        print(path)
    return 0


def _cmd_model(args: argparse.Namespace) -> int:
    """List the model presets, or show one model (a preset or a config.json) as sieve reads
    it: structure, parameter counts, the router fit its runs get, and where it came from."""
    from sieve.model import MODELS, get_model
    from sieve.workload.router import resolve_router

    if args.name is None:
        width = max(len(n) for n in MODELS)
        print("model presets:")
        for name, m in MODELS.items():
            print(f"  {name:<{width}}  {m.family}, {m.n_layers} layers, {m.n_experts} experts "
                  f"top-{m.top_k}, {m.total_params() / 1e9:.1f}B total")
        from sieve.model import FAMILIES

        print("(`sieve model NAME` or `sieve model path/to/config.json` shows one; config.json "
              f"model types read: {', '.join(sorted(FAMILIES))}, others with the standard MoE "
              "fields through the generic reader)")
        return 0
    m = get_model(args.name)
    a = m.attention
    types = {t: m.layer_types.count(t) for t in dict.fromkeys(m.layer_types)}
    print(f"{m.name}: family {m.family}, {m.n_layers} layers "
          f"({', '.join(f'{n} {t}' for t, n in types.items())}), hidden {m.hidden_size}, "
          f"vocab {m.vocab_size}")
    if a.kind == "mla":
        print(f"  attention: MLA, {a.n_heads} heads, kv_lora_rank {a.kv_lora_rank}")
    else:
        print(f"  attention: {a.n_heads} query heads on {a.n_kv_heads} KV heads of {a.head_dim}"
              + (f", window {m.sliding_window}" if m.sliding_window else ""))
    print(f"  experts: {m.n_moe_layers} MoE layers x {m.n_experts} routed experts, top-"
          f"{m.top_k}, width {m.moe_intermediate_size}"
          + (f"; {m.n_shared_experts} shared of width {m.shared_intermediate_size}"
             + (" (gated)" if m.shared_expert_gate else "") if m.n_shared_experts else "")
          + (f"; {len(m.dense_layer_ids)} dense layers of width {m.dense_intermediate_size}"
             if m.dense_layer_ids else ""))
    print(f"  router: {m.router.scoring}, top-k renormalised: {m.router.norm_topk_prob}")
    print(f"  parameters: {m.total_params() / 1e9:.3f}B total, {m.active_params() / 1e9:.3f}B "
          f"active per token (input embedding included; "
          f"{m.active_params(include_embedding=False) / 1e9:.3f}B without)")
    fit, _, how = resolve_router(m.name)
    print(f"  synthetic router: the fit to {fit} ({how}; `sieve run --router FIT` chooses)")
    print(f"  source: {m.source or 'preset (sieve/model/presets.py)'}")
    return 0


def _cmd_hardware(args: argparse.Namespace) -> int:
    from sieve.hw import comm, gpu
    from sieve.hw import presets as hardware
    from sieve.hw import system as systems

    if args.name is None:
        for title, table, default in (("GPUs", hardware.GPUS, hardware.DEFAULT_GPU),
                                      ("systems", systems.SYSTEMS, systems.DEFAULT_SYSTEM),
                                      ("links", hardware.LINKS, hardware.DEFAULT_INTER_LINK)):
            print(f"{title}:")
            width = max(len(n) for n in table)
            for name, obj in table.items():
                mark = "*" if name == default else " "
                desc = getattr(obj, "description", None) or (
                    f"{obj.n_gpus} x {obj.gpu.name}, {obj.gpus_per_node} per node, "
                    f"{obj.n_nodes} node(s), inter-node {obj.inter_link.name}")
                print(f"  {mark} {name:<{width}}  {desc}")
        print("(* = default; `sieve hardware NAME` shows every value with its unit and source)")
        return 0
    key = args.name.strip().lower()
    if key in systems.SYSTEMS:
        s = systems.SYSTEMS[key]
        print(f"system {s.name}: {s.n_gpus} x {s.gpu.name}, {s.gpus_per_node} GPUs per NVSwitch "
              f"node, {s.n_nodes} node(s)")
        for tier, link in (("intra-node", s.intra_link), ("inter-node", s.inter_link)):
            print(f"  {tier}: {link.name}, {link.bw_gbs:g} GB/s per GPU per direction, "
                  f"{link.latency_us:g} us hop latency")
        return 0
    if key in hardware.LINKS:
        link = hardware.LINKS[key]
        print(f"{link.name}: {link.description}")
        print(f"  bw_gbs      {link.bw_gbs:g} GB/s per GPU per direction  "
              f"{link.sources.get('bw_gbs', '')}")
        print(f"  latency_us  {link.latency_us:g} us  {link.sources.get('latency_us', '')}")
        return 0
    if key not in hardware.GPUS:
        from sieve.errors import ConfigError, choices

        raise ConfigError(f"hardware {args.name!r}: unknown (GPUs: {choices(hardware.GPUS)}; "
                          f"systems: {choices(systems.SYSTEMS)}; links: "
                          f"{choices(hardware.LINKS)})")
    g = hardware.get_gpu(key)
    rows = g.describe()
    w0 = max(len(r[0]) for r in rows)
    w1 = max(len(r[1]) for r in rows)
    for name, value, src in rows:
        print(f"{name:<{w0}}  {value:<{w1}}  {src}")
    cal, ccal = gpu.get_calibration(g), comm.get_comm_calibration(g.name)
    print(f"\nGPU model calibration ({cal.source}):")
    print(f"  eta_bw {cal.eta_bw:.4f}, eta_c bf16/fp8/fp4 {cal.eta_c_bf16:.4f}/"
          f"{cal.eta_c_fp8:.4f}/{cal.eta_c_fp4:.4f}, overlap p {cal.overlap_p:g}")
    print(f"  t0_gemm bf16/fp8/fp4 {cal.t0_gemm_bf16_s * 1e6:.2f}/{cal.t0_gemm_fp8_s * 1e6:.2f}/"
          f"{cal.t0_gemm_fp4_s * 1e6:.2f} us, t0_moe {cal.t0_moe_bf16_s * 1e6:.2f}/"
          f"{cal.t0_moe_fp8_s * 1e6:.2f}/{cal.t0_moe_fp4_s * 1e6:.2f} us")
    print(f"interconnect calibration ({ccal.source}):")
    for op in ("all_gather", "all_to_all", "all_reduce", "ep_dispatch", "ep_combine"):
        ab = ccal.op(op)
        print(f"  {op:<12} alpha {ab.alpha_us:6.2f} us  eta {ab.eta:.4f}")
    return 0


def _assignments(items: list[str] | None, flag: str, form: str = "NAME=VALUE"
                 ) -> dict[str, str]:
    """``NAME=VALUE`` items of a repeated option, in order, as {name: value text}: the one
    parser of ``--set`` (specs, sweeps) and ``--grid``. A missing ``=`` or name, or a name
    given twice, is refused naming ``flag``."""
    out: dict[str, str] = {}
    for item in items or []:
        key, sep, val = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"{flag} {item!r}: expected {form}")
        if key in out:
            raise ConfigError(f"{flag} {key}: given twice")
        out[key] = val
    return out


def _parse_overrides(items: list[str] | None) -> dict:
    """``--set nRCDRD=30 --set channels=4`` -> {"nRCDRD": 30, "channels": 4}.

    Values: strict integers (``30``, ``0x1e``), decimal numbers (``1.5``), ``true``/``false``,
    ``none``/``null`` (e.g. ``pim=none`` removes the PIM units); anything else stays text. The
    spec itself checks each value's type and range.
    """
    out: dict = {}
    for key, val in _assignments(items, "--set").items():
        val = val.strip()
        v: object = val
        low = val.lower()
        if parse_int(val, hex_ok=True) is not None:
            v = parse_int(val, hex_ok=True)
        elif val.isascii() and _FLOAT.match(val):
            v = float(val)
        elif low in ("true", "false"):
            v = low == "true"
        elif low in ("none", "null"):
            v = None
        out[key] = v
    return out


def _log_path(text: str | None):
    """The --log file, checked before any work: a known extension, not a folder."""
    from pathlib import Path

    from sieve.dram.log import LOG_KINDS

    if text is None:
        return None
    if not text.strip():
        raise ConfigError("--log: empty file name")
    p = Path(text)
    if p.suffix.lower() not in LOG_KINDS:
        raise ConfigError(f"--log {text!r}: unknown file kind {p.suffix or '(none)'!r} (known: "
                          f"{', '.join(LOG_KINDS)}: CSV in Ramulator 2.1's command-trace "
                          "columns, or a numpy LOG_DTYPE array)")
    if p.is_dir():
        raise ConfigError(f"--log {text!r}: is a folder, expected a file name")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise ConfigError(f"--log {text!r}: {str(parent)!r} is not a folder")
            break
    return p


def _cmd_dram(args: argparse.Namespace) -> int:
    import json

    from sieve.dram import memtrace
    from sieve.dram import presets as specs
    from sieve.dram.controller import ControllerConfig, simulate_requests
    from sieve.errors import ConfigError

    log_path = _log_path(args.log)  # before any work
    spec = specs.get_spec(args.spec, _parse_overrides(args.set))
    if args.trace and args.pattern:
        raise ConfigError("sieve dram: give either --trace FILE or --pattern, not both")
    if log_path is not None:  # the log must not overwrite an input
        import os

        for flag, given in (("--trace", args.trace), ("--spec", args.spec)):
            if given and os.path.exists(given) and os.path.realpath(given) == \
                    os.path.realpath(log_path):
                raise ConfigError(f"sieve dram: --log {args.log!r} is the {flag} file: the "
                                  "log would overwrite its input; give another file")
    if args.trace:
        trace = memtrace.open_trace(args.trace)  # streamed: memory bounded by the queues
    else:
        trace = memtrace.synthetic_trace(args.pattern or "seq", args.requests,
                                         stride_bytes=args.request_bytes,
                                         write_fraction=args.write_fraction, seed=args.seed)
    controller = ControllerConfig(queue_size=args.queue,
                                  write_high_watermark=args.write_high,
                                  write_low_watermark=args.write_low,
                                  page_policy=args.page, lifecycle=args.lifecycle,
                                  inject_per_tick=args.inject_per_tick)
    if log_path is None:
        res = simulate_requests(spec, trace, channels=args.channels, mapping=args.mapping,
                                request_bytes=args.request_bytes, controller=controller)
    else:  # streamed to a temporary file as the run goes, moved into place at its end
        from sieve.dram.log import LogWriter

        with LogWriter(log_path) as writer:
            res = simulate_requests(spec, trace, channels=args.channels,
                                    mapping=args.mapping, request_bytes=args.request_bytes,
                                    controller=controller, log_sink=writer.write)
    if args.json:
        d = res.to_dict()
        d["trace"] = trace.source
        print(json.dumps(d, indent=2))
    else:
        print(f"trace: {trace.source}")
        print(res.summary())
    return 0


def _cmd_check(args: argparse.Namespace) -> int:
    import json

    from sieve.dram import presets as specs
    from sieve.dram.checker import check_log_file

    spec = specs.get_spec(args.spec, _parse_overrides(args.set))
    # read and checked in chunks: bounded memory whatever the log's length
    rep = check_log_file(args.files, spec, ticks_per_clock=args.ticks_per_clock,
                         max_reports=args.max_violations,
                         check_refresh=not args.no_refresh_check)
    if args.json:
        print(json.dumps({
            "files": list(args.files), "spec": spec.name, "ok": rep.ok,
            "commands": rep.n_commands, "timed_pairs": rep.n_checked_pairs,
            "violations": rep.n_violations, "by_family": rep.by_family(),
            "listed": [{"family": v.family, "index": v.index, "prev_index": v.prev_index,
                        "tick": v.tick, "required_tick": v.required_tick,
                        "constraint": v.constraint} for v in rep.violations],
        }, indent=2))
    else:
        print(rep.summary(args.max_violations))
    return 0 if rep.ok else 1


def _cmd_gemv(args: argparse.Namespace) -> int:
    import json

    from sieve import pim
    from sieve.dram import presets as specs
    from sieve.dram.pim_device import run_pim

    spec = specs.get_spec(specs.DEFAULT_SPEC if args.spec is None else args.spec,
                          _parse_overrides(args.set))
    cg = args.col_groups
    if cg not in ("auto", "fast"):
        cg = parse_int(cg.strip())
        if cg is None:
            raise ConfigError(f"sieve gemv: --col-groups must be an integer, auto or fast; got "
                              f"{args.col_groups!r}")
    lay = pim.gemv_layout(spec, args.rows, args.cols, args.tokens, n_pcs=args.pcs,
                          col_groups=cg, tile_rows=args.tile_rows)
    res = run_pim(spec, lay.kernels())
    internal = spec.pim_internal_bandwidth_gbs * lay.n_pcs / spec.org.total_pseudochannels
    roof_ns = lay.weight_bytes * args.tokens / internal
    out = {
        **res.to_dict(),
        "rows": args.rows, "cols": args.cols, "tokens": args.tokens, "pcs": lay.n_pcs,
        "row_groups": lay.row_groups, "col_groups": lay.col_groups,
        "kernel": lay.kernel.__dict__, "output_tiles": lay.output_tiles,
        "padding": lay.padding,
        "roofline_ns": roof_ns, "cycle_accurate_over_roofline": res.time_ns / roof_ns,
    }
    if args.json:
        print(json.dumps(out, indent=2, default=float))
    else:
        print(f"PIM GEMV {args.rows} x {args.cols}, {args.tokens} token(s), on {lay.n_pcs} "
              f"pseudo-channels of {spec.name}")
        print(f"  time:          {res.time_ns:.1f} ns ({res.cycles} CK)")
        print(f"  roofline:      {roof_ns:.1f} ns (weights / internal bandwidth); "
              f"ratio {res.time_ns / roof_ns:.2f}")
        print(f"  layout:        {lay.row_groups} row x {lay.col_groups} column groups of PCs, "
              f"{lay.rows_per_pc} rows x {lay.cols_per_pc} columns per PC "
              f"(padding {100 * lay.padding:.1f} %)")
        print(f"  kernel per PC: {lay.kernel}" + (
            f", then {lay.output_tiles - 1} more output tile(s) at rows {lay.tile_stride} "
            "apart" if lay.output_tiles > 1 else ""))
        print(f"  utilisation:   {100 * res.pc_utilization.mean():.1f} % mean per PC, "
              f"imbalance {res.imbalance:.3f}")
        print(f"  refreshes:     {res.refreshes}")
        print("  commands:      " + ", ".join(f"{k} {v}" for k, v in res.command_counts.items()))
    return 0


def _cmd_roofline(args: argparse.Namespace) -> int:
    from sieve.dram.presets import get_spec
    from sieve.hw.presets import DEFAULT_GPU, get_gpu
    from sieve.outputs import check_out_dir
    from sieve.report.roofline import run_roofline

    check_out_dir(args.out)  # before any work
    gpu = get_gpu(DEFAULT_GPU if args.gpu is None else args.gpu)
    spec = None if args.spec is None else get_spec(args.spec)
    for path in run_roofline(args.model, args.batch, args.out, spec=spec, gpu=gpu,
                             seed=args.seed, context=args.context):
        print(path)
    return 0


def _cmd_schedule(args: argparse.Namespace) -> int:
    from sieve.hw.system import get_system
    from sieve.model.moe import get_model
    from sieve.sched.methods import get_method
    from sieve.sched.trace import schedule_synthetic
    from sieve.system.setups import default_system

    model = get_model(args.model)
    system = get_system(args.system or default_system(args.model))
    method = get_method(args.method)
    warmup = args.warmup
    observe = None
    if warmup:
        from sieve.pim.cost import EngineCostModel

        observe = EngineCostModel(system)
    want = None
    if args.layer not in (None, "all"):
        want = parse_int(args.layer.strip())
        if want is None or not 0 <= want < model.n_layers:
            raise ConfigError(f"--layer: {args.layer!r} is not a MoE layer of {model.name} "
                              f"(MoE layers: {model.moe_layer_ids[0]}.."
                              f"{model.moe_layer_ids[-1]}, or 'all')")
    rows = schedule_synthetic(model, system, method.name, args.batch, seed=args.seed,
                              context_len=args.context, warmup=warmup, observe=observe)
    layers = sorted({r.layer for r in rows})
    if args.layer != "all":
        want = layers[0] if want is None else want
        if want not in layers:
            raise ConfigError(f"--layer: {want} is not a MoE layer of {model.name} "
                              f"(MoE layers: {layers[0]}..{layers[-1]}, or 'all')")
        rows = [r for r in rows if r.layer == want]
    print(f"# {method.name} on {system.describe()}")
    print(f"# {model.name}, batch {args.batch}, context {args.context}, seed {args.seed}, "
          f"step {warmup} ({warmup} warm-up step(s) observed on the engine); times in us "
          "are the scheduler's own estimates")
    print(f"{'layer':>5} {'gpu':>3} {'active':>6} {'on_gpu':>6} {'on_pim':>6} "
          f"{'tok_gpu':>7} {'tok_pim':>7} {'T_comm':>8} {'T_GPU':>8} {'T_PIM':>8} "
          f"{'T_total':>8}  PIM experts (local id:tokens)")
    for r in rows:
        p = r.partition
        s = p.summary()
        ids = " ".join(f"{e}:{p.counts[e]}" for e in p.pim_experts)
        print(f"{r.layer:>5} {r.gpu:>3} {s['experts_active']:>6} {s['experts_gpu']:>6} "
              f"{s['experts_pim']:>6} {s['tokens_gpu']:>7} {s['tokens_pim']:>7} "
              f"{p.est_comm_ns / 1e3:>8.2f} {p.est_gpu_ns / 1e3:>8.2f} "
              f"{p.est_pim_ns / 1e3:>8.2f} {p.est_total_ns / 1e3:>8.2f}  {ids}")
    return 0


def _layers_type(text: str) -> int | str | None:
    """argparse ``type=`` of --layers: 'all', 'auto' or an integer in [1, 10000]."""
    if text.strip().lower() == "all":
        return None
    if text.strip().lower() == "auto":
        return "auto"
    return _int_type(1, 10 ** 4, "or 'all' or 'auto'")(text)


_layers_type.__name__ = "layers"


def _run_kw(args: argparse.Namespace) -> dict:
    from sieve.system.step import sampled_layers_default

    layers = args.layers
    if layers == "auto":
        layers = sampled_layers_default(args.microbatches, args.overlap)
    return {"workload": args.workload, "steps": args.steps, "warmup": args.warmup,
            "seed": args.seed, "microbatches": args.microbatches, "overlap": args.overlap,
            "layers": layers, "trace": args.trace, "router": args.router}


def _cache_path(args: argparse.Namespace):
    """The cache file of a sweep: --cache FILE, none, or <out>/runs/cache.json."""
    from pathlib import Path

    if args.cache is not None and args.cache.strip().lower() == "none":
        return None
    if args.cache is not None:
        return Path(args.cache)
    from sieve.experiments.store import STORE_NAME

    return Path(args.out) / STORE_NAME / "cache.json"


def _execute(exp, args: argparse.Namespace, *, command: str, source: str, lenient: bool):
    """Check, run (resumably, in the store of --out) and write an experiment; returns the
    evaluation and the paths written."""
    from sieve.outputs import lock_out_dir

    with lock_out_dir(args.out):  # a second sieve into the same folder is refused
        return _execute_locked(exp, args, command=command, source=source, lenient=lenient)


def _execute_locked(exp, args: argparse.Namespace, *, command: str, source: str,
                    lenient: bool):
    from sieve.experiments.cache import read_cache, write_cache
    from sieve.experiments.evaluation import evaluate
    from sieve.experiments.store import RunStore
    from sieve.outputs import check_out_dir, check_out_file
    from sieve.report.evaluation import write_evaluation

    check_out_dir(args.out)  # before any work
    points = exp.check(source)
    cache = _cache_path(args)
    if cache is not None:
        check_out_file(cache, flag="--cache")
    entries: list = []
    note = ""
    if cache is not None:
        entries, note = read_cache(cache)
        if note:
            print(f"sieve: note: {note}", file=sys.stderr)
    store = RunStore(args.out)
    ev = evaluate(points, jobs=args.jobs, scheduler=args.scheduler, store=store,
                  rerun=args.rerun, cache_entries=entries, progress=True,
                  experiment=exp.to_dict())
    learned = ev.execution.cache_entries if ev.execution is not None else []
    if cache is not None and (learned or note or not cache.exists()):
        write_cache(cache, entries + learned)
    paths = write_evaluation(ev, args.out, command=command, lenient=lenient)
    return ev, paths


def _cmd_run(args: argparse.Namespace) -> int:
    from sieve.experiments.config import main_experiment, paper_experiment
    from sieve.outputs import check_out_dir
    from sieve.sched.methods import METHODS_MAIN, get_method
    from sieve.system import setups

    check_out_dir(args.out)  # before any work
    if args.trace is not None and args.router is not None:
        raise ConfigError("sieve run: --router with --trace: a trace routes the steps itself "
                          "(the synthetic router is not used); give one of them")
    methods = (list(METHODS_MAIN) if args.methods == "all" else
               [get_method(m).name for m in _split_list(args.methods, "--methods")])
    kw = _run_kw(args)
    if args.pim is not None:  # another PIM design on the same GPUs
        from sieve.dram.presets import get_spec

        get_spec(args.pim)  # one line naming the known presets if it is not one
        kw["system_overrides"] = {"memory": args.pim}
    if args.paper and args.colocated:
        raise ConfigError("sieve run: --colocated with --paper: --paper already runs the "
                          "colocated batches (Figure 11); give one of them")
    if args.paper:
        exp = paper_experiment(methods, **kw)
    else:
        # the default setup: the main job's, or Figure 11's for colocated batches
        setup = setups.FIG11 if args.colocated else setups.MAIN
        model = args.model or setup.model
        system = args.system or setups.default_system(args.model, colocated=args.colocated)
        batches = (_int_list(args.batch, "--batch") if args.batch else
                   list(setups.FIG11_BATCHES if args.colocated else setups.MAIN_BATCHES))
        if args.trace is not None:  # a trace's steps hold their own requests: its batch
            from sieve.model import get_model
            from sieve.workload.trace import load_trace, mean_requests

            tr = load_trace(args.trace)
            mdl = get_model(model)
            if (tr.n_experts, tr.top_k) != (mdl.n_experts, mdl.top_k):
                logged = tr.meta.model or "model not recorded"
                raise ConfigError(f"sieve run: --trace {args.trace} routes {tr.n_experts} "
                                  f"experts top-{tr.top_k} ({logged}); --model {model} has "
                                  f"{mdl.n_experts} top-{mdl.top_k}: give the model the "
                                  "trace was logged on")
            b = max(int(round(mean_requests(tr))), 1)
            if args.batch and batches != [b]:
                raise ConfigError(f"sieve run: --batch {args.batch} conflicts with --trace "
                                  f"{args.trace}, whose steps hold {b} requests on average "
                                  "(the batch comes from the trace: leave --batch out)")
            batches = [b]
        if args.colocated:
            kw["colocated"] = True
        from sieve.model import MODELS, get_model

        if model.strip().lower() not in MODELS:  # a config.json: say how it was read
            mdl = get_model(model)
            print(f"# {mdl.name}: family {mdl.family}, {mdl.total_params() / 1e9:.2f}B "
                  f"parameters, from {mdl.source}")
        exp = main_experiment(model, system, methods, batches, **kw)
    ev, paths = _execute(exp, args, command="run", source="sieve run", lenient=False)
    _print_rows(ev.runs)
    for p in paths:
        print(p)
    _print_answers(ev.runs)
    return 0


def _print_answers(runs) -> None:
    """The gain, stated: per point, the best method and its gains (sieve.report.gain)."""
    from sieve.report.gain import answers

    for line in answers(runs):
        print(line)


def _print_rows(runs) -> None:
    from sieve.report.gain import add_gains

    runs = add_gains(runs)
    cols = ("model", "method", "batch", "tpot_ms", "interactivity_tok_s_user",
            "throughput_tok_s_gpu", "pim_busy_frac", "tokens_pim_frac")
    wl = len({r["workload"] for r in runs}) > 1
    # the inputs that vary between the rows get a column (PIM preset, seed, mode)
    vary = [c for c in ("memory", "seed", "overlap") if len({str(r.get(c)) for r in runs}) > 1]
    setups = sorted({(r["system"], r["memory"], r["overlap"], int(r["microbatches"]))
                     for r in runs})
    for system, memory, overlap, mbs in setups:  # which PIM design and execution mode ran
        mode = ("two-batch overlap" if overlap == "tbo" else
                "2 interleaved micro-batches" if mbs == 2 else "sequential")
        print(f"# {system}: PIM preset {memory}, execution mode {mode}")
    for model, fit, how in sorted({(r["model"], r.get("router"), r.get("router_source"))
                                   for r in runs if r.get("router") is not None}):
        print(f"# {model}: routed by "
              + ("its trace file" if fit == "trace" else
                 f"the synthetic router fitted to {fit} ({how}; --router FIT chooses)"))
    def x(v):
        return f"{v:>7.2f}x" if v is not None else f"{'-':>8}"

    mw = max([10] + [len(str(r["method"])) for r in runs])  # (long variant names align)
    print(f"{'model':<18} {'method':<{mw}} {'batch':>5} {'TPOT ms':>8} {'tok/s/user':>10} "
          f"{'tok/s/GPU':>10} {'PIM busy':>8} {'tok on PIM':>10} {'x GPU-only':>10} "
          f"{'x best other':>12}" + ("  workload" if wl else "")
          + "".join(f"  {c}" for c in vary))
    for r in runs:
        v = [r[c] for c in cols]
        case = ""
        if r["colocated"]:
            case = "  colocated" + ("" if r.get("n_prefill") in (None, "")
                                    else f" ({r['n_prefill']} prefill)")
        print(f"{v[0][:18]:<18} {v[1]:<{mw}} {v[2]:>5} {v[3]:>8.3f} {v[4]:>10.1f} {v[5]:>10.1f} "
              f"{100 * v[6]:>7.0f}% {100 * v[7]:>9.0f}% {x(r['x_gpu_only']):>10} "
              f"{x(r['x_best_other']):>12}" + (f"  {r['workload']}" if wl else "")
              + "".join(f"  {r.get(c)}" for c in vary) + case)


def _field_value(name: str, text: str, flag: str):
    """A command-line value for a run field, typed by the field (sieve.experiments.config)."""
    from sieve.experiments.config import RUN_FIELDS

    if name not in RUN_FIELDS:
        raise ConfigError(f"{flag} {name}: unknown run field (valid: {', '.join(RUN_FIELDS)})")
    typ, optional = RUN_FIELDS[name]
    t = text.strip()
    if optional and t.lower() in ("none", "null", "all" if name == "layers" else "none"):
        return None
    if typ is bool:
        if t.lower() not in ("true", "false"):
            raise ConfigError(f"{flag} {name}={text}: expected true or false")
        return t.lower() == "true"
    if typ is int:
        v = parse_int(t)
        if v is None:
            raise ConfigError(f"{flag} {name}={text}: expected an integer")
        return v
    if typ is float:
        if not (t.isascii() and _FLOAT.match(t)):
            raise ConfigError(f"{flag} {name}={text}: expected a number")
        return float(t)
    if typ is dict:
        raise ConfigError(f"{flag} {name}: give system_overrides in a sweep file")
    return t


def _sweep_changes(args: argparse.Namespace):
    base = {k: _field_value(k, v, "--set")
            for k, v in _assignments(args.set, "--set", "FIELD=VALUE").items()}
    grid = {}
    for k, v in _assignments(args.grid, "--grid", "FIELD=V1,V2,...").items():
        vals = [x.strip() for x in v.split(",")]
        if not v.strip() or any(not x for x in vals):
            raise ConfigError(f"--grid {k + '=' + v!r}: malformed list (comma-separated "
                              "values)")
        grid[k] = [_field_value(k, x, "--grid") for x in vals]
    return base, grid


def _experiment_of(args: argparse.Namespace, target: str | None):
    """The sweep of ``sieve sweep`` / ``sieve profile``: a sweep file, or a run config file
    (one point), or nothing (all from --set / --grid), with --set / --grid applied. Returns
    (experiment, source name)."""
    from sieve.experiments.config import ExperimentConfig

    base, grid = _sweep_changes(args)
    if target is None:
        exp, source = ExperimentConfig(), "command line"
    else:
        exp, source = _load_target(target), str(target)
    if base or grid or target is None:
        exp = exp.with_changes(base, grid, source if not (base or grid) else
                               f"{source} with --set/--grid")
    return exp, source


def _load_target(target: str):
    """A sweep file, or a run config file (RunConfig fields as JSON, or a run file of a
    store, whose ``point.run`` is one) as a one-point sweep."""
    import json
    from pathlib import Path

    from sieve.experiments.config import RUN_FIELDS, ExperimentConfig, load_experiment
    from sieve.validate import read_text

    p = Path(target)
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(read_text(p, "sweep file"))
        except (ValueError, RecursionError, SieveError):
            data = None  # load_experiment names the problem
        if isinstance(data, dict) and isinstance(data.get("point"), dict) and isinstance(
                data["point"].get("run"), dict):
            data = data["point"]["run"]  # a run file of a store
        if isinstance(data, dict) and data and set(data) <= set(RUN_FIELDS):
            return ExperimentConfig.from_dict({"runs": [data]}, str(target))
    return load_experiment(p)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from sieve.outputs import check_out_dir

    check_out_dir(args.out)  # before any work
    exp, source = _experiment_of(args, args.file)
    if args.dry_run:
        from sieve.experiments.config import run_id
        from sieve.experiments.store import RunStore

        points = exp.check(source)
        import os

        have = set()
        if os.path.isdir(os.path.join(args.out, "runs")):
            have = set(RunStore(args.out).ids())
        for i, p in enumerate(points):
            rid = run_id(p)
            print(f"{i:>4} {rid} {'finished' if rid in have else 'to run  '} {p.describe()}")
        print(f"{len(points)} run(s); experiment id {exp.experiment_id(source)}")
        return 0
    ev, paths = _execute(exp, args, command="sweep", source=source, lenient=True)
    # the defaults of a sweep are RunConfig's, not `sieve run`'s: say so where they differ
    # (after the run: a refused sweep prints its one error line only)
    from sieve.system.run import RunConfig
    from sieve.system.step import SAMPLED_LAYERS

    # what `sieve run` uses (its --steps / --layers defaults, one micro-batch)
    diff = {"steps": 1, "layers": SAMPLED_LAYERS[0]}
    for name, run_default in diff.items():
        field_default = getattr(RunConfig, name)
        if any(r.point.config.__dict__[name] == field_default for r in ev.records):
            shown = "all" if field_default is None else field_default
            print(f"sieve: note: {name} = {shown} (the run fields' default) where the sweep "
                  f"does not set it; `sieve run` uses {name} = {run_default}", file=sys.stderr)
    _print_rows(ev.runs)  # the summary table, with each run's gains
    _print_answers(ev.runs)
    print(f"{len(ev.runs)} run(s) -> {args.out}")
    for p in paths:
        print(p)
    return 0


def _cmd_profile(args: argparse.Namespace) -> int:
    from sieve.experiments.evaluation import evaluation_of
    from sieve.experiments.profiling import profile_points, speedscope_json
    from sieve.outputs import check_out_dir, write_run
    from sieve.report.evaluation import tables, write_evaluation

    check_out_dir(args.out)  # before any work
    target = args.target
    if target in ("main", "paper"):
        from sieve.experiments.config import main_experiment, paper_experiment
        from sieve.sched.methods import METHODS_MAIN
        from sieve.system import setups

        kw = {"steps": 1, "warmup": 1, "layers": 4}  # the `sieve run` defaults
        exp = (paper_experiment(list(METHODS_MAIN), **kw) if target == "paper" else
               main_experiment(setups.MAIN.model, setups.MAIN.system, list(METHODS_MAIN),
                               list(setups.MAIN_BATCHES), **kw))
        base, grid = _sweep_changes(args)
        if base or grid:
            exp = exp.with_changes(base, grid, f"{target} with --set/--grid")
        source = f"sieve run{' --paper' if target == 'paper' else ''}"
    else:
        exp, source = _experiment_of(args, target)
    points = exp.check(source)
    if args.limit is not None:
        points = points[:args.limit]

    def finish(records, folder):
        ev = evaluation_of(records, exp.to_dict())
        write_evaluation(ev, folder, command="profile", lenient=True)
        return ev

    rep = profile_points(points, cprofile=not args.no_cprofile, top=args.top, finish=finish)
    text = rep.text()
    print(f"profile of {source}" + (f" (first {len(points)} points)" if args.limit else ""))
    print(text, end="")
    files = {"profile.txt": text, "stages.csv": rep.stages_csv(),
             "profile.speedscope.json": speedscope_json(rep.times, f"sieve profile {source}")}
    if rep.pstats_bytes is not None:
        files["profile.pstats"] = rep.pstats_bytes
    files.update(tables(rep.evaluation))
    for p in write_run(args.out, files, command="profile"):
        print(p)
    return 0


def _cmd_timeline(args: argparse.Namespace) -> int:
    from sieve.experiments.evaluation import evaluate
    from sieve.experiments.points import Point
    from sieve.outputs import check_out_dir
    from sieve.report.evaluation import write_evaluation
    from sieve.system import setups
    from sieve.system.run import RunConfig

    check_out_dir(args.out)
    model = args.model or setups.MAIN.model
    system = args.system or setups.default_system(args.model)
    kw = _run_kw(args)
    if args.pim is not None:
        from sieve.dram.presets import get_spec

        get_spec(args.pim)
        kw["system_overrides"] = {"memory": args.pim}
    cfg = RunConfig(model=model, system=system, method=args.method, batch=args.batch, **kw)
    # what to draw, checked before any work: a GPU of the system, a measured step, a layer
    n_gpus = cfg.resolve_system().n_gpus
    if args.gpu >= n_gpus:
        raise ConfigError(f"sieve timeline: --gpu {args.gpu}: the system {system!r} has GPUs "
                          f"0..{n_gpus - 1}")
    if args.step >= cfg.steps:
        raise ConfigError(f"sieve timeline: --step {args.step}: the run measures steps "
                          f"0..{cfg.steps - 1} (--steps {cfg.steps})")
    layers = None
    if args.layer is not None:
        want = None if args.layer == "all" else parse_int(args.layer.strip())
        if args.layer != "all" and (want is None or not 0 <= want < MAX_LAYERS):
            raise ConfigError(f"sieve timeline: --layer {args.layer!r}: expected a layer "
                              f"number in [0, {MAX_LAYERS}) or 'all'")
        layers = "all" if want is None else [want]
    ev = evaluate([Point(cfg, timeline=True, channels=True)])
    if isinstance(layers, list) and not any(t["layer"] == layers[0] for t in ev.timeline):
        have = sorted({t["layer"] for t in ev.timeline if t["layer"] >= 0})
        raise ConfigError(f"sieve timeline: --layer {layers[0]} was not simulated (layers "
                          f"simulated: {', '.join(map(str, have))}; --layers all simulates "
                          "every one)")
    view = {"gpu": args.gpu, "step": args.step, "layers": layers}
    for p in write_evaluation(ev, args.out, command="timeline", timeline_view=view):
        print(p)
    return 0


#: `sieve trace import` kinds: (reader, output kind).
TRACE_IMPORTERS = ("vllm", "counts", "allenai", "fiddler")


def _cmd_trace_import(args: argparse.Namespace) -> int:
    import os

    from sieve.workload import importers

    out = args.out
    if not out.lower().endswith(".npz"):
        raise ConfigError(f"sieve trace import: --out {out!r} must end in .npz")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
        raise ConfigError(f"sieve trace import: --out {out!r}: {parent!r} is not a writable "
                          "folder")
    if os.path.isdir(out):
        raise ConfigError(f"sieve trace import: --out {out!r} is a folder")
    for f in args.files:  # never overwrite an input
        if os.path.abspath(f) == os.path.abspath(out):
            raise ConfigError(f"sieve trace import: --out {out!r} is one of the inputs")
    kind = args.kind
    if kind == "vllm":
        tr = importers.read_vllm_router_log(
            args.files, n_experts=args.n_experts, model=args.model,
            warmup_passes="auto" if args.warmup_passes is None else args.warmup_passes)
    else:
        if len(args.files) != 1:
            raise ConfigError(f"sieve trace import {kind}: takes one file, got "
                              f"{len(args.files)}")
        f = args.files[0]
        if kind == "counts":
            if args.top_k is None:
                raise ConfigError("sieve trace import counts: --top-k is required (experts "
                                  "each token selects: a count file does not say)")
            tr = importers.read_count_matrix(f, top_k=args.top_k, model=args.model or "")
        elif kind == "allenai":
            tr = importers.read_allenai_counts(f)
        else:
            tr = importers.read_fiddler_popularity(f, top_k=args.top_k or 2)
    print(tr.save(out))
    for line in _trace_summary(tr):
        print(line)
    return 0


def _trace_summary(tr) -> list[str]:
    """Lines describing a RoutingTrace or CountTrace (sieve trace info)."""
    import numpy as np

    from sieve.workload.stats import load_skew
    from sieve.workload.trace import DECODE, PREFILL, RoutingTrace, trace_requests

    m = tr.meta
    lines = [f"model: {m.model or '(not recorded)'}", f"source: {m.source}",
             f"experts: {m.n_experts}, top-{m.top_k}",
             f"layers: {len(m.layer_ids)} ({', '.join(map(str, m.layer_ids[:12]))}"
             + (", ..." if len(m.layer_ids) > 12 else "") + ")"]
    if isinstance(tr, RoutingTrace):
        per = tr.tokens_per_step()
        reqs = [trace_requests(tr, s) for s in range(tr.n_steps)]
        dec = int(np.count_nonzero(np.asarray(tr.phase) == DECODE))
        pre = int(np.count_nonzero(np.asarray(tr.phase) == PREFILL))
        lines += ["kind: routing trace (token level): usable with sieve run --trace",
                  f"steps: {tr.n_steps}, tokens: {tr.n_tokens} (decode {dec}, prefill {pre})",
                  f"tokens per step: min {per.min()}, mean {per.mean():.1f}, max {per.max()}",
                  f"requests per step: min {min(reqs)}, mean {np.mean(reqs):.1f}, max "
                  f"{max(reqs)} (a run on it takes its batch from these)"]
        counts = tr.all_counts().sum(axis=0)
    else:
        counts = tr.counts
        lines += ["kind: count trace (aggregate per-layer counts): load skew only, cannot "
                  "route steps",
                  f"tokens: {tr.n_tokens if tr.n_tokens is not None else '(not recorded)'}"]
    live = counts.sum(axis=1) > 0
    if live.any():
        sk = load_skew(counts[live])
        med = {k: float(np.median(v)) for k, v in sk.items()}
        lines.append(f"load skew over layers (median): max/mean {med['max_over_mean']:.2f}, "
                     f"top-10 % experts' share {med['top10_share']:.2f}, normalised entropy "
                     f"{med['norm_entropy']:.3f}")
    return lines


def _cmd_trace_info(args: argparse.Namespace) -> int:
    from sieve.workload.sniff import IMPORT_HINT, KINDS, sniff
    from sieve.workload.trace import load_counts, load_trace

    kind = sniff(args.file)
    if kind == "sieve-trace":
        tr = load_trace(args.file)
    elif kind == "sieve-counts":
        tr = load_counts(args.file)
    else:
        hint = IMPORT_HINT.get(kind)
        if kind in ("unknown", "npz"):
            raise ConfigError(f"sieve trace info: {args.file} is {KINDS[kind]} (known: sieve "
                              "routing and count traces, vLLM router logs, count matrices, "
                              "OLMoE and Fiddler count files)")
        # read it as its importer would: a file that only starts like one is refused here
        from sieve.workload import importers

        if kind == "vllm-log":
            tr = importers.read_vllm_router_log([args.file], warmup_passes="auto")
        elif kind == "allenai-json":
            tr = importers.read_allenai_counts(args.file)
        elif kind == "fiddler-json":
            tr = importers.read_fiddler_popularity(args.file)
        else:  # count-json, sglang-json, count-csv: top-k is not in the file; 1 to read it
            tr = importers.read_count_matrix(args.file, top_k=1)
        print(f"{args.file}: {KINDS[kind]}: {len(tr.meta.layer_ids)} layer(s) x "
              f"{tr.meta.n_experts} experts; import it: {hint}")
        return 0
    print(f"{args.file}: {KINDS[kind]}")
    for line in _trace_summary(tr):
        print("  " + line)
    return 0


def _cmd_plot(args: argparse.Namespace) -> int:
    from pathlib import Path

    from sieve.outputs import write_bytes
    from sieve.report.evaluation import render

    d = Path(args.folder)
    tabs = {}
    for name in ("runs.csv", "timeline.csv", "pim_channels.csv"):
        if (d / name).is_file():
            tabs[name] = (d / name).read_bytes()
    if "runs.csv" not in tabs:
        raise ConfigError(f"sieve plot: {str(d)!r} holds no runs.csv (a folder written by "
                          "`sieve run` or `sieve timeline`)")
    for name, data in render(tabs).items():
        print(write_bytes(d / name, data))
    return 0


def _add_run_flags(p) -> None:
    p.add_argument("--workload", default="hh-rlhf", help="length profile: hh-rlhf (default), "
                   "math-500, inferencemax-1k1k/1k8k/8k1k, fixed:P/O, or a profile file")
    p.add_argument("--steps", type=_int_type(1, MAX_STEPS), default=1,
                   help="measured steps per point (default 1)")
    p.add_argument("--warmup", type=_int_type(0, MAX_STEPS), default=1,
                   help="steps before measuring, to fill the schedulers' tables (default 1)")
    p.add_argument("--seed", type=_int_type(0, 2 ** 63 - 1), default=0, help="seed (default 0)")
    p.add_argument("--microbatches", type=_int_type(1, 2), default=1,
                   help="1, or 2 for two-way micro-batch interleaving (default 1)")
    p.add_argument("--overlap", choices=("none", "tbo"), default="none",
                   help="execution mode: none (each micro-batch's phases in order, default) "
                   "or tbo (two-batch overlap: two micro-batches, one's attention and "
                   "communication beside the other's experts, weights shared on chip)")
    p.add_argument("--layers", type=_layers_type, default="auto", help="layers simulated per "
                   "step, each standing for its layer class (docs/system.md §1), or 'all' (exact, "
                   "slower); default auto: 4, "
                   "16 with two micro-batches (--overlap tbo, --microbatches 2; "
                   "sieve.system.step.SAMPLED_LAYERS)")
    p.add_argument("--trace", default=None, help="route the steps with this routing trace "
                   "(.npz, sieve.workload.trace) instead of the model's synthetic router")
    p.add_argument("--router", default=None, metavar="FIT", help="the synthetic router's fit "
                   "to route with, by the model it was fitted to (e.g. gpt-oss-120b, "
                   "mixtral-8x7b; default: the model's own, or qwen3-30b-a3b's for a model "
                   "without one; the run's output names the one used)")


def _add_exec_flags(p) -> None:
    p.add_argument("--jobs", type=_int_type(1, 4096), default=None, help="worker processes "
                   "(default: the CPUs this process may use; 1 runs in this process)")
    p.add_argument("--scheduler", default=None, metavar="tcp://HOST:PORT", help="run on this "
                   "Dask cluster instead of local processes (pip install '.[dask]')")
    p.add_argument("--rerun", action="store_true", help="simulate every point again, even "
                   "those finished in the runs/ store of --out")
    p.add_argument("--cache", default=None, metavar="FILE|none", help="cache file of shared "
                   "work (GEMV layout choices), loaded first and updated at the end (default "
                   "OUT/runs/cache.json; none: no cache file)")


#: The subcommands, in the order of ``sieve --help`` (build_parser adds each; a test checks).
COMMANDS = ("specs", "characterize", "dram", "check", "gemv", "roofline", "schedule", "run",
            "sweep", "profile", "timeline", "trace", "plot", "model", "hardware")


class _NotBuilt:
    """Stands in for the parser of a subcommand that ``build_parser(only=...)`` leaves out:
    every call on it does nothing and returns it (so its arguments cost nothing to add)."""

    def __getattr__(self, name: str):
        return self._skip

    def _skip(self, *args, **kwargs):
        return self


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; with ``only`` (one of :data:`COMMANDS`) the parser of that
    subcommand alone, which parses its command lines as the whole parser does (main builds
    it when the first argument names a subcommand: the other 14 parsers took ~9 ms of every
    start, docs/performance.md)."""
    from sieve.dram.presets import DEFAULT_DRAM_SPEC

    parser = _Parser(
        prog="sieve",
        description="Cycle-accurate simulation of MoE serving on GPUs with HBM-PIM.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    _add_parser = sub.add_parser

    def add_parser(name, **kw):  # remember every subcommand's parser (unknown-option hints)
        if only is not None and name != only:
            return _NotBuilt()
        sp = _add_parser(name, **kw)
        parser._subparsers_by_name[name] = sp
        return sp

    sub.add_parser = add_parser

    p = sub.add_parser("specs", help="list DRAM/PIM presets, or show one with units")
    p.add_argument("name", nargs="?", help="preset name or .json/.toml spec file")
    p.set_defaults(func=_cmd_specs)

    p = sub.add_parser(
        "characterize",
        help="act-ratio and token-count bins per model and batch size (seed Figures 3 and 5)",
        description="Generate synthetic routing traces (sieve.workload.router presets) and write "
        "a tidy CSV, config.json and the Figure 3/5 plots (PNG and PDF) into --out.",
    )
    # defaults: the four models of the seed's Figure 3 and its batch range (Figure 5: 1..1024)
    p.add_argument("--models", default="mixtral-8x22b,qwen3-30b-a3b,qwen3-next-80b-a3b,"
                   "gpt-oss-120b", help="comma-separated model names (default: the seed's "
                   "Figure 3 models)")
    p.add_argument("--batch", default="1,2,4,8,16,32,64,128,256,512,1024",
                   help="comma-separated batch sizes (default 1,2,4,...,1024)")
    p.add_argument("--steps", type=_int_type(1, MAX_STEPS), default=16,
                   help="decode steps per trace (default 16)")
    p.add_argument("--seed", type=_int_type(0), default=0, help="RNG seed (default 0)")
    p.add_argument(
        "--router-fit",
        default="joint",
        help="router preset set: joint (seed numbers + real aggregate skew; default) or seed",
    )
    p.add_argument("--out", default="characterize_out", help="output folder: new, empty, or an "
                   "earlier run's (default characterize_out)")
    p.set_defaults(func=_cmd_characterize)

    p = sub.add_parser("dram", help="run a memory-request trace through the DRAM engine")
    p.add_argument("--spec", default=DEFAULT_DRAM_SPEC, help="preset or .json/.toml spec "
                   f"file (default {DEFAULT_DRAM_SPEC})")
    p.add_argument("--set", action="append", metavar="NAME=VALUE",
                   help="override a spec value, e.g. --set nRCDRD=30 (repeatable)")
    p.add_argument("--trace", help="trace file, streamed: a Ramulator 2 LoadStore trace (LD/ST "
                   "<addr> per line) or a numpy .npy/.npz address trace (docs/user-guide.md)")
    p.add_argument("--pattern", choices=("seq", "rand"),
                   help="built-in synthetic trace instead of --trace (default seq)")
    p.add_argument("--requests", type=_int_type(1), default=100000,
                   help="requests of --pattern")
    p.add_argument("--write-fraction", type=_float_type(0.0, 1.0), default=0.0,
                   help="writes in --pattern (0..1)")
    p.add_argument("--seed", type=_int_type(0), default=0, help="seed of --pattern rand")
    p.add_argument("--channels", type=_int_type(1), default=1,
                   help="channels the addresses are interleaved over (default 1)")
    p.add_argument("--mapping", default="sieve", help="address mapping: sieve, RoBaRaCoCh, "
                   "ChRaBaRoCo, MOP4CLXOR (Ramulator 2's XOR mapper; 32-byte requests) "
                   "(default sieve)")
    p.add_argument("--request-bytes", type=_int_type(1, 1 << 16, what="bytes per request, "
                                                     "at most a row"),
                   default=64, help="bytes per request (default 64; 32 = one burst, as "
                   "Ramulator's transactions)")
    # the engine's queue index is a C int
    p.add_argument("--queue", type=_int_type(1, (1 << 31) - 1), default=32,
                   help="read/write queue entries per channel")
    p.add_argument("--write-high", type=_float_type(0.0, 1.0), default=0.8, metavar="FRACTION",
                   help="write-queue fill that starts a write drain (default 0.8, as Ramulator 2)")
    p.add_argument("--write-low", type=_float_type(0.0, 1.0), default=0.2, metavar="FRACTION",
                   help="write-queue fill that ends a write drain (default 0.2, as Ramulator 2)")
    p.add_argument("--page", choices=("open", "closed"), default="open", help="page policy")
    p.add_argument("--lifecycle", choices=("sieve", "ramulator2"), default="sieve",
                   help="request lifecycle of the controller: sieve (default) or ramulator2 "
                   "(Ramulator 2.1's generic controller: active buffer, ready-first FR-FCFS, "
                   "refresh FIFO; docs/validation.md)")
    p.add_argument("--inject-per-tick", type=_int_type(0, 1 << 20), default=None, metavar="N",
                   help="requests the front end hands over per engine tick, 0 = unlimited "
                   "(default: 0 for sieve, 1 for ramulator2, as Ramulator's LoadStoreTrace)")
    p.add_argument("--log", default=None, metavar="FILE",
                   help="write the command log: FILE.csv (Ramulator 2.1's command-trace "
                   "columns) or FILE.npy (sieve.dram.log.LOG_DTYPE); `sieve check FILE` checks "
                   "it")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_dram)

    p = sub.add_parser("check", help="check a DRAM command log against a spec's timing rules "
                       "(sieve's --log file or a raw Ramulator 2.1 command trace)",
                       description="Run the independent timing checker (docs/checker.md) on "
                       "command logs: sieve's .npy or .csv (`sieve dram --log`), Ramulator 2.1 "
                       "CmdTraceRecorder text traces (one .chN file per channel, as written), or "
                       "Ramulator 2.0 TraceRecorder files. Exit code 0: no violation; 1: "
                       "violations (listed); 2: bad input.")
    p.add_argument("files", nargs="+", metavar="FILE", help="command log file(s), e.g. the "
                   "trace.csv.ch0 trace.csv.ch1 of one Ramulator run")
    p.add_argument("--spec", default=DEFAULT_DRAM_SPEC, help="the spec the commands were "
                   f"issued to (preset or spec file; default {DEFAULT_DRAM_SPEC}, the twin of "
                   "Ramulator 2.1's HBM3_6400Mbps)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a spec value")
    p.add_argument("--ticks-per-clock", type=_int_type(1, 1 << 10), default=None, metavar="N",
                   help="engine ticks per clock of the file (default: 1 for CSV, whose clock "
                   "is in ticks; ticks_per_ck for Ramulator 2.0 files)")
    p.add_argument("--no-refresh-check", action="store_true",
                   help="skip the refresh-coverage rule (for excerpts and Ramulator 2.0 runs, "
                   "which never refresh HBM)")
    p.add_argument("--max-violations", type=_int_type(0, 1 << 20), default=20, metavar="N",
                   help="violations listed (all are counted; default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_check)

    p = sub.add_parser("gemv", help="time a GEMV on the PIM units (cycle-accurate)")
    p.add_argument("--spec", default=None, help="PIM preset or spec file (default: the "
                   "default PIM preset, marked * by `sieve specs`)")
    p.add_argument("--set", action="append", metavar="NAME=VALUE", help="override a spec value")
    p.add_argument("--rows", type=_int_type(1), required=True,
                   help="output rows of the matrix")
    p.add_argument("--cols", type=_int_type(1), required=True,
                   help="input columns of the matrix")
    p.add_argument("--tokens", type=_int_type(1), default=1, help="input vectors, serialized")
    p.add_argument("--pcs", type=_int_type(1), default=None, help="pseudo-channels to shard over "
                   "(default all)")
    p.add_argument("--col-groups", default="auto", metavar="N|auto|fast",
                   help="PCs along the input columns (partial sums reduced on the GPU); auto "
                   "(default) picks the fastest by simulation, fast by estimate, 1 = row-only")
    p.add_argument("--tile-rows", type=_int_type(1), default=None, metavar="T",
                   help="output rows a PU computes per pass over the input; each further tile "
                   "writes the input again (default: all rows in one pass; PIMSimulator's "
                   "layout is --col-groups 1 --tile-rows 8)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_gemv)

    p = sub.add_parser("roofline", help="Figure 4: GPU and HBM-PIM rooflines with the "
                       "operations of a sampled decode step (CSV + PNG + PDF)")
    p.add_argument("--model", required=True, help="model preset or config.json path")
    p.add_argument("--batch", type=_int_type(1, MAX_BATCH), required=True,
                   help="decode requests in the step")
    p.add_argument("--spec", default=None, help="PIM preset (default: the GPU's stacks)")
    p.add_argument("--gpu", default=None, help="GPU preset (default: the default GPU, marked * "
                   "by `sieve hardware`)")
    p.add_argument("--seed", type=_int_type(0), default=0, help="router seed (default 0)")
    p.add_argument("--context", type=_int_type(1, MAX_CONTEXT), default=2048,
                   help="cached tokens per request (default 2048)")
    p.add_argument("--out", default="roofline_out", help="output folder: new, empty, or an "
                   "earlier run's (default roofline_out)")
    p.set_defaults(func=_cmd_roofline)

    p = sub.add_parser("schedule", help="one decode step's GPU/PIM partition of every expert "
                       "(a scheduler on a synthetic routing step, with its estimates)")
    p.add_argument("--model", required=True, help="model preset or config.json path")
    p.add_argument("--batch", type=_int_type(1, MAX_BATCH), required=True,
                   help="decode requests in the step")
    p.add_argument("--method", default="sieve", help="scheduler (default sieve): sieve, "
                   "sieve-cp, noexp, allexp, pimoe, duplex, gpu-only, or an ablation "
                   "(sieve-noattn, sieve-cp-seedtable, ...; an unknown name lists them all)")
    p.add_argument("--system", default=None, help="system preset or .json/.toml file "
                   "(default: the seed's for its models, else sieve.hw.system.DEFAULT_SYSTEM: "
                   "sieve.system.setups.default_system; `sieve hardware` lists them)")
    p.add_argument("--context", type=_int_type(1, MAX_CONTEXT), default=2048,
                   help="cached tokens per request (default 2048)")
    p.add_argument("--seed", type=_int_type(0), default=0, help="router seed (default 0)")
    p.add_argument("--warmup", type=_int_type(0, MAX_STEPS), default=0,
                   help="earlier steps whose PIM "
                   "times (engine) feed "
                   "the runtime cost table first (default 0: roofline fallback only)")
    p.add_argument("--layer", default=None, help="MoE layer to print, or 'all' (default: the "
                   "first MoE layer)")
    p.set_defaults(func=_cmd_schedule)

    p = sub.add_parser("run", help="the evaluation: every method over batch sizes on one model "
                       "and system (default: a slice of seed Figure 9), or --paper for seed "
                       "Figures 9-11; tables, figures and config.json into --out")
    p.add_argument("--model", default=None, help="model preset or config.json (default: the "
                   "main job's, gpt-oss-120b)")
    p.add_argument("--system", default=None, help="system preset or file (default: the seed's "
                   "system for the model)")
    p.add_argument("--methods", default="all", help="comma-separated schedulers or 'all' "
                   "(gpu-only, noexp, allexp, pimoe, duplex, sieve, sieve-cp)")
    p.add_argument("--batch", default=None, help="comma-separated batch sizes (default 4,16,64)")
    p.add_argument("--paper", action="store_true", help="seed Figures 9-11 in full (three "
                   "models, B = 1..256, HH-RLHF and MATH-500, colocated batches drawn and "
                   "stress)")
    p.add_argument("--pim", default=None, metavar="PRESET", help="PIM design of the GPUs' "
                   "stacks: a DRAM/PIM preset (sieve specs) or spec file, e.g. "
                   "duplex-logic-pim (default: the system's, b200-hbm3e-pim on B200)")
    p.add_argument("--colocated", action="store_true", help="colocated prefill+decode batches "
                   "(seed Figure 11; default model and system qwen3-30b-a3b on 1xb200, "
                   "B = 8..256) instead of decode-only ones")
    _add_run_flags(p)
    p.add_argument("--out", default="sieve-out", help="output folder (default sieve-out); "
                   "finished runs are kept in its runs/ store and reused by a later run")
    _add_exec_flags(p)
    p.set_defaults(func=_cmd_run)

    p = sub.add_parser("sweep", help="run a sweep file (grid and list sweeps over run fields; "
                       "TOML or JSON) resumably on local processes or a Dask cluster",
                       description="Run the points of a sweep file (docs/user-guide.md, "
                       "'Sweeps'): each finished run is kept in OUT/runs/ (a killed sweep "
                       "re-run skips them), then runs.csv, config.json and the figures are "
                       "written into OUT.")
    p.add_argument("file", nargs="?", default=None, help="sweep file (.toml or .json), or a "
                   "run config (.json); omit to give every field with --set / --grid")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE", help="set a run field "
                   "for every point, e.g. --set steps=2 (repeatable)")
    p.add_argument("--grid", action="append", metavar="FIELD=V1,V2,...", help="a grid axis "
                   "(replaces the file's axis of that field), e.g. --grid batch=1,8,64")
    p.add_argument("--dry-run", action="store_true", help="list the points, their run ids "
                   "and whether they are finished in --out; run nothing")
    p.add_argument("--out", default="sweep-out", help="output folder (default sweep-out)")
    _add_exec_flags(p)
    p.set_defaults(func=_cmd_sweep)

    p = sub.add_parser("profile", help="where the time of a run or sweep goes: per stage, "
                       "cProfile top functions, engine commands per second; writes "
                       "profile.pstats and a speedscope timeline",
                       description="Run the points in this process with stage timers (and "
                       "cProfile), print the report, and write profile.txt, stages.csv, "
                       "profile.pstats (python -m pstats, snakeviz) and "
                       "profile.speedscope.json (speedscope.app) into --out.")
    p.add_argument("target", help="a sweep file, a run config (.json: RunConfig fields, or a "
                   "run file of a runs/ store), 'main' (the points of `sieve run`) or 'paper' "
                   "(`sieve run --paper`)")
    p.add_argument("--set", action="append", metavar="FIELD=VALUE", help="set a run field "
                   "for every point (repeatable)")
    p.add_argument("--grid", action="append", metavar="FIELD=V1,V2,...",
                   help="a grid axis (replaces the target's axis of that field)")
    p.add_argument("--limit", type=_int_type(1), default=None,
                   help="profile only the first N points")
    p.add_argument("--top", type=_int_type(1, 1000), default=25,
                   help="cProfile functions listed (default 25)")
    p.add_argument("--no-cprofile", action="store_true", help="stage timers only (cProfile's "
                   "overhead inflates the Python-heavy stages)")
    p.add_argument("--out", default="profile-out", help="output folder (default profile-out)")
    p.set_defaults(func=_cmd_profile)

    p = sub.add_parser("timeline", help="simulated steps as a Gantt chart of one GPU's lanes "
                       "(link, GPU compute, HBM, PIM), with its tables and a Chrome/Perfetto "
                       "trace (timeline.json)")
    p.add_argument("--model", default=None, help="model (default gpt-oss-120b)")
    p.add_argument("--system", default=None, help="system (default: the seed's for the model)")
    p.add_argument("--method", default="sieve", help="scheduler (default sieve)")
    p.add_argument("--batch", type=_int_type(1, MAX_BATCH), default=16,
                   help="batch (default 16)")
    p.add_argument("--pim", default=None, metavar="PRESET", help="PIM design of the stacks "
                   "(default: the system's)")
    p.add_argument("--gpu", type=_int_type(0, MAX_GPUS - 1), default=0,
                   help="GPU whose lanes are drawn (default 0)")
    p.add_argument("--layer", default=None, help="layer drawn, or 'all' (default: the first "
                   "simulated layer)")
    p.add_argument("--step", type=_int_type(0, MAX_STEPS - 1), default=0,
                   help="measured step drawn (default 0); timeline.csv/json hold every one")
    _add_run_flags(p)
    p.add_argument("--out", default="timeline-out", help="output folder")
    p.set_defaults(func=_cmd_timeline)

    p = sub.add_parser("trace", help="routing traces: import real routing data (vLLM router "
                       "logs, count matrices, SGLang, OLMoE, Fiddler), describe a file")
    tsub = p.add_subparsers(dest="trace_command", metavar="ACTION")
    tsub.required = True
    t = tsub.add_parser("import", help="convert real routing data into a sieve trace (.npz)")
    t.add_argument("kind", choices=TRACE_IMPORTERS, help="vllm: vLLM router logs (JSONL, "
                   "token level: a routing trace for sieve run --trace); counts: a count "
                   "matrix (.csv, .json, .npz, SGLang expert-distribution JSON); allenai: "
                   "OLMoE routing-analysis counts; fiddler: Fiddler expert popularity")
    t.add_argument("files", nargs="+", help="input file(s) (vllm: one per logged layer)")
    t.add_argument("--out", required=True, help="output .npz")
    t.add_argument("--n-experts", type=_int_type(1, 2 ** 15), default=None,
                   help="vllm: routed experts per layer (default: max id + 1)")
    t.add_argument("--top-k", type=_int_type(1, 2 ** 10), default=None,
                   help="counts (required), fiddler (default 2): experts per token")
    t.add_argument("--warmup-passes", type=_int_type(0, 10 ** 6), default=None,
                   help="vllm: leading forward passes to drop (default: detect the profiling "
                   "passes)")
    t.add_argument("--model", default=None, help="model name recorded in the trace")
    t.set_defaults(func=_cmd_trace_import)
    t = tsub.add_parser("info", help="what a routing file is, and a summary of a sieve trace")
    t.add_argument("file", help="a sieve routing/count trace, or any routing file")
    t.set_defaults(func=_cmd_trace_info)

    p = sub.add_parser("plot", help="redraw the figures of a result folder from its CSV tables")
    p.add_argument("folder", help="a folder written by sieve run or sieve timeline")
    p.set_defaults(func=_cmd_plot)

    p = sub.add_parser("model", help="list the model presets, or show one model (preset or "
                       "config.json) as sieve reads it: structure, parameters, router fit, "
                       "the fields a generic config was read from")
    p.add_argument("name", nargs="?", help="model preset or config.json (file or folder)")
    p.set_defaults(func=_cmd_model)

    p = sub.add_parser("hardware", help="list GPU/system/link presets, or show one with sources")
    p.add_argument("name", nargs="?", help="GPU, system or link preset name")
    p.set_defaults(func=_cmd_hardware)
    return parser


def _refuse_blank(args: argparse.Namespace) -> None:
    """Refuse an empty or blank value of any text option or argument (``--model ""`` would
    otherwise fall back to the default as if it were not given)."""
    for key, v in vars(args).items():
        items = v if isinstance(v, list) else [v]
        blank = [x for x in items if isinstance(x, str) and not x.strip()]
        if blank:
            flag = key if key in ("files", "file", "folder", "target", "name", "kind") \
                else "--" + key.replace("_", "-")
            cmd = getattr(args, "command", "") or ""
            raise ConfigError(f"sieve{' ' + cmd if cmd else ''}: {flag}: empty value "
                              f"{blank[0]!r} (give a name or a file, or leave the option out)")


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input, 130 interrupted)."""
    args = None
    import os
    import signal

    # sieve does no multi-threaded linear algebra: an idle OpenBLAS thread pool only costs CPU
    # time (4 % of `sieve dram`'s on 2 cores, docs/performance.md). Set before numpy is first
    # imported (the commands import it lazily); a value the user set wins.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

    old_term = None
    try:
        old_term = signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (main() called from a thread): no handler
        pass
    try:
        words = sys.argv[1:] if argv is None else list(argv)
        # the first argument names a subcommand: build its parser alone
        parser = build_parser(words[0] if words and words[0] in COMMANDS else None)
        try:
            args = parser.parse_args(words)
        except SystemExit as exc:  # usage errors (one line, code 2) and --help (code 0)
            return exc.code if isinstance(exc.code, int) else 2
        _refuse_blank(args)
        return int(args.func(args) or 0)
    except SieveError as exc:
        print(f"sieve: error: {exc}", file=sys.stderr)
        return 2
    except MemoryError:  # a safety net: sizes are estimated and refused before allocating
        print(f"sieve {getattr(args, 'command', '')}: error: out of memory: the inputs need more "
              f"memory than this machine has (lower the sizes, or see SIEVE_MEMORY_LIMIT in the "
              f"user guide)", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        # Ctrl-C (or SIGTERM), also inside the engine's compiled loops (they let signals
        # through): result files are written only once complete (sieve.outputs), so none is
        # left behind; a sweep keeps the runs that finished (OUT/runs) for its next start
        print("sieve: interrupted" + (" (SIGTERM)" if isinstance(exc, _Terminated) else ""),
              file=sys.stderr)
        return 143 if isinstance(exc, _Terminated) else 130
    except BrokenPipeError:  # e.g. `sieve specs | head`
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    finally:
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)


class _Terminated(KeyboardInterrupt):
    """SIGTERM, handled like Ctrl-C (workers stopped, nothing half-written)."""


def run() -> int:
    """The `sieve` program (the console script and ``python -m sieve``): :func:`main` on the
    command line, in a process that ends when it returns. Before it ends, the objects left are
    frozen out of Python's cyclic collector (``gc.freeze``): the interpreter's collection at
    exit would walk every one of them, about 18 M instructions of a short `sieve dram` run
    (docs/performance.md, *Command start-up*), and the process's end frees them anyway (the
    one difference: objects in reference cycles get no finalizer call at exit; sieve closes
    and renames its files with context managers, not finalizers)."""
    import gc

    code = main()
    gc.freeze()
    return code


def _on_sigterm(signum, frame):
    raise _Terminated()
