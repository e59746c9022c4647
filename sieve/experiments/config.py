"""Sweeps: :class:`ExperimentConfig` (grid and list sweeps over run fields), run ids, the code
digest.

A sweep file (TOML or JSON) declares points over every :class:`~sieve.system.run.RunConfig`
field (model, system, method, batch, workload, seed, colocated, steps, layers, ...)::

    name = "qwen3-methods"          # optional label
    [base]                          # fields every run shares
    model = "qwen3-30b-a3b"
    system = "1xb200"
    layers = 4
    [grid]                          # cartesian product, first axis slowest
    method = ["noexp", "pimoe", "sieve"]
    batch = [1, 8, 64]
    seed = [0, 1]
    [[runs]]                        # optional list sweep: one block per entry, each crossed
    workload = "hh-rlhf"            # with the grid (and with its own `grid` table)
    [[runs]]
    workload = "math-500"
    colocated = true
    [[record.timeline]]             # record the tasks of the points matching all these fields
    method = "sieve"
    batch = 8

Points: for every ``runs`` entry (one empty entry if none), the product of the ``grid`` axes
then the entry's own ``grid`` axes, in declared order (the last axis varies fastest); each
point's fields are ``base``, overridden by the entry's fields, overridden by the grid values.
A field may not be both an entry's field and a grid axis. ``record.timeline`` /
``record.channels``: ``true`` (every point), ``false`` or a list of field tables (a point
records if it matches every field of one of them).

**Run id** (:func:`run_id`): the first 24 hex digits of the SHA-256 of canonical JSON
(sorted keys, no spaces) holding the id format (:data:`RUN_ID_FORMAT`), every RunConfig field
as written (so ``"qwen3-30b-a3b"`` and a path to the same config.json are two runs), what the
point records, and the content of every *file* it names: the model's config.json, the system
file, the workload profile file (each as resolved, so a system file's ``base`` chain counts) and
the routing trace (its bytes). It does not depend on where or when it is computed, on the
sweep the point belongs to or on sieve's code; changing any of the inputs above changes it.
Which code produced a finished run is recorded beside it (:func:`code_digest`); a stored run
is reused only by the same code (:mod:`sieve.experiments.store`).

Errors in a sweep file are one :class:`~sieve.errors.ConfigError` naming the file and the field
(``sweep.toml: grid.batch[2]: ...``), raised before anything runs.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import math
import os
import types
import typing
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sieve.errors import ConfigError, SieveError
from sieve.experiments.points import Point
from sieve.limits import MAX_GRID_POINTS
from sieve.outputs import jsonable
from sieve.system.run import RunConfig
from sieve.validate import check_regular_file, parse_document, read_text

__all__ = ["EXPERIMENT_FORMAT", "RUN_FIELDS", "RUN_ID_FORMAT", "ExperimentConfig", "RunBlock",
           "check_point", "code_digest", "load_experiment", "main_experiment",
           "paper_experiment", "run_id", "sieve_identity"]

#: Version of the run-id recipe (bumped if the recipe changes, which changes every id).
RUN_ID_FORMAT = "sieve-run-id/1"
#: Format name written in an ExperimentConfig's dict.
EXPERIMENT_FORMAT = "sieve-sweep"
_TOP_KEYS = ("format", "name", "base", "grid", "runs", "record")
_RECORD_KEYS = ("timeline", "channels")


def _field_types() -> dict[str, tuple[type, bool]]:
    """RunConfig field -> (scalar type, None allowed), from its annotations."""
    out = {}
    for f in dataclasses.fields(RunConfig):
        hint = typing.get_type_hints(RunConfig)[f.name]
        args = typing.get_args(hint)
        optional = isinstance(hint, types.UnionType) and type(None) in args
        base = next((a for a in args if a is not type(None)), hint) if optional else hint
        if typing.get_origin(base) is tuple:
            base = dict  # system_overrides: a table
        out[f.name] = (base, optional)
    return out


#: RunConfig fields a sweep may set, with their type and whether None is allowed.
RUN_FIELDS: dict[str, tuple[type, bool]] = _field_types()


# --------------------------------------------------------------------------------------------
# Code digest and run ids
# --------------------------------------------------------------------------------------------

_CODE_SUFFIXES = (".py", ".pyx", ".pxd", ".pxi", ".json", ".toml", ".csv")


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """SHA-256 over sieve's own source and data files (``.py``, ``.pyx``, ``.pxd``, ``.pxi``,
    ``.json``, ``.toml``, ``.csv`` under the package, by relative path): what decides a run's
    results besides its inputs. A stored run is reused only by code with the same digest."""
    import sieve

    root = Path(sieve.__file__).resolve().parent
    h = hashlib.sha256(f"sieve {sieve.__version__}\n".encode())
    for p in sorted(root.rglob("*")):
        if p.suffix in _CODE_SUFFIXES and p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0")
            h.update(hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def sieve_identity() -> dict[str, str]:
    """``{"version": sieve's version, "code": code_digest()}`` (recorded with results)."""
    import sieve

    return {"version": sieve.__version__, "code": code_digest()}


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=True,
                      allow_nan=False, default=jsonable)


def _is_path(text: str, suffixes: tuple[str, ...]) -> bool:
    t = text.strip().lower()
    return t.endswith(suffixes) or "/" in t or "\\" in t


@functools.lru_cache(maxsize=256)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _file_digest(path: str) -> str:
    check_regular_file(path, f"routing trace {path!r}",
                       why="a routing trace is memory-mapped and read more than once")
    try:
        st = os.stat(path)
        return _file_sha256(os.path.realpath(path), st.st_size, st.st_mtime_ns)
    except OSError as exc:
        raise ConfigError(f"routing trace {path!r}: cannot read ({exc.strerror or exc})"
                          ) from None


@functools.lru_cache(maxsize=256)
def _resolved_files(model: str, system: str, overrides: tuple, workload: str) -> dict:
    """The resolved content of the inputs that name files (presets: None, code covers them)."""
    out: dict[str, Any] = {}
    if _is_path(model, (".json",)):
        from sieve.model.moe import get_model

        out["model"] = get_model(model).to_dict()
    if system.strip().lower().endswith((".json", ".toml")):
        from sieve.hw.system import get_system

        out["system"] = get_system(system).to_dict()
    if workload.strip().lower().endswith((".json", ".toml")):
        from sieve.workload.profiles import get_profile

        out["workload"] = get_profile(workload).to_dict()
    return out


def run_id(point: Point | RunConfig) -> str:
    """The stable id of a point (24 hex digits; the module doc says what changes it)."""
    if isinstance(point, RunConfig):
        point = Point(point)
    c = point.config
    files = dict(_resolved_files(c.model, c.system, c.system_overrides, c.workload))
    if c.trace is not None:
        files["trace_sha256"] = _file_digest(c.trace)
    doc = {"format": RUN_ID_FORMAT, "run": c.to_dict(), "timeline": bool(point.timeline),
           "channels": bool(point.channels), "files": files}
    return hashlib.sha256(_canonical(doc).encode()).hexdigest()[:24]


# --------------------------------------------------------------------------------------------
# Checking values and points
# --------------------------------------------------------------------------------------------


def _check_value(where: str, name: str, v: Any) -> Any:
    """One field value, checked alone (its type, then RunConfig's own checks)."""
    typ, optional = RUN_FIELDS[name]
    if v is None:
        if optional:
            return None
        raise ConfigError(f"{where}: {name} cannot be empty (none)")
    if typ is dict:
        if not isinstance(v, Mapping) or not all(isinstance(k, str) for k in v):
            raise ConfigError(f"{where}: {name} must be a table of key = value, got {v!r}")
        for k, x in v.items():
            if isinstance(x, (Mapping, list, tuple)):
                raise ConfigError(f"{where}: {name}.{k} must be a number, text or true/false")
        v = tuple(sorted(v.items()))
    elif typ is bool:
        if not isinstance(v, bool):
            raise ConfigError(f"{where}: {name} must be true or false, got {v!r}")
    elif typ is int:
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(f"{where}: {name} must be an integer, got {v!r}")
    elif typ is float:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ConfigError(f"{where}: {name} must be a number, got {v!r}")
        v = float(v)
    elif typ is str:
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"{where}: {name} must be a non-empty text, got {v!r}")
    try:  # RunConfig's own checks of this one value (model/system are resolved later)
        RunConfig(**{"model": "-", "system": "-", name: v})
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    return v


@functools.lru_cache(maxsize=1024)
def _check_resources(model: str, system: str, overrides: tuple, workload: str,
                     parallel: str, colocated: bool, batch: int, n_prefill: int | None
                     ) -> None:
    from sieve.model.moe import get_model
    from sieve.workload.profiles import get_profile

    m = get_model(model)
    s = RunConfig(model=model, system=system, system_overrides=overrides).resolve_system()
    get_profile(workload)
    if parallel == "ep" and m.n_experts % s.n_gpus:
        raise ConfigError(f"run: EP needs the {m.n_experts} experts of {m.name} to split "
                          f"evenly over {s.n_gpus} GPUs (use parallel='tp' or another system)")
    if colocated:
        from sieve.workload.batch import colocated_batch

        colocated_batch(workload, batch, 0, n_prefill=n_prefill)


def check_point(point: Point) -> None:
    """Resolve what a point names (model, system, workload, trace) and check what can be
    checked before running it (EP divisibility, a colocated batch's prefill count)."""
    c = point.config
    _check_resources(c.model, c.system, c.system_overrides, c.workload, c.parallel,
                     c.colocated, int(c.batch), c.n_prefill)
    if c.trace is not None:
        from sieve.workload.trace import load_trace

        load_trace(c.trace, mmap=True)


# --------------------------------------------------------------------------------------------
# ExperimentConfig
# --------------------------------------------------------------------------------------------

_Pairs = tuple[tuple[str, Any], ...]


def _thaw_value(name: str, v: Any) -> Any:
    if name == "system_overrides" and isinstance(v, tuple):
        return dict(v)
    return v


@dataclass(frozen=True)
class RunBlock:
    """One entry of a list sweep: fields (over the base) and its own grid axes."""

    fields: _Pairs = ()
    grid: tuple[tuple[str, tuple], ...] = ()


@dataclass(frozen=True)
class ExperimentConfig:
    """A sweep (the module doc describes the file): frozen, hashable, JSON round trip through
    :meth:`to_dict` / :meth:`from_dict`; :meth:`points` expands it.

    Attributes:
        name: a label (recorded; not part of any run id).
        base: ``((field, value), ...)`` shared by every run.
        grid: ``((field, (values...)), ...)`` crossed with every run block.
        runs: the list-sweep entries (:class:`RunBlock`); none = one empty entry.
        timeline, channels: ``True`` (every point), ``False``, or a tuple of match tables
            ``((field, value), ...)``.
    """

    name: str = "sweep"
    base: _Pairs = ()
    grid: tuple[tuple[str, tuple], ...] = ()
    runs: tuple[RunBlock, ...] = ()
    timeline: bool | tuple[_Pairs, ...] = False
    channels: bool | tuple[_Pairs, ...] = False

    # ---- construction from a mapping (file, command line) -------------------------------
    @classmethod
    def from_dict(cls, d: Mapping[str, Any], source: str = "sweep") -> ExperimentConfig:
        """Parse and check a declaration (a sweep file's content, or :meth:`to_dict`'s).
        Every error names ``source`` and the field."""
        if not isinstance(d, Mapping):
            raise ConfigError(f"{source}: expected a table of sweep keys, got "
                              f"{type(d).__name__}")
        bad = [k for k in d if k not in _TOP_KEYS]
        if bad:
            raise ConfigError(f"{source}: unknown key {bad[0]!r} (valid: "
                              f"{', '.join(_TOP_KEYS[1:])})")
        fmt = d.get("format", EXPERIMENT_FORMAT)
        if fmt != EXPERIMENT_FORMAT:
            raise ConfigError(f"{source}: format must be {EXPERIMENT_FORMAT!r}, got {fmt!r}")
        name = d.get("name", "sweep")
        if not isinstance(name, str) or not name.strip():
            raise ConfigError(f"{source}: name must be a non-empty text, got {name!r}")
        base = _fields(source, "base", d.get("base", {}))
        grid = _grid(source, "grid", d.get("grid", {}))
        runs_in = d.get("runs", [])
        if not isinstance(runs_in, (list, tuple)):
            raise ConfigError(f"{source}: runs must be a list of tables ([[runs]]), got "
                              f"{type(runs_in).__name__}")
        runs = []
        for i, r in enumerate(runs_in):
            where = f"runs[{i}]"
            if not isinstance(r, Mapping):
                raise ConfigError(f"{source}: {where} must be a table of fields, got {r!r}")
            r = dict(r)
            rg = _grid(source, f"{where}.grid", r.pop("grid", {}))
            fields = _fields(source, where, r)
            both = sorted({k for k, _ in fields} & ({k for k, _ in rg} | {k for k, _ in grid}))
            if both:
                raise ConfigError(f"{source}: {where}.{both[0]} is also a grid axis (give a "
                                  "field either in the run or in a grid)")
            twice = sorted({k for k, _ in rg} & {k for k, _ in grid})
            if twice:
                raise ConfigError(f"{source}: {where}.grid.{twice[0]} is also an axis of the "
                                  "top-level grid")
            runs.append(RunBlock(fields, rg))
        rec = d.get("record", {})
        if not isinstance(rec, Mapping):
            raise ConfigError(f"{source}: record must be a table (timeline, channels), got "
                              f"{rec!r}")
        bad = [k for k in rec if k not in _RECORD_KEYS]
        if bad:
            raise ConfigError(f"{source}: record.{bad[0]}: unknown (valid: timeline, channels)")
        tl = _matchers(source, "record.timeline", rec.get("timeline", False))
        ch = _matchers(source, "record.channels", rec.get("channels", False))
        exp = cls(name=name.strip(), base=base, grid=grid, runs=tuple(runs), timeline=tl,
                  channels=ch)
        exp.points(source)  # every value checked, every point complete
        return exp

    def to_dict(self) -> dict[str, Any]:
        """The declaration as plain JSON data (``from_dict(to_dict())`` gives it back)."""

        def fields(pairs):
            return {k: _thaw_value(k, v) for k, v in pairs}

        def grid(g):
            return {k: [_thaw_value(k, x) for x in vs] for k, vs in g}

        def rec(r):
            return r if isinstance(r, bool) else [fields(m) for m in r]

        runs = []
        for b in self.runs:
            e = fields(b.fields)
            if b.grid:
                e["grid"] = grid(b.grid)
            runs.append(e)
        return {"format": EXPERIMENT_FORMAT, "name": self.name, "base": fields(self.base),
                "grid": grid(self.grid), "runs": runs,
                "record": {"timeline": rec(self.timeline), "channels": rec(self.channels)}}

    def with_changes(self, base: Mapping[str, Any] | None = None,
                     grid: Mapping[str, Sequence[Any]] | None = None,
                     source: str = "command line") -> ExperimentConfig:
        """A copy with base fields set and grid axes added or replaced (``sieve sweep --set``,
        ``--grid``), checked like a file."""
        d = self.to_dict()
        d["base"] = {**d["base"], **(base or {})}
        g = dict(d["grid"])
        for k, vs in (grid or {}).items():
            g[k] = list(vs)
        d["grid"] = g
        for r in d["runs"]:  # a command-line axis replaces the runs' own field of that name
            for k in grid or {}:
                r.pop(k, None)
                if k in r.get("grid", {}):
                    del r["grid"][k]
        return ExperimentConfig.from_dict(d, source)

    # ---- expansion ---------------------------------------------------------------------------
    def n_points(self) -> int:
        """How many points :meth:`points` would build (arithmetic: nothing is built)."""
        top = math.prod(len(vs) for _, vs in self.grid)
        return sum(top * math.prod(len(vs) for _, vs in b.grid)
                   for b in (self.runs or (RunBlock(),)))

    def points(self, source: str = "sweep") -> list[Point]:
        """Every point, in order (module doc). Raises a ConfigError naming the field of the
        first bad value or incomplete point."""
        n = self.n_points()
        if n > MAX_GRID_POINTS:
            raise ConfigError(f"{source}: {n} points exceed {MAX_GRID_POINTS} "
                              "(sieve.limits.MAX_GRID_POINTS; counted before any is built): "
                              "split the sweep or shorten its axes")
        pts = []
        seen: dict[str, int] = {}
        for bi, block in enumerate(self.runs or (RunBlock(),)):
            axes = list(self.grid) + list(block.grid)
            names = [k for k, _ in axes]
            for combo in itertools.product(*[vs for _, vs in axes]):
                kw = {**dict(self.base), **dict(block.fields), **dict(zip(names, combo))}
                where = (f"runs[{bi}]" if self.runs else "point") + (
                    " (" + ", ".join(f"{k}={v}" for k, v in zip(names, combo)) + ")"
                    if names else "")
                for req in ("model", "system"):
                    if req not in kw:
                        raise ConfigError(f"{source}: {where}: no {req} (set it in [base], a "
                                          f"run or the grid, or with --set {req}=NAME)")
                try:
                    cfg = RunConfig(**kw)
                except ConfigError as exc:
                    raise ConfigError(f"{source}: {where}: {exc}") from None
                p = Point(cfg, timeline=_matches(self.timeline, cfg),
                          channels=_matches(self.channels, cfg))
                key = _canonical(p.to_dict())
                if key in seen:
                    raise ConfigError(f"{source}: {where}: the same run as point {seen[key]} "
                                      "(every point of a sweep must differ)")
                seen[key] = len(pts)
                pts.append(p)
        return pts

    def check(self, source: str = "sweep") -> list[Point]:
        """:meth:`points`, with every model, system, workload and trace resolved and every
        point checked (:func:`check_point`); the first error names the point."""
        pts = self.points(source)
        for i, p in enumerate(pts):
            try:
                check_point(p)
            except SieveError as exc:
                raise type(exc)(f"{source}: point {i} ({p.describe()}): {exc}") from None
        return pts

    def experiment_id(self, source: str = "sweep") -> str:
        """SHA-256 (24 hex digits) of the ordered run ids of its points."""
        ids = [run_id(p) for p in self.points(source)]
        return hashlib.sha256(_canonical({"format": RUN_ID_FORMAT, "runs": ids}).encode()
                              ).hexdigest()[:24]

    @classmethod
    def from_points(cls, points: Sequence[Point], name: str = "points") -> ExperimentConfig:
        """A list sweep of exactly these points (each RunConfig field written out)."""
        runs, tl, ch = [], [], []
        for p in points:
            d = p.config.to_dict()
            runs.append(d)
            if p.timeline:
                tl.append(d)
            if p.channels:
                ch.append(d)
        return cls.from_dict({"name": name, "runs": runs,
                              "record": {"timeline": tl, "channels": ch}}, name)


def _fields(source: str, where: str, d: Any) -> _Pairs:
    if not isinstance(d, Mapping):
        raise ConfigError(f"{source}: {where} must be a table of run fields, got {d!r}")
    out = []
    for k, v in d.items():
        if k not in RUN_FIELDS:
            raise ConfigError(f"{source}: {where}.{k}: unknown field (valid: "
                              f"{', '.join(RUN_FIELDS)})")
        if isinstance(v, (list, tuple)):
            raise ConfigError(f"{source}: {where}.{k}: one value expected, got a list (put "
                              "lists of values in [grid])")
        out.append((k, _check_value(f"{source}: {where}.{k}", k, v)))
    return tuple(out)


def _grid(source: str, where: str, d: Any) -> tuple[tuple[str, tuple], ...]:
    if not isinstance(d, Mapping):
        raise ConfigError(f"{source}: {where} must be a table of field = [values], got {d!r}")
    out = []
    for k, vs in d.items():
        if k not in RUN_FIELDS:
            raise ConfigError(f"{source}: {where}.{k}: unknown field (valid: "
                              f"{', '.join(RUN_FIELDS)})")
        if not isinstance(vs, (list, tuple)):
            raise ConfigError(f"{source}: {where}.{k} must be a list of values, got {vs!r}")
        if not vs:
            raise ConfigError(f"{source}: {where}.{k}: empty list (give at least one value)")
        vals = tuple(_check_value(f"{source}: {where}.{k}[{i}]", k, v)
                     for i, v in enumerate(vs))
        if len(set(map(repr, vals))) != len(vals):
            raise ConfigError(f"{source}: {where}.{k}: a value is listed twice")
        out.append((k, vals))
    return tuple(out)


def _matchers(source: str, where: str, v: Any) -> bool | tuple[_Pairs, ...]:
    if isinstance(v, bool):
        return v
    if isinstance(v, Mapping):
        v = [v]
    if not isinstance(v, (list, tuple)):
        raise ConfigError(f"{source}: {where} must be true, false or a list of field tables, "
                          f"got {v!r}")
    return tuple(_fields(source, f"{where}[{i}]", m) for i, m in enumerate(v))


def _matches(rule: bool | tuple[_Pairs, ...], cfg: RunConfig) -> bool:
    if isinstance(rule, bool):
        return rule
    return any(all(getattr(cfg, k) == v for k, v in m) for m in rule)


def load_experiment(path: str | os.PathLike) -> ExperimentConfig:
    """Read a sweep file (``.toml`` or ``.json``); errors name the file and the field."""
    p = Path(path)
    src = str(p)
    suffix = p.suffix.lower()
    if suffix not in (".toml", ".json"):
        raise ConfigError(f"sweep file {src!r}: expected a .toml or .json file")
    data = parse_document(read_text(p, "sweep file"), p, "sweep file")
    if isinstance(data, Mapping) and "experiment" in data and "runs" in data and \
            isinstance(data.get("experiment"), Mapping):
        data = data["experiment"]  # a result folder's config.json: its sweep again
    return ExperimentConfig.from_dict(data, src)


# --------------------------------------------------------------------------------------------
# The experiments of `sieve run` and `sieve run --paper`
# --------------------------------------------------------------------------------------------


def main_experiment(model: str, system: str, methods: Sequence[str], batches: Sequence[int],
                    **run_kw) -> ExperimentConfig:
    """``sieve run``: every (method, batch) of one model and system; the timeline of Sieve at
    the middle batch and the PIM channels of Sieve and PIMoE at the largest batch recorded
    (the same points as :func:`sieve.experiments.points.sweep_points`)."""
    mid = sorted(batches)[len(batches) // 2]
    top = max(batches)
    base = {"model": model, "system": system, **_given(run_kw)}
    return ExperimentConfig.from_dict({
        "name": "sieve run", "base": base,
        "grid": {"method": list(methods), "batch": list(batches)},
        "record": {"timeline": [{"method": "sieve", "batch": mid}],
                   "channels": [{"method": m, "batch": top} for m in ("sieve", "pimoe")]},
    }, "sieve run")


def paper_experiment(methods: Sequence[str], **run_kw) -> ExperimentConfig:
    """``sieve run --paper``: seed Figures 9-11 in full (the same points as
    :func:`sieve.experiments.points.paper_points`)."""
    from sieve.system import setups
    from sieve.workload.batch import prefill_cap

    runs: list[dict[str, Any]] = [
        {"model": s.model, "system": s.system, "workload": w,
         "grid": {"batch": list(setups.FIG9_BATCHES)}}
        for s in setups.FIG9.values() for w in setups.FIG9_WORKLOADS]
    s = setups.FIG11
    runs.append({"model": s.model, "system": s.system, "colocated": True,
                 "grid": {"batch": list(setups.FIG11_BATCHES)}})
    runs += [{"model": s.model, "system": s.system, "colocated": True, "batch": b,
              "n_prefill": prefill_cap(b)} for b in setups.FIG11_BATCHES]
    mid = sorted(setups.FIG9_BATCHES)[len(setups.FIG9_BATCHES) // 2]
    return ExperimentConfig.from_dict({
        "name": "sieve run --paper", "base": _given(run_kw), "grid": {"method": list(methods)},
        "runs": runs,
        "record": {
            "timeline": [{"model": setups.MAIN.model, "system": setups.MAIN.system,
                          "method": "sieve", "batch": mid, "colocated": False,
                          "workload": setups.FIG9_WORKLOADS[0]}],
            "channels": [{"model": setups.FIG10.model, "system": setups.FIG10.system,
                          "method": m, "batch": setups.FIG10_BATCH, "colocated": False,
                          "workload": setups.FIG9_WORKLOADS[0]}
                         for m in ("sieve", "pimoe")]},
    }, "sieve run --paper")


def _given(kw: Mapping[str, Any]) -> dict[str, Any]:
    """Run fields given (None values of optional fields kept: they are choices too)."""
    out = {}
    for k, v in kw.items():
        if k not in RUN_FIELDS:
            raise ConfigError(f"run: unknown field {k!r} (valid: {', '.join(RUN_FIELDS)})")
        out[k] = v
    return out
