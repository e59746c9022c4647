"""A whole system, resolved once: GPUs, links, the (PIM) memory of each GPU, dtype, calibrations.

:class:`SystemConfig` is the one object the cost models, the schedulers and the step
simulator are handed; nothing below it looks a preset up again. It is frozen: variants are made
with :meth:`SystemConfig.override` or a system file, never by mutation. Every part is fully
resolved (a :class:`~sieve.hw.presets.GpuSpec`, two :class:`~sieve.hw.presets.LinkSpec`, a
:class:`~sieve.dram.spec.DramSpec` for the stacks of one GPU, a
:class:`~sieve.hw.presets.DType`, a :class:`~sieve.hw.calibrations.GpuCalibration` and a
:class:`~sieve.hw.calibrations.CommCalibration`), so a saved config (:meth:`to_dict`,
:meth:`save`) is self-contained and reloads to an equal object even if presets change later.

Presets follow the seed's evaluation (§7: 1 B200 for Qwen3, 4 for gpt-oss, 8 for Qwen3.5, all
GPUs with HBM-PIM stacks) plus a two-node B200 system (DESIGN.md §7: an IB tier) and Hopper
systems. Files: JSON or TOML, either the full form :meth:`to_dict` writes, or a short form
``{"base": "4xb200", "overrides": {"memory": "attacc-hbm3-pim", "gpu.hbm_bw_gbs": 9000}}``.

This module owns configuration data only; it computes no time.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, choices, lookup
from sieve.hw.calibrations import (
    AlphaBeta,
    CommCalibration,
    GpuCalibration,
    get_calibration,
    get_comm_calibration,
)
from sieve.hw.presets import (
    DEFAULT_GPU,
    DEFAULT_INTER_LINK,
    MAX_GPUS_PER_NODE,
    DType,
    GpuSpec,
    LinkSpec,
    get_dtype,
    get_gpu,
    get_link,
)
from sieve.limits import MAX_GPUS
from sieve.outputs import write_text
from sieve.validate import parse_document, read_text

__all__ = [
    "DEFAULT_SYSTEM",
    "SYSTEMS",
    "SystemConfig",
    "get_system",
    "load_system",
    "make_system",
]

#: Name of the full on-disk form (``format`` key) and its version.
FORMAT_NAME = "sieve-system-config"
FORMAT_VERSION = 1


@dataclass(frozen=True)
class SystemConfig:
    """``n_gpus`` GPUs of one kind, ``gpus_per_node`` per NVSwitch node, IB between nodes; every
    GPU has the stacks ``memory`` (HBM-PIM when ``memory.pim`` is set).

    Attributes:
        name: label (preset name or the user's).
        gpu: the GPU (peaks, HBM, NVLink).
        n_gpus: GPUs in the system.
        gpus_per_node: GPUs per NVSwitch node (at most 8).
        inter_link: the link between nodes (one NIC per GPU).
        memory: the DRAM/PIM spec of ONE GPU's stacks.
        dtype: storage/compute type of weights and activations in the model's matmuls (the seed:
            "activations and parameters are stored in bfloat16").
        gpu_calibration: efficiencies of the GPU time model (:mod:`sieve.hw.gpu`).
        comm_calibration: alpha/eta of the interconnect model (:mod:`sieve.hw.comm`).
    """

    name: str
    gpu: GpuSpec
    n_gpus: int
    gpus_per_node: int
    inter_link: LinkSpec
    memory: DramSpec
    dtype: DType
    gpu_calibration: GpuCalibration
    comm_calibration: CommCalibration

    # ---- derived ----------------------------------------------------------------------------
    @property
    def n_nodes(self) -> int:
        return -(-self.n_gpus // self.gpus_per_node)

    @property
    def intra_link(self) -> LinkSpec:
        """NVLink through NVSwitch, built from the GPU's NVLink fields (one source of truth)."""
        g = self.gpu
        return LinkSpec(f"nvlink{g.nvlink_gen}", f"NVLink {g.nvlink_gen} via NVSwitch",
                        g.nvlink_bw_gbs, g.nvlink_latency_us,
                        {k: g.sources.get(k, "") for k in ("nvlink_bw_gbs", "nvlink_latency_us")})

    @property
    def has_pim(self) -> bool:
        """Whether the stacks have PIM units."""
        return self.memory.pim is not None

    # ---- validation and variants ------------------------------------------------------------
    def validate(self) -> SystemConfig:
        what = f"system {self.name!r}"
        if not isinstance(self.name, str) or not self.name:
            raise ConfigError(f"system: name must be a non-empty string, got {self.name!r}")
        for n in ("n_gpus", "gpus_per_node"):
            v = getattr(self, n)
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                raise ConfigError(f"{what}: {n} must be a positive integer, got {v!r}")
        if self.n_gpus > MAX_GPUS:
            raise ConfigError(f"{what}: n_gpus {self.n_gpus} exceeds {MAX_GPUS} "
                              "(sieve.limits.MAX_GPUS: the step simulator keeps per-GPU state)")
        if self.gpus_per_node > MAX_GPUS_PER_NODE:
            raise ConfigError(f"{what}: gpus_per_node {self.gpus_per_node} exceeds "
                              f"{MAX_GPUS_PER_NODE} (one NVSwitch baseboard)")
        if self.n_gpus > self.gpus_per_node and self.n_gpus % self.gpus_per_node:
            raise ConfigError(f"{what}: n_gpus {self.n_gpus} is not a multiple of "
                              f"gpus_per_node {self.gpus_per_node}")
        for n, kind in (("gpu", GpuSpec), ("inter_link", LinkSpec), ("memory", DramSpec),
                        ("dtype", DType), ("gpu_calibration", GpuCalibration),
                        ("comm_calibration", CommCalibration)):
            if not isinstance(getattr(self, n), kind):
                raise ConfigError(f"{what}: {n} must be a {kind.__name__}, got "
                                  f"{type(getattr(self, n)).__name__}")
        self.gpu.validate()
        self.inter_link.validate()
        self.memory.validate()
        self.gpu_calibration.validate()
        self.comm_calibration.validate()
        self.gpu.run_dtype(self.dtype)  # natively or as a weight-only fallback
        return self

    def override(self, values: Mapping[str, Any] | None = None, **kw: Any) -> SystemConfig:
        """Copy with parts replaced.

        Keys: ``name``, ``n_gpus``, ``gpus_per_node``, ``dtype`` (a dtype name); ``gpu``,
        ``inter_link``, ``memory``, ``gpu_calibration``, ``comm_calibration`` (a preset name,
        a spec file for ``memory``, or the object); and dotted keys into a part:
        ``gpu.<field>``, ``inter_link.<field>``, ``memory.<spec key>`` (any key
        :meth:`DramSpec.override` takes), ``gpu_calibration.<field>``,
        ``comm_calibration.<op>.<alpha_us|eta>``. Replacing ``gpu`` also replaces the memory
        and the calibrations with that GPU's own, unless they are given too. Unknown keys raise
        :class:`ConfigError` listing the valid ones.
        """
        items = dict(values or {})
        items.update(kw)
        parts = ("gpu", "inter_link", "memory", "gpu_calibration", "comm_calibration")
        top = ("name", "n_gpus", "gpus_per_node", "dtype")
        for key in items:
            if not isinstance(key, str):
                raise ConfigError(f"system {self.name!r}: override keys must be strings, got "
                                  f"{key!r}")
            head = key.split(".", 1)[0]
            if key not in top and head not in parts:
                raise ConfigError(
                    f"system {self.name!r}: unknown override {key!r} (valid: "
                    + ", ".join(sorted(list(top) + list(parts)
                                       + [f"{p}.<key>" for p in parts])) + ")")
        new: dict[str, Any] = {}
        if "gpu" in items:
            gpu = get_gpu(items["gpu"])
            new["gpu"] = gpu
            # the GPU's own parts, unless given (a GPU of your own has no stored calibration)
            if "memory" not in items:
                new["memory"] = gpu.dram_spec()
            if "gpu_calibration" not in items:
                new["gpu_calibration"] = get_calibration(gpu)
            if "comm_calibration" not in items:
                new["comm_calibration"] = get_comm_calibration(gpu)
        if "inter_link" in items:
            new["inter_link"] = get_link(items["inter_link"])
        if "memory" in items:
            new["memory"] = get_spec(items["memory"])
        if "gpu_calibration" in items:
            new["gpu_calibration"] = get_calibration(items["gpu_calibration"])
        if "comm_calibration" in items:
            new["comm_calibration"] = get_comm_calibration(items["comm_calibration"])
        if "dtype" in items:
            new["dtype"] = get_dtype(items["dtype"])
        for k in ("name", "n_gpus", "gpus_per_node"):
            if k in items:
                new[k] = items[k]
        dotted: dict[str, dict[str, Any]] = {}
        for key, v in items.items():
            if "." in key:
                head, rest = key.split(".", 1)
                dotted.setdefault(head, {})[rest] = v
        for head, sub in dotted.items():
            obj = new.get(head, getattr(self, head))
            new[head] = obj.override(sub)
        if "name" not in items and self.name == f"{self.n_gpus}x{self.gpu.name}":
            # an automatic name follows the GPU count and kind
            gpu = new.get("gpu", self.gpu)
            new["name"] = f"{new.get('n_gpus', self.n_gpus)}x{gpu.name}"
        return replace(self, **new).validate()

    # ---- files ------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Self-contained JSON-serialisable form (every value resolved); inverse of
        :meth:`from_dict`."""
        return {
            "format": FORMAT_NAME, "version": FORMAT_VERSION, "name": self.name,
            "n_gpus": self.n_gpus, "gpus_per_node": self.gpus_per_node,
            "gpu": _plain(self.gpu), "inter_link": _plain(self.inter_link),
            "memory": self.memory.to_dict(), "dtype": self.dtype.name,
            "gpu_calibration": _plain(self.gpu_calibration),
            "comm_calibration": _plain(self.comm_calibration),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> SystemConfig:
        """Rebuild a config from :meth:`to_dict` output (or the short ``base`` form)."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"system config: expected a table/object, got {type(d).__name__}")
        if "base" in d:
            base = get_system(d["base"])
            over = d.get("overrides", {}) or {}
            if not isinstance(over, Mapping):
                raise ConfigError("system config: 'overrides' must be a table/object of "
                                  f"key = value, got {type(over).__name__}")
            extra = {k: v for k, v in d.items() if k not in ("base", "overrides")}
            return base.override({**extra, **over})
        if d.get("format") != FORMAT_NAME:
            raise ConfigError(f"system config: expected 'format' = {FORMAT_NAME!r} (full form) "
                              "or a 'base' preset (short form, known: "
                              f"{choices(SYSTEMS)})")
        if d.get("version") != FORMAT_VERSION:
            raise ConfigError(f"system config: version {d.get('version')!r} is not supported "
                              f"(this sieve reads version {FORMAT_VERSION})")
        try:
            gpu = _build(GpuSpec, d["gpu"])
            link = _build(LinkSpec, d["inter_link"])
            mem = DramSpec.from_dict(d["memory"])
            gcal = _build(GpuCalibration, d["gpu_calibration"])
            cc = dict(d["comm_calibration"])
            for f in fields(CommCalibration):
                if isinstance(cc.get(f.name), Mapping):
                    cc[f.name] = _build(AlphaBeta, cc[f.name])
            ccal = _build(CommCalibration, cc)
            out = cls(name=d["name"], gpu=gpu, n_gpus=d["n_gpus"],
                      gpus_per_node=d["gpus_per_node"], inter_link=link, memory=mem,
                      dtype=get_dtype(d["dtype"]), gpu_calibration=gcal,
                      comm_calibration=ccal)
        except KeyError as exc:
            raise ConfigError(f"system config: missing field {exc.args[0]!r}") from None
        return out.validate()

    def save(self, path: str | Path) -> Path:
        """Write the full form as JSON (``.json``) or TOML (``.toml``), atomically."""
        p = Path(path)
        if p.suffix.lower() == ".toml":
            return write_text(p, _to_toml(self.to_dict()))
        if p.suffix.lower() != ".json":
            raise ConfigError(f"system config file {str(p)!r}: must end in .json or .toml")
        return write_text(p, json.dumps(self.to_dict(), indent=2, sort_keys=True,
                                        default=_json_default) + "\n")

    def describe(self) -> str:
        """One line for tables and logs."""
        pim = (f"{self.memory.name} ({self.memory.pim_peak_tflops:.0f} PIM TFLOPS)"
               if self.has_pim else f"{self.memory.name} (no PIM)")
        return (f"{self.name}: {self.n_gpus} x {self.gpu.name}, {self.gpus_per_node} per node, "
                f"{self.n_nodes} node(s) ({self.inter_link.name}), memory {pim}, "
                f"{self.dtype.name}")


def _plain(obj: Any) -> Any:
    """A frozen dataclass (possibly nested) as plain dicts/lists for JSON."""
    if hasattr(obj, "__dataclass_fields__"):
        return {f.name: _plain(getattr(obj, f.name)) for f in fields(obj)}
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (tuple, list)):
        return [_plain(v) for v in obj]
    return obj


def _build(cls: type, d: Any) -> Any:
    if not isinstance(d, Mapping):
        raise ConfigError(f"system config: {cls.__name__} must be a table/object")
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(d) - names)
    if unknown:
        raise ConfigError(f"system config: {cls.__name__} has no field(s) "
                          f"{', '.join(unknown)} (valid: {choices(names)})")
    kw = dict(d)
    if cls is GpuSpec and "memory_overrides" in kw:
        kw["memory_overrides"] = tuple(tuple(x) for x in kw["memory_overrides"])
    try:
        obj = cls(**kw)
    except TypeError as exc:
        raise ConfigError(f"system config: {cls.__name__}: {exc}") from None
    return obj.validate() if hasattr(obj, "validate") else obj


def _json_default(o: Any) -> Any:
    if isinstance(o, Path):
        return str(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if math.isnan(v):
            return "nan"
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v, ensure_ascii=False)  # TOML basic strings use JSON's escapes
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise ConfigError(f"system config: cannot write {type(v).__name__} to TOML")


def _to_toml(d: Mapping[str, Any], prefix: str = "") -> str:
    """A small TOML writer for nested tables of scalars, strings and lists (``None`` = key
    omitted, which :meth:`SystemConfig.from_dict` reads back as ``None``)."""
    lines, tables = [], []
    for k, v in d.items():
        if v is None:
            continue
        if isinstance(v, Mapping):
            tables.append((k, v))
        else:
            lines.append(f"{json.dumps(str(k))} = {_toml_value(v)}")
    out = "\n".join(lines) + ("\n" if lines else "")
    for k, v in tables:
        name = f"{prefix}.{json.dumps(str(k))}" if prefix else json.dumps(str(k))
        out += f"\n[{name}]\n" + _to_toml(v, name)
    return out


def load_system(path: str | Path, _chain: tuple[Path, ...] = ()) -> SystemConfig:
    """Load a system file (JSON or TOML; full or short form, see the module docstring).

    A short form's ``base`` may name another system file; a relative name is resolved against
    the folder of the file that names it (as spec files' ``base``, sieve.dram.presets), and a
    chain that loops back is an error.
    """
    p = Path(path)
    who = f"system config file {str(p)!r}"
    key = p.resolve()
    if key in _chain:
        raise ConfigError(f"{who}: 'base' chain loops back to a file already loading "
                          f"({' -> '.join(str(x) for x in (*_chain, key))})")
    if len(_chain) >= MAX_BASE_DEPTH:
        raise ConfigError(f"{who}: 'base' chain deeper than {MAX_BASE_DEPTH} files")
    data = parse_document(read_text(p, "system config file"), p, "system config file")
    base = data.get("base") if isinstance(data, dict) else None
    try:
        if isinstance(base, str) and base.lower().endswith((".json", ".toml")):
            bp = Path(base)
            data = {**data, "base": load_system(bp if bp.is_absolute() else p.parent / bp,
                                                (*_chain, key))}
        return SystemConfig.from_dict(data)
    except ConfigError as exc:
        if str(exc).startswith("system config file "):
            raise  # a base file's own error already names that file
        raise ConfigError(f"{who}: {exc}") from None


#: A system file's ``base`` chain longer than this is a mistake.
MAX_BASE_DEPTH = 16


def make_system(gpu: str | GpuSpec = DEFAULT_GPU, n_gpus: int = 1,
                gpus_per_node: int | None = None,
                inter_link: str | LinkSpec = DEFAULT_INTER_LINK, name: str | None = None, *,
                memory: str | DramSpec | None = None, dtype: str | DType = "bf16",
                gpu_calibration: str | GpuCalibration | None = None,
                comm_calibration: str | CommCalibration | None = None) -> SystemConfig:
    """Build a system; ``gpus_per_node`` defaults to ``min(n_gpus, 8)``, ``memory`` to the
    GPU's own stacks (:meth:`GpuSpec.dram_spec`), the calibrations (``None``) to the GPU's
    stored ones (a GPU of your own has none: pass them). ``dtype`` defaults to bf16, the seed's
    (§7: "activations and parameters are stored in bfloat16")."""
    g = get_gpu(gpu)
    if gpus_per_node is None:
        gpus_per_node = min(n_gpus, MAX_GPUS_PER_NODE) if isinstance(n_gpus, int) else n_gpus
    return SystemConfig(
        name=name or f"{n_gpus}x{g.name}", gpu=g, n_gpus=n_gpus, gpus_per_node=gpus_per_node,
        inter_link=get_link(inter_link),
        memory=g.dram_spec() if memory is None else get_spec(memory),
        dtype=get_dtype(dtype),
        gpu_calibration=get_calibration(g if gpu_calibration is None else gpu_calibration),
        comm_calibration=get_comm_calibration(g if comm_calibration is None
                                              else comm_calibration),
    ).validate()


#: Seed §7 evaluation: 1 B200 (Qwen3), 4 B200 (GPT-OSS), 8 B200 (Qwen3.5), all with HBM-PIM
#: stacks (b200-hbm3e-pim); 16 = two HGX nodes joined by IB (DESIGN.md §7 "more, with an IB
#: tier"); Hopper systems with AttAcc's HBM3-PIM (hw.presets: their memory_spec, ⚠ borrowed).
SYSTEMS: dict[str, SystemConfig] = {s.name: s for s in (
    make_system("b200", 1), make_system("b200", 2), make_system("b200", 4),
    make_system("b200", 8), make_system("b200", 16, 8),
    # Hopper systems of every TP size InferenceMAX served gpt-oss at (docs/validation.md)
    make_system("h200", 1), make_system("h200", 2), make_system("h200", 4),
    make_system("h200", 8), make_system("h100", 8),
)}
DEFAULT_SYSTEM = "8xb200"


def get_system(name: str | Path | SystemConfig, overrides: Mapping[str, Any] | None = None
               ) -> SystemConfig:
    """Return a system preset (``1xb200``, ``2xb200``, ``4xb200``, ``8xb200``, ``16xb200``,
    ``1xh200`` .. ``8xh200``, ``8xh100``), a system file (``.json``/``.toml``) or the config
    itself, optionally with overrides (see :meth:`SystemConfig.override`)."""
    if isinstance(name, SystemConfig):
        system = name
    elif isinstance(name, (str, Path)) and str(name).lower().endswith((".json", ".toml")):
        system = load_system(name)
    else:
        system = lookup(SYSTEMS, name, "system")
    return system.override(overrides) if overrides else system
