"""Routing traces: the token-level :class:`RoutingTrace`, the aggregate :class:`CountTrace`,
their on-disk format and per-step expert token counts.

This module owns the data structures and the ``.npz`` format (spec: docs/traces.md, "Format"). It
must not generate routes (:mod:`sieve.workload.router`), parse foreign files
(:mod:`sieve.workload.importers`) or compute summary statistics (:mod:`sieve.workload.stats`).

A :class:`RoutingTrace` is ragged over steps (forward passes): the tokens of all steps are stored
back to back, and ``step_offsets[s]:step_offsets[s + 1]`` selects the tokens of step ``s``.
Per token it holds, for every logged MoE layer, the ``top_k`` routed expert ids in rank order
(highest router score first, where the source says so), and optionally the gate weights, the
request id (``-1`` = unknown) and the phase (:data:`PREFILL` or :data:`DECODE`).
"""

from __future__ import annotations

import dataclasses
import json
import zipfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sieve import limits
from sieve.errors import ConfigError, TraceFormatError
from sieve.outputs import atomic_write
from sieve.validate import (
    check_int,
    check_mapping,
    check_regular_file,
    check_sequence,
    strict_json,
)

__all__ = [
    "COUNTS_FORMAT_NAME",
    "DECODE",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "MAX_EXPERTS",
    "PREFILL",
    "CountTrace",
    "RoutingTrace",
    "TraceMeta",
    "contiguous_placement",
    "gpu_counts",
    "gpu_loads",
    "iter_trace_chunks",
    "load_counts",
    "load_trace",
    "mean_requests",
    "trace_requests",
]

FORMAT_NAME = "sieve-routing-trace"
#: Version of the on-disk format written by :meth:`RoutingTrace.save`; readers refuse newer ones.
FORMAT_VERSION = 1
#: Format name of a saved :class:`CountTrace` (aggregate counts, same version scheme).
COUNTS_FORMAT_NAME = "sieve-expert-counts"
PREFILL = 0  # phase code of a prompt token
DECODE = 1  # phase code of a generated token
_ARRAYS = ("expert_ids", "step_offsets", "request_ids", "phase")
#: Expert ids are stored as int16, so a trace holds at most this many experts per layer (the
#: file format's bound; a model's is sieve.limits.MAX_EXPERTS, which must not exceed it).
MAX_EXPERTS = 1 << 15
assert limits.MAX_EXPERTS <= MAX_EXPERTS


@dataclass(frozen=True)
class TraceMeta:
    """Metadata of a trace. ``layer_ids`` are the model's layer indices of the logged MoE layers.

    ``extra`` holds JSON-serialisable details: router parameters, importer options, notes.
    """

    model: str
    n_experts: int
    top_k: int
    layer_ids: tuple[int, ...]
    source: str = ""
    seed: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        who = "trace metadata"
        for name in ("model", "source"):
            if not isinstance(getattr(self, name), str):
                raise ConfigError(f"{who}: {name} must be text, got {getattr(self, name)!r}")
        n_e = check_int(who, "n_experts", self.n_experts, lo=1, hi=MAX_EXPERTS)
        object.__setattr__(self, "n_experts", n_e)
        object.__setattr__(self, "top_k", check_int(who, "top_k", self.top_k, lo=1, hi=n_e))
        if isinstance(self.layer_ids, range):
            object.__setattr__(self, "layer_ids", tuple(self.layer_ids))
        lids = check_sequence(who, "layer_ids", self.layer_ids, min_len=1,
                              item=lambda n, x: check_int(who, n, x, lo=0))
        if len(set(lids)) != len(lids):
            raise ConfigError(f"{who}: layer_ids repeat a layer: {list(lids)[:8]}")
        object.__setattr__(self, "layer_ids", lids)
        if self.seed is not None:
            object.__setattr__(self, "seed", check_int(who, "seed", self.seed, lo=0))
        object.__setattr__(self, "extra", check_mapping(who, "extra", self.extra))

    def to_json(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["layer_ids"] = list(self.layer_ids)
        d["extra"] = dict(self.extra)
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> TraceMeta:
        """Rebuild from :meth:`to_json` output; unknown keys are ignored (newer writers)."""
        d = check_mapping("trace metadata", "meta", d)
        names = {f.name for f in dataclasses.fields(cls)}
        missing = sorted({"model", "n_experts", "top_k", "layer_ids"} - set(d))
        if missing:
            raise ConfigError(f"trace metadata: missing {', '.join(missing)}")
        return cls(**{k: v for k, v in d.items() if k in names})


@dataclass(frozen=True, eq=False)
class RoutingTrace:
    """Token-level routes, ragged over steps.

    Attributes:
        expert_ids: ``(n_tokens, n_layers, top_k)`` int16 expert ids in ``[0, n_experts)``,
            distinct within a token and layer.
        step_offsets: ``(n_steps + 1,)`` int64, non-decreasing, from 0 to ``n_tokens``.
        request_ids: ``(n_tokens,)`` int64 request of each token; ``-1`` = unknown.
        phase: ``(n_tokens,)`` int8, :data:`PREFILL` or :data:`DECODE`.
        gate_weights: ``(n_tokens, n_layers, top_k)`` float32 router weights, or None.
        meta: :class:`TraceMeta`.
    """

    expert_ids: np.ndarray
    step_offsets: np.ndarray
    request_ids: np.ndarray
    phase: np.ndarray
    meta: TraceMeta
    gate_weights: np.ndarray | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.meta, TraceMeta):
            raise ConfigError(f"RoutingTrace: meta must be a TraceMeta, got {self.meta!r}")
        for name in ("expert_ids", "step_offsets", "request_ids", "phase", "gate_weights"):
            v = getattr(self, name)
            if v is not None and not isinstance(v, np.ndarray):
                object.__setattr__(self, name, np.asarray(v))
        for name in ("step_offsets", "request_ids", "phase"):
            if getattr(self, name).dtype.kind not in "iu":
                raise ConfigError(f"RoutingTrace: {name} must be integers, got "
                                  f"{getattr(self, name).dtype}")
        self._validate(full=not isinstance(self.expert_ids, np.memmap))

    # -- validation ---------------------------------------------------------------------------
    def _validate(self, full: bool) -> None:
        m = self.meta
        ids, off = self.expert_ids, self.step_offsets
        if ids.ndim != 3 or ids.shape[1:] != (len(m.layer_ids), m.top_k):
            raise ConfigError(
                f"RoutingTrace: expert_ids shape {ids.shape} != (n_tokens, {len(m.layer_ids)} "
                f"layers, top_k {m.top_k})"
            )
        if not np.issubdtype(ids.dtype, np.integer):
            raise ConfigError(f"RoutingTrace: expert_ids must be integers, got {ids.dtype}")
        n = ids.shape[0]
        if off.ndim != 1 or len(off) < 1 or off[0] != 0 or off[-1] != n:
            raise ConfigError(f"RoutingTrace: step_offsets must run from 0 to n_tokens={n}")
        if len(off) < 2 or n == 0:  # a trace routes at least one token of one step
            raise ConfigError(f"RoutingTrace: no {'step' if len(off) < 2 else 'token'} (a "
                              "trace holds at least one step with a routed token)")
        if np.any(np.diff(off) < 0):
            raise ConfigError("RoutingTrace: step_offsets must be non-decreasing")
        for name in ("request_ids", "phase"):
            if getattr(self, name).shape != (n,):
                raise ConfigError(f"RoutingTrace: {name} must have shape ({n},)")
        gw = self.gate_weights
        if gw is not None and gw.shape != ids.shape:
            raise ConfigError(f"RoutingTrace: gate_weights shape {gw.shape} != {ids.shape}")
        if full and n:
            if ids.min() < 0 or ids.max() >= m.n_experts:
                raise ConfigError(
                    f"RoutingTrace: expert ids must lie in [0, {m.n_experts}), "
                    f"found {int(ids.min())}..{int(ids.max())}"
                )
            if m.top_k > 1 and np.any(np.diff(np.sort(ids, axis=2), axis=2) == 0):
                raise ConfigError("RoutingTrace: an expert id repeats within one token's top-k")
            if not np.isin(self.phase, (PREFILL, DECODE)).all():
                raise ConfigError("RoutingTrace: phase must be 0 (prefill) or 1 (decode)")

    # -- shape ---------------------------------------------------------------------------------
    @property
    def n_steps(self) -> int:
        return len(self.step_offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.expert_ids.shape[0])

    @property
    def n_layers(self) -> int:
        return len(self.meta.layer_ids)

    @property
    def n_experts(self) -> int:
        return int(self.meta.n_experts)

    @property
    def top_k(self) -> int:
        return int(self.meta.top_k)

    def tokens_per_step(self) -> np.ndarray:
        """``(n_steps,)`` number of tokens (rows) in each step."""
        return np.diff(np.asarray(self.step_offsets))

    # -- access --------------------------------------------------------------------------------
    def steps(self, start: int, stop: int) -> RoutingTrace:
        """Steps ``[start, stop)`` as a new in-memory trace (copies; works on memory maps)."""
        start = check_int("RoutingTrace", "start", start)
        stop = check_int("RoutingTrace", "stop", stop)
        if not 0 <= start <= stop <= self.n_steps:
            raise ConfigError(
                f"RoutingTrace: step range [{start}, {stop}) outside 0..{self.n_steps}"
            )
        a, b = int(self.step_offsets[start]), int(self.step_offsets[stop])
        gw = None if self.gate_weights is None else np.array(self.gate_weights[a:b])
        return RoutingTrace(
            expert_ids=np.array(self.expert_ids[a:b]),
            step_offsets=np.asarray(self.step_offsets[start : stop + 1], dtype=np.int64) - a,
            request_ids=np.array(self.request_ids[a:b]),
            phase=np.array(self.phase[a:b]),
            meta=self.meta,
            gate_weights=gw,
        )

    def step_slice(self, step: int) -> slice:
        """Token rows of ``step``."""
        step = check_int("RoutingTrace", "step", step)
        if not 0 <= step < self.n_steps:
            raise ConfigError(f"RoutingTrace: step {step} outside 0..{self.n_steps - 1}")
        return slice(int(self.step_offsets[step]), int(self.step_offsets[step + 1]))

    def counts(self, step: int, phase: int | None = None) -> np.ndarray:
        """Per-expert token counts of one step.

        Args:
            step: step index.
            phase: count only :data:`PREFILL` or :data:`DECODE` tokens; None = all.

        Returns:
            ``(n_layers, n_experts)`` int64: tokens routed to each expert (np.bincount).
        """
        sl = self.step_slice(step)
        ids = np.asarray(self.expert_ids[sl])
        if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= self.n_experts):
            # checked here for memory-mapped traces (load_trace(mmap=True) skips the check)
            raise TraceFormatError(f"RoutingTrace: step {step}: expert ids must lie in "
                                   f"[0, {self.n_experts}), found {int(ids.min())}.."
                                   f"{int(ids.max())}")
        if phase is not None:
            ids = ids[np.asarray(self.phase[sl]) == phase]
        return layer_counts(ids, self.n_experts)

    def all_counts(self, phase: int | None = None) -> np.ndarray:
        """``(n_steps, n_layers, n_experts)`` per-step counts (one step read at a time)."""
        out = np.zeros((self.n_steps, self.n_layers, self.n_experts), dtype=np.int64)
        for s in range(self.n_steps):
            out[s] = self.counts(s, phase)
        return out

    def to_counts(self, phase: int | None = None) -> CountTrace:
        """Aggregate over all steps into a :class:`CountTrace` (token-level detail is lost)."""
        c = self.all_counts(phase).sum(axis=0)
        n_tok = int(c[0].sum() // self.top_k) if self.n_layers else 0
        return CountTrace(counts=c, meta=self.meta, n_tokens=n_tok)

    # -- disk ----------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """Write the trace as an uncompressed ``.npz`` (format :data:`FORMAT_VERSION`),
        atomically (temporary file, then rename)."""
        path = Path(path)
        header = {"format": FORMAT_NAME, "version": FORMAT_VERSION, "meta": self.meta.to_json()}
        arrays = {
            "header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
            "expert_ids": np.ascontiguousarray(self.expert_ids, dtype=np.int16),
            "step_offsets": np.ascontiguousarray(self.step_offsets, dtype=np.int64),
            "request_ids": np.ascontiguousarray(self.request_ids, dtype=np.int64),
            "phase": np.ascontiguousarray(self.phase, dtype=np.int8),
        }
        if self.gate_weights is not None:
            arrays["gate_weights"] = np.ascontiguousarray(self.gate_weights, dtype=np.float32)
        with atomic_write(path, "wb") as fh:
            np.savez(fh, **arrays)
        return path

    @classmethod
    def load(cls, path: str | Path, mmap: bool = False) -> RoutingTrace:
        """Read a trace written by :meth:`save`; see :func:`load_trace`."""
        return load_trace(path, mmap=mmap)


def trace_requests(trace: RoutingTrace, step: int) -> int:
    """Requests in one step of a trace: distinct request ids, each row of an unknown request
    (id -1, a log without request ids) counted as a request of its own (as a run routes it)."""
    req = np.asarray(trace.request_ids[trace.step_slice(step)])
    known = req[req >= 0]
    return int(np.unique(known).size + np.count_nonzero(req < 0))


def mean_requests(trace: RoutingTrace) -> float:
    """Mean :func:`trace_requests` over the trace's steps (the batch a run on it reports)."""
    return float(np.mean([trace_requests(trace, s) for s in range(trace.n_steps)]))


def layer_counts(ids: np.ndarray, n_experts: int) -> np.ndarray:
    """``(n_layers, n_experts)`` counts of ``ids`` shaped ``(n_tokens, n_layers, top_k)``."""
    n_layers = ids.shape[1]
    flat = ids.astype(np.int64) + (np.arange(n_layers, dtype=np.int64) * n_experts)[:, None]
    return np.bincount(flat.ravel(), minlength=n_layers * n_experts).reshape(n_layers, n_experts)


def _read_header(path: Path, npz: Any) -> dict[str, Any]:
    if "header" not in npz.files:
        raise TraceFormatError(f"{path}: not a {FORMAT_NAME} file (field 'header' missing)")
    raw = _member(path, npz, "header")
    if raw.dtype != np.uint8 or raw.ndim != 1:
        raise TraceFormatError(f"{path}: field 'header' must be uint8 bytes, got {raw.dtype} "
                               f"{raw.shape}")
    try:
        header = strict_json(raw.tobytes().decode())
    except (ValueError, RecursionError) as exc:  # also over-long integers, NaN
        raise TraceFormatError(f"{path}: field 'header': invalid JSON ({exc})") from None
    if not isinstance(header, dict):
        raise TraceFormatError(f"{path}: field 'header' must be a JSON object")
    if header.get("format") != FORMAT_NAME:
        raise TraceFormatError(
            f"{path}: field 'header.format' is {header.get('format')!r}, expected {FORMAT_NAME!r}"
        )
    version = header.get("version")
    if not isinstance(version, int) or version < 1 or version > FORMAT_VERSION:
        raise TraceFormatError(
            f"{path}: field 'header.version' is {version!r}; this sieve reads versions 1.."
            f"{FORMAT_VERSION} (upgrade sieve for newer files)"
        )
    return header


#: What numpy and zipfile raise on a damaged .npz: truncated or CRC-corrupt members, a broken
#: zip directory, a garbled .npy header (parsed with ast/tokenize, which raise their own
#: errors), a header claiming an absurd shape (MemoryError). Only the reading of the file's own
#: bytes is wrapped in this, so any exception there means the file is damaged.
_NPZ_ERRORS = (Exception,)


def _member(path: Path, npz: Any, name: str) -> np.ndarray:
    """One member of an open .npz, read without ever unpickling; errors name the member."""
    try:
        return npz[name]
    except ValueError as exc:
        if "allow_pickle" in str(exc):
            raise TraceFormatError(f"{path}: field {name!r} holds Python objects (a pickle); "
                                   f"sieve never unpickles files") from None
        raise TraceFormatError(f"{path}: field {name!r} unreadable ({exc})") from None
    except _NPZ_ERRORS as exc:
        raise TraceFormatError(f"{path}: field {name!r} unreadable (damaged file: "
                               f"{exc})") from None


def _mmap_member(path: Path, zf: zipfile.ZipFile, name: str) -> np.ndarray:
    """Memory-map an uncompressed ``.npy`` member of a zip (np.load cannot mmap inside .npz)."""
    try:
        return _mmap_member_unchecked(path, zf, name)
    except TraceFormatError:
        raise
    except _NPZ_ERRORS as exc:
        raise TraceFormatError(f"{path}: field {name!r} unreadable (damaged file: "
                               f"{exc})") from None


def _mmap_member_unchecked(path: Path, zf: zipfile.ZipFile, name: str) -> np.ndarray:
    info = zf.getinfo(name + ".npy")
    if info.compress_type != zipfile.ZIP_STORED:
        raise TraceFormatError(f"{path}: field {name!r} is compressed; cannot memory-map")
    with open(path, "rb") as fh:
        fh.seek(info.header_offset)
        local = fh.read(30)  # zip local file header; name and extra lengths at bytes 26..29
        n_name = int.from_bytes(local[26:28], "little")
        n_extra = int.from_bytes(local[28:30], "little")
        fh.seek(info.header_offset + 30 + n_name + n_extra)
        version = np.lib.format.read_magic(fh)
        read = (
            np.lib.format.read_array_header_1_0
            if version == (1, 0)
            else np.lib.format.read_array_header_2_0
        )
        shape, fortran, dtype = read(fh)
        offset = fh.tell()
    if fortran:
        raise TraceFormatError(f"{path}: field {name!r} is Fortran-ordered")
    if dtype.hasobject:
        raise TraceFormatError(f"{path}: field {name!r} holds Python objects (a pickle); "
                               f"sieve never unpickles files")
    if offset + int(np.prod(shape)) * dtype.itemsize > info.header_offset + 30 + n_name + \
            n_extra + info.file_size:
        raise TraceFormatError(f"{path}: field {name!r} is shorter than its header says")
    if int(np.prod(shape)) == 0:
        return np.zeros(shape, dtype=dtype)
    return np.memmap(path, dtype=dtype, mode="r", offset=offset, shape=shape)


def load_trace(path: str | Path, mmap: bool = False) -> RoutingTrace:
    """Read a :class:`RoutingTrace` ``.npz``.

    Args:
        path: file written by :meth:`RoutingTrace.save`.
        mmap: memory-map the big arrays instead of reading them (for traces larger than
            memory); :meth:`RoutingTrace.steps` and :func:`iter_trace_chunks` then read only
            the steps asked for. Expert ids are then range-checked as steps are read
            (:meth:`RoutingTrace.counts`, :meth:`RoutingTrace.steps`), not at load.

    Raises:
        TraceFormatError: not a trace file, unsupported version, or a missing/bad field.
    """
    from sieve.workload.sniff import describe_kind, sniff

    path = Path(path)
    check_regular_file(path, f"routing trace {str(path)!r}", TraceFormatError,
                       "a routing trace is memory-mapped and read more than once")
    kind = sniff(path)
    if kind not in ("sieve-trace", "npz", "unknown"):  # a file for another reader
        raise TraceFormatError(describe_kind(path, "a sieve routing trace (.npz)"))
    try:
        npz = np.load(path, allow_pickle=False)
    except _NPZ_ERRORS as exc:
        raise TraceFormatError(f"{path}: cannot read as .npz ({exc or 'empty file'})") from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise TraceFormatError(f"{path}: a single .npy array, not a {FORMAT_NAME} .npz")
    with npz:
        header = _read_header(path, npz)
        for name in _ARRAYS:
            if name not in npz.files:
                raise TraceFormatError(f"{path}: field {name!r} missing")
        try:
            meta = TraceMeta.from_json(header.get("meta"))
        except ConfigError as exc:
            raise TraceFormatError(f"{path}: field 'header.meta' invalid ({exc})") from None
        names = (*_ARRAYS, "gate_weights")[: 4 + ("gate_weights" in npz.files)]
        if mmap:
            try:
                with zipfile.ZipFile(path) as zf:
                    arr = {n: _mmap_member(path, zf, n) for n in names}
            except _NPZ_ERRORS as exc:
                raise TraceFormatError(f"{path}: cannot read as .npz ({exc})") from None
        else:
            arr = {n: _member(path, npz, n) for n in names}
    for name, a in arr.items():
        if a.dtype.kind not in ("f" if name == "gate_weights" else "iu"):
            raise TraceFormatError(f"{path}: field {name!r} has dtype {a.dtype}, expected "
                                   + ("float32" if name == "gate_weights" else "integers"))
    arr["step_offsets"] = np.asarray(arr["step_offsets"], dtype=np.int64)
    try:
        return RoutingTrace(meta=meta, gate_weights=arr.pop("gate_weights", None), **arr)
    except ConfigError as exc:
        raise TraceFormatError(f"{path}: {exc}") from None


def iter_trace_chunks(path: str | Path, steps_per_chunk: int = 64) -> Iterator[RoutingTrace]:
    """Yield consecutive in-memory chunks of ``steps_per_chunk`` steps from a memory-mapped file."""
    if steps_per_chunk < 1:
        raise ConfigError(f"steps_per_chunk must be >= 1, got {steps_per_chunk}")
    trace = load_trace(path, mmap=True)
    for a in range(0, trace.n_steps, steps_per_chunk):
        yield trace.steps(a, min(a + steps_per_chunk, trace.n_steps))


@dataclass(frozen=True, eq=False)
class CountTrace:
    """Aggregate per-layer per-expert selection counts (no token, step or request detail).

    ``counts[l, e]`` = number of (token, top-k slot) selections of expert ``e`` at layer
    ``meta.layer_ids[l]``; with ``meta.top_k`` selections per token each row sums to
    ``n_tokens * top_k`` (top-1 files have ``top_k = 1``). Such data gives load skew only; it
    cannot give per-step coverage, token-count bins, temporal reuse or request structure.
    """

    counts: np.ndarray
    meta: TraceMeta
    n_tokens: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.meta, TraceMeta):
            raise ConfigError(f"CountTrace: meta must be a TraceMeta, got {self.meta!r}")
        c = np.asarray(self.counts)
        if c.dtype.kind not in "iu":
            raise ConfigError(f"CountTrace: counts must be integers, got {c.dtype}")
        object.__setattr__(self, "counts", c)
        if self.n_tokens is not None:
            object.__setattr__(self, "n_tokens",
                               check_int("CountTrace", "n_tokens", self.n_tokens, lo=0))
        if c.ndim != 2 or c.shape != (len(self.meta.layer_ids), self.meta.n_experts):
            raise ConfigError(
                f"CountTrace: counts shape {c.shape} != ({len(self.meta.layer_ids)} layers, "
                f"{self.meta.n_experts} experts)"
            )
        if np.any(c < 0):
            raise ConfigError("CountTrace: counts must be >= 0")

    def shares(self) -> np.ndarray:
        """``(n_layers, n_experts)`` share of each expert in its layer (rows sum to 1)."""
        tot = self.counts.sum(axis=1, keepdims=True).astype(float)
        return np.divide(self.counts, tot, out=np.zeros(self.counts.shape), where=tot > 0)

    def save(self, path: str | Path) -> Path:
        """Write as an uncompressed ``.npz`` (format :data:`COUNTS_FORMAT_NAME`), atomically:
        a JSON ``header`` (format, version, meta, n_tokens) and the int64 ``counts``."""
        path = Path(path)
        header = {"format": COUNTS_FORMAT_NAME, "version": FORMAT_VERSION,
                  "meta": self.meta.to_json(), "n_tokens": self.n_tokens}
        arrays = {"header": np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                  "counts": np.ascontiguousarray(self.counts, dtype=np.int64)}
        with atomic_write(path, "wb") as fh:
            np.savez(fh, **arrays)
        return path


def load_counts(path: str | Path) -> CountTrace:
    """Read a :class:`CountTrace` written by :meth:`CountTrace.save`.

    Raises:
        TraceFormatError: not a count trace (the message says what the file is), or a bad field.
    """
    from sieve.workload.sniff import describe_kind

    path = Path(path)
    try:
        npz = np.load(path, allow_pickle=False)
    except _NPZ_ERRORS:
        raise TraceFormatError(describe_kind(path, "a sieve count trace (.npz)")) from None
    if not isinstance(npz, np.lib.npyio.NpzFile):
        raise TraceFormatError(describe_kind(path, "a sieve count trace (.npz)"))
    with npz:
        if "header" not in npz.files or "counts" not in npz.files:
            raise TraceFormatError(describe_kind(path, "a sieve count trace (.npz)"))
        raw = _member(path, npz, "header")
        try:
            header = strict_json(raw.tobytes().decode())
        except (ValueError, RecursionError) as exc:  # also over-long integers, NaN
            raise TraceFormatError(f"{path}: field 'header': invalid JSON ({exc})") from None
        if not isinstance(header, dict) or header.get("format") != COUNTS_FORMAT_NAME:
            raise TraceFormatError(describe_kind(path, "a sieve count trace (.npz)"))
        counts = _member(path, npz, "counts")
    try:
        meta = TraceMeta.from_json(header.get("meta"))
        return CountTrace(counts=counts, meta=meta, n_tokens=header.get("n_tokens"))
    except ConfigError as exc:
        raise TraceFormatError(f"{path}: {exc}") from None


def contiguous_placement(n_experts: int, n_gpus: int) -> np.ndarray:
    """``(n_experts,)`` GPU of each expert when experts are split into equal contiguous blocks."""
    if n_gpus < 1 or n_experts % n_gpus:
        raise ConfigError(f"placement: {n_experts} experts do not split evenly over {n_gpus} GPUs")
    return np.repeat(np.arange(n_gpus), n_experts // n_gpus)


def gpu_counts(counts: np.ndarray, placement: np.ndarray, gpu: int) -> np.ndarray:
    """Counts of the experts that ``placement`` puts on ``gpu``: ``(n_layers, n_local)``."""
    placement = np.asarray(placement)
    if placement.shape != (counts.shape[-1],):
        raise ConfigError(f"placement must have shape ({counts.shape[-1]},), got {placement.shape}")
    return counts[..., placement == gpu]


def gpu_loads(counts: np.ndarray, placement: np.ndarray, n_gpus: int) -> np.ndarray:
    """Token-expert assignments per GPU: ``counts (..., n_experts)`` -> ``(..., n_gpus)``."""
    placement = np.asarray(placement)
    onehot = np.zeros((counts.shape[-1], n_gpus), dtype=np.int64)
    onehot[np.arange(counts.shape[-1]), placement] = 1
    return counts @ onehot
