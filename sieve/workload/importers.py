"""Importers for real routing data: vLLM router logs and per-layer per-expert count files.

This module parses foreign formats into :class:`sieve.workload.trace.RoutingTrace` (token-level) or
:class:`sieve.workload.trace.CountTrace` (aggregate counts). It must not compute statistics or write
files. Every malformed input raises :class:`sieve.errors.TraceFormatError` naming the file, the
line (line-based formats) and the field. Format notes: docs/traces.md, "Importers".
"""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sieve.errors import ConfigError, TraceFormatError
from sieve.limits import MAX_DATA_FILE_BYTES, MAX_LINE_BYTES
from sieve.validate import check_int, parse_int, strict_json
from sieve.workload.trace import (
    _NPZ_ERRORS,
    DECODE,
    PREFILL,
    CountTrace,
    RoutingTrace,
    TraceMeta,
    _member,
)

__all__ = [
    "LayerTransitions",
    "read_allenai_counts",
    "read_allenai_crosslayer",
    "read_count_matrix",
    "read_fiddler_popularity",
    "read_vllm_router_log",
]


# ----------------------------------------------------------------------------------------------
# vLLM router logs (JSONL)
# ----------------------------------------------------------------------------------------------


def _fail(path: Path, line: int | None, field: str | None, msg: str) -> TraceFormatError:
    where = f"{path}:{line}" if line is not None else str(path)
    what = f" field {field!r}:" if field else ""
    return TraceFormatError(f"{where}:{what} {msg}")


def _int_list(rec: dict, key: str, path: Path, line: int, n: int | None) -> list[int]:
    v = rec.get(key)
    if v is None:
        raise _fail(path, line, key, "missing")
    if not isinstance(v, list) or not all(
        isinstance(x, int) and not isinstance(x, bool) for x in v
    ):
        raise _fail(path, line, key, f"expected a list of ints, got {v!r}"[:120])
    if n is not None and len(v) != n:
        raise _fail(path, line, key, f"expected {n} entries (top_k), got {len(v)}")
    return v


def _parse_log(path: Path, top_k: int | None) -> tuple[dict[int, list[list[dict]]], dict, int]:
    """Records of one JSONL file grouped per layer into forward passes."""
    layers: dict[int, list[list[dict]]] = {}
    prev_idx: dict[int, int] = {}
    meta: dict[str, Any] = {}
    try:
        fh = open(path, encoding="utf-8")  # noqa: SIM115 (closed by the with below)
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot open ({exc.strerror})") from None
    with fh:
        lineno = 0
        while True:
            try:
                text = fh.readline(MAX_LINE_BYTES + 1)  # never an unbounded "line"
            except UnicodeDecodeError as exc:
                raise _fail(path, lineno + 1, None, f"not UTF-8 text (byte {exc.start} of the "
                            f"line)") from None
            if not text:
                break
            lineno += 1
            if len(text) > MAX_LINE_BYTES:
                raise _fail(path, lineno, None, f"longer than {MAX_LINE_BYTES} characters "
                            "(sieve.limits.MAX_LINE_BYTES): not a JSONL router log")
            if not text.strip():
                continue
            try:
                rec = strict_json(text)
            except json.JSONDecodeError as exc:
                raise _fail(path, lineno, None, f"invalid JSON ({exc.msg})") from None
            except ValueError as exc:  # an over-long integer, NaN or Infinity
                raise _fail(path, lineno, None, f"invalid JSON ({exc})") from None
            except RecursionError:
                raise _fail(path, lineno, None, "nested too deeply") from None
            if not isinstance(rec, dict):
                raise _fail(path, lineno, None, "a record must be a JSON object")
            kind = rec.get("type", "route")
            if kind == "meta":
                meta = rec
                k = meta.get("top_k")
                if k is not None and (not isinstance(k, int) or isinstance(k, bool) or k < 1):
                    raise _fail(path, lineno, "top_k", f"expected an int >= 1, got {k!r}")
                top_k = top_k or k
                continue
            if kind != "route":
                raise _fail(path, lineno, "type", f"unknown record type {kind!r} (meta, route)")
            ids = _int_list(rec, "topk_ids", path, lineno, top_k)
            if not ids:
                raise _fail(path, lineno, "topk_ids", "empty (expected top_k expert ids)")
            top_k = top_k or len(ids)
            if len(set(ids)) != len(ids):
                raise _fail(path, lineno, "topk_ids", f"repeated expert id in {ids}")
            if min(ids) < 0:
                raise _fail(path, lineno, "topk_ids", f"negative expert id in {ids}")
            w = rec.get("topk_weights")
            if w is not None and (
                not isinstance(w, list)
                or len(w) != len(ids)
                or not all(isinstance(x, (int, float)) for x in w)
            ):
                raise _fail(path, lineno, "topk_weights", f"expected {len(ids)} numbers")
            layer, tok = rec.get("layer"), rec.get("token_idx")
            for key, val in (("layer", layer), ("token_idx", tok)):
                if not isinstance(val, int) or isinstance(val, bool) or val < 0:
                    raise _fail(path, lineno, key, f"expected an int >= 0, got {val!r}")
            passes = layers.setdefault(layer, [])
            if tok == 0:
                passes.append([])
            elif not passes or tok != prev_idx[layer] + 1:
                raise _fail(
                    path,
                    lineno,
                    "token_idx",
                    f"{tok} does not follow {prev_idx.get(layer)} (passes restart at 0)",
                )
            prev_idx[layer] = tok
            passes[-1].append({"ids": ids, "w": w, "req": rec.get("req_id"), "line": lineno})
    if not layers:
        raise _fail(path, None, "topk_ids", "no route records")
    return layers, meta, int(top_k)


def read_vllm_router_log(
    paths: str | Path | Sequence[str | Path],
    *,
    n_experts: int | None = None,
    warmup_passes: int | str = "auto",
    max_decode_batch: int | None = None,
    model: str | None = None,
) -> RoutingTrace:
    """Read vLLM router logs (JSONL) into a token-level :class:`RoutingTrace`.

    The format is that of the vLLM-MoE-Logger patch (docs/traces.md): an optional
    ``{"type": "meta", ...}`` line, then one ``{"type": "route", "layer", "token_idx",
    "topk_ids", "topk_weights", "req_id"}`` line per token row of each forward pass;
    ``token_idx`` restarts at 0 with every pass. Several files (e.g. one per logged layer, each
    a rerun of the same deterministic job) are aligned pass by pass and row by row.

    Args:
        paths: one file or several; together they must log the same passes for each layer.
        n_experts: routed experts per layer; None infers ``max id + 1`` (recorded in
            ``meta.extra["n_experts_inferred"]``).
        warmup_passes: leading passes to drop (profiling and warm-up runs). "auto" drops the
            leading passes in which every row has the same route (vLLM's dummy profiling
            inputs); warm-ups with random dummy tokens cannot be recognised and need an int.
        max_decode_batch: when request ids are absent, passes with more rows than this are
            labelled prefill, the rest decode. None = the most common row count after warm-up.
        model: model name for the metadata (default: the meta line's ``model_id``).

    Raises:
        TraceFormatError: malformed line (file:line, field) or passes that do not align.
    """
    paths = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    per_layer: dict[int, tuple[Path, list[list[dict]]]] = {}
    meta: dict[str, Any] = {}
    top_k = None
    for path in paths:
        layers, m, k = _parse_log(path, top_k)
        meta = meta or m
        if top_k is not None and k != top_k:
            raise _fail(path, None, "top_k", f"{k} differs from {top_k} in {paths[0]}")
        top_k = k
        for layer, passes in layers.items():
            if layer in per_layer:
                raise _fail(
                    path, None, "layer", f"layer {layer} also logged in {per_layer[layer][0]}"
                )
            per_layer[layer] = (path, passes)
    layer_ids = sorted(per_layer)
    if not layer_ids:
        raise _fail(paths[0], None, "type", "no route records in the file(s)")
    ref_path, ref = per_layer[layer_ids[0]]
    sizes = [len(p) for p in ref]
    for layer in layer_ids[1:]:
        path, passes = per_layer[layer]
        other = [len(p) for p in passes]
        if other != sizes:
            bad = next(
                (i for i, (a, b) in enumerate(zip(sizes, other)) if a != b),
                min(len(sizes), len(other)),
            )
            raise _fail(
                path,
                None,
                "token_idx",
                f"pass structure of layer {layer} differs from layer {layer_ids[0]} "
                f"({ref_path}) at pass {bad}",
            )
    if warmup_passes == "auto":
        n_skip = 0
        while n_skip < len(ref) and len({tuple(r["ids"]) for r in ref[n_skip]}) == 1:
            n_skip += 1
    elif isinstance(warmup_passes, int) and 0 <= warmup_passes < len(ref):
        n_skip = warmup_passes
    else:
        raise _fail(
            ref_path,
            None,
            "warmup_passes",
            f"expected 'auto' or an int in [0, {len(ref)}), got {warmup_passes!r}",
        )
    keep = range(n_skip, len(ref))
    n_tok = sum(sizes[i] for i in keep)
    L = len(layer_ids)
    ids = np.empty((n_tok, L, top_k), dtype=np.int64)
    has_w = all(r["w"] is not None for i in keep for r in ref[i])
    gw = np.empty((n_tok, L, top_k), dtype=np.float32) if has_w else None
    for j, layer in enumerate(layer_ids):
        path, passes = per_layer[layer]
        rows = [r for i in keep for r in passes[i]]
        ids[:, j] = [r["ids"] for r in rows]
        if gw is not None:
            if any(r["w"] is None for r in rows):
                raise _fail(path, None, "topk_weights", "present in some layers but not others")
            gw[:, j] = [r["w"] for r in rows]
        if n_experts is not None and ids[:, j].max(initial=-1) >= n_experts:
            r = next(r for r in rows if max(r["ids"]) >= n_experts)
            raise _fail(
                path, r["line"], "topk_ids", f"expert id {max(r['ids'])} >= n_experts {n_experts}"
            )
    offsets = np.concatenate([[0], np.cumsum([sizes[i] for i in keep])]).astype(np.int64)
    req_raw = [r["req"] for i in keep for r in ref[i]]
    known = len(set(req_raw)) > 1 and all(r is not None for r in req_raw)
    req, phase = _requests_and_phase(req_raw, offsets, known, max_decode_batch, sizes[n_skip:])
    inferred = n_experts is None
    E = int(ids.max()) + 1 if inferred else int(n_experts)
    extra = {
        "importer": "vllm_router_log",
        "files": [str(p) for p in paths],
        "warmup_passes_dropped": n_skip,
        "request_ids_known": known,
        "n_experts_inferred": inferred,
        "vllm_meta": meta,
    }
    return RoutingTrace(
        expert_ids=ids.astype(np.int16),
        step_offsets=offsets,
        request_ids=req,
        phase=phase,
        gate_weights=gw,
        meta=TraceMeta(
            model=model or str(meta.get("model_id", "")),
            n_experts=E,
            top_k=top_k,
            layer_ids=tuple(layer_ids),
            source="vLLM router log",
            extra=extra,
        ),
    )


def _requests_and_phase(
    req_raw: list, offsets: np.ndarray, known: bool, max_decode_batch: int | None, sizes: list[int]
) -> tuple[np.ndarray, np.ndarray]:
    n = int(offsets[-1])
    phase = np.full(n, DECODE, dtype=np.int8)
    if not known:
        # Without request identity: a pass larger than any decode batch holds prompt tokens.
        cap = max_decode_batch or int(np.bincount(sizes).argmax())
        for s, size in enumerate(sizes):
            if size > cap:
                phase[offsets[s] : offsets[s + 1]] = PREFILL
        return np.full(n, -1, dtype=np.int64), phase
    codes: dict[Any, int] = {}
    req = np.array([codes.setdefault(r, len(codes)) for r in req_raw], dtype=np.int64)
    seen: set[int] = set()
    for s in range(len(sizes)):
        sl = slice(int(offsets[s]), int(offsets[s + 1]))
        ids, cnt = np.unique(req[sl], return_counts=True)
        # vLLM convention: a request with several rows in a pass is (chunked) prefill; a single
        # row is a decode step unless it is the request's first appearance (a 1-token prompt).
        pre = {int(i) for i, c in zip(ids, cnt) if c > 1 or int(i) not in seen}
        phase[sl] = np.where(np.isin(req[sl], list(pre)), PREFILL, DECODE)
        seen.update(int(i) for i in ids)
    return req, phase


# ----------------------------------------------------------------------------------------------
# Count matrices (CSV / JSON / npz) and the allenai / Fiddler JSON files
# ----------------------------------------------------------------------------------------------


def _check_matrix(path: Path, rows: Any, field: str) -> np.ndarray:
    if not isinstance(rows, list) or not rows or not all(isinstance(r, list) for r in rows):
        raise _fail(path, None, field, "expected a non-empty list of rows (layers x experts)")
    width = len(rows[0])
    for i, r in enumerate(rows):
        if len(r) != width:
            raise _fail(path, None, f"{field}[{i}]", f"has {len(r)} entries, row 0 has {width}")
        for j, x in enumerate(r):
            if not isinstance(x, (int, float)) or isinstance(x, bool) or x < 0 or x != int(x):
                raise _fail(path, None, f"{field}[{i}][{j}]", f"expected a count >= 0, got {x!r}")
    return np.asarray(rows, dtype=np.int64)


def _read_capped(path: Path) -> bytes:
    """The whole file, read once and never past :data:`sieve.limits.MAX_DATA_FILE_BYTES`."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_DATA_FILE_BYTES + 1)
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot open ({exc.strerror})") from None
    if len(data) > MAX_DATA_FILE_BYTES:
        raise _fail(path, None, None, f"larger than {MAX_DATA_FILE_BYTES >> 20} MiB "
                    "(sieve.limits.MAX_DATA_FILE_BYTES): not a count file")
    return data


def _load_json(path: Path) -> Any:
    try:
        return strict_json(_read_capped(path).decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _fail(path, None, None, f"not UTF-8 text (byte {exc.start})") from None
    except json.JSONDecodeError as exc:
        raise _fail(path, exc.lineno, None, f"invalid JSON ({exc.msg})") from None
    except ValueError as exc:  # an over-long integer, NaN or Infinity
        raise _fail(path, None, None, f"invalid JSON ({exc})") from None
    except RecursionError:
        raise _fail(path, None, None, "JSON nested too deeply") from None


def _read_csv(path: Path) -> tuple[np.ndarray, list[int] | None]:
    import io

    try:
        text = _read_capped(path).decode("utf-8")
        rows = [r for r in csv.reader(io.StringIO(text, newline=""))
                if r and any(c.strip() for c in r)]
    except UnicodeDecodeError as exc:
        raise _fail(path, None, None, f"not UTF-8 text (byte {exc.start})") from None
    except csv.Error as exc:
        raise _fail(path, None, None, f"not a CSV file ({exc})") from None
    if not rows:
        raise _fail(path, None, "counts", "empty file")
    header = None
    if not rows[0][-1].strip().lstrip("-").isdigit():
        header, rows = rows[0], rows[1:]
    layer_col = header is not None and header[0].strip().lower() in ("layer", "layer_id")
    out, layers = [], []
    for i, r in enumerate(rows, 2 if header else 1):
        if layer_col:
            layers.append(r[0])
            r = r[1:]
        vals = []
        for j, c in enumerate(r):
            name = (header[j + layer_col] if header and j + layer_col < len(header)
                    else f"column {j + 1 + layer_col}")
            v = parse_int(c.strip())
            if v is None:
                raise _fail(path, i, name, f"expected an integer count, got {c!r}")
            if v < 0:
                raise _fail(path, i, name, f"count must be >= 0, got {v}")
            vals.append(v)
        if out and len(vals) != len(out[0]):
            raise _fail(path, i, None, f"{len(vals)} counts, expected {len(out[0])}")
        out.append(vals)
    if not out:
        raise _fail(path, None, "counts", "no data rows")
    lids = [parse_int(x.strip()) for x in layers] if layer_col else None
    if lids is not None and any(x is None for x in lids):
        raise _fail(path, None, header[0], "layer ids must be integers")
    return np.asarray(out, dtype=np.int64), lids


def _count_array(path: Path, value: Any, field: str) -> np.ndarray:
    """Nested lists of whole, non-negative, finite counts (ints or floats like 807392.0)."""
    try:
        arr = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _fail(path, None, field, "expected nested lists of counts of one shape") from None
    if arr.ndim not in (2, 3) or 0 in arr.shape:
        raise _fail(path, None, field, f"expected [layer][expert] (or [step][layer][expert]) "
                    f"counts, got shape {arr.shape}")
    bad = ~np.isfinite(arr) | (arr < 0) | (arr != np.round(arr)) | (arr >= 2.0**62)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        raise _fail(path, None, field + "".join(f"[{i}]" for i in idx),
                    f"expected a whole count >= 0, got {float(arr[idx])!r}")
    return arr.astype(np.int64)


def _sglang_counts(path: Path, d: dict) -> tuple[np.ndarray, list[int], list[int]]:
    """SGLang expert-distribution record: ``logical_count`` [layer][expert] or
    [step][layer][expert]; returns (counts of the kept rows, their layer ids, dropped rows)."""
    c = _count_array(path, d["logical_count"], "logical_count")
    if c.ndim == 3:  # SGLang's buffered dump: one matrix per recorded step; sum them
        c = c.sum(axis=0)
    zero = c.sum(axis=1) == 0
    if zero.all():
        raise _fail(path, None, "logical_count", "every layer is all zero (no routed tokens)")
    return c[~zero], np.flatnonzero(~zero).tolist(), np.flatnonzero(zero).tolist()


def read_count_matrix(
    path: str | Path, *, top_k: int, model: str = "", layer_ids: Sequence[int] | None = None
) -> CountTrace:
    """Read a per-layer per-expert count matrix (rows = layers, columns = experts).

    Accepted:

    * ``.csv``: optional header row; a first column named ``layer`` gives layer ids;
    * ``.json``: a list of rows; or ``{"counts": [...], "layers": [...]}``; or SGLang's
      expert-distribution record ``{"logical_count": ...}`` (the file ``--init-expert-location``
      reads and the EPLB statistics SGLang publishes): ``[layer][expert]`` over all decoder
      layers of the model, or ``[step][layer][expert]`` (SGLang's buffered dump; summed over
      steps). Counts may be written as floats (``807392.0``) but must be whole. All-zero rows
      are layers without routed experts (DeepSeek-V3's first three dense layers): they are
      dropped, the kept rows keep their row index as layer id, and the dropped ones are listed
      in ``meta.extra["dropped_zero_layers"]`` and in ``meta.source``;
    * ``.npz``: array ``counts``, optional ``layer_ids`` (never unpickled).

    PyTorch ``.pt`` dumps are pickles and are refused (convert them to the JSON form above).
    Counts are selections: a token counted at ``top_k`` experts adds ``top_k`` to its row.

    Raises:
        TraceFormatError: unreadable file or a malformed field (names the file and field).
    """
    path = Path(path)
    top_k = check_int("count matrix", "top_k", top_k, lo=1)
    lids = None
    extra: dict[str, Any] = {}
    source = f"count matrix {path.name}"
    suffix = path.suffix.lower()
    if suffix == ".csv":
        counts, lids = _read_csv(path)
    elif suffix == ".json":
        d = _load_json(path)
        if isinstance(d, dict) and "logical_count" in d:
            counts, lids, dropped = _sglang_counts(path, d)
            extra = {"format": "sglang logical_count", "dropped_zero_layers": dropped}
            source = f"SGLang expert distribution {path.name}" + (
                f" (all-zero layers {_ranges(dropped)} dropped: no routed experts)"
                if dropped else "")
        else:
            rows = d.get("counts") if isinstance(d, dict) else d
            counts = _check_matrix(path, rows, "counts")
            lids = d.get("layers") if isinstance(d, dict) else None
    elif suffix == ".npz":
        try:
            z = np.load(path, allow_pickle=False)
        except _NPZ_ERRORS as exc:
            raise TraceFormatError(f"{path}: cannot read as .npz ({exc or 'empty file'})"
                                   ) from None
        if not isinstance(z, np.lib.npyio.NpzFile):
            raise TraceFormatError(f"{path}: a single .npy array, not an .npz with 'counts'")
        with z:
            if "counts" not in z.files:
                raise _fail(path, None, "counts", "missing")
            counts = _member(path, z, "counts")
            lids = _member(path, z, "layer_ids").tolist() if "layer_ids" in z.files else None
        if counts.ndim != 2 or counts.dtype.kind not in "iu" or (counts < 0).any():
            raise _fail(path, None, "counts", "expected a 2-D array of non-negative integers")
    elif suffix in (".pt", ".pth", ".pkl", ".pickle"):
        raise _fail(path, None, None, f"{suffix} files are Python pickles, which sieve never "
                    "loads; save the counts as JSON ({\"logical_count\": [[...], ...]}), CSV "
                    "or .npz")
    else:
        raise _fail(path, None, None, f"unknown extension {suffix!r} (.csv, .json, .npz)")
    if layer_ids is not None:
        lids = list(layer_ids)
    elif lids is None:
        lids = list(range(len(counts)))
    elif not isinstance(lids, list):
        raise _fail(path, None, "layers", f"expected a list of layer ids, got {lids!r}")
    if len(lids) != len(counts):
        raise _fail(path, None, "layers", f"{len(lids)} layer ids for {len(counts)} rows")
    try:
        meta = TraceMeta(model=model, n_experts=counts.shape[1], top_k=top_k, layer_ids=lids,
                         source=source, extra=extra)
    except ConfigError as exc:
        raise TraceFormatError(f"{path}: {exc}") from None
    return CountTrace(counts=counts, meta=meta, n_tokens=int(counts[0].sum() // top_k))


def _ranges(ids: list[int]) -> str:
    """``[0, 1, 2, 5]`` -> ``"0-2, 5"``."""
    out, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        out.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ", ".join(out)


def _field(path: Path, d: Any, key: str, kind: type) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise _fail(path, None, key, "missing")
    if not isinstance(d[key], kind) or isinstance(d[key], bool):
        raise _fail(path, None, key, f"expected {kind.__name__}, got {type(d[key]).__name__}")
    return d[key]


def read_allenai_counts(path: str | Path) -> CountTrace:
    """allenai/OLMoE routing-analysis ``expert_counts[_top1]/<domain>.json`` (see PROVENANCE).

    Each row must sum to ``num_tokens * top_k_used``; ``top_k`` of the result is ``top_k_used``.
    """
    path = Path(path)
    d = _load_json(path)
    counts = _check_matrix(path, _field(path, d, "counts", list), "counts")
    layers = _field(path, d, "layers", list)
    k, n_tok = _field(path, d, "top_k_used", int), _field(path, d, "num_tokens", int)
    E = _field(path, d, "num_experts", int)
    if counts.shape != (len(layers), E):
        raise _fail(path, None, "counts", f"shape {counts.shape} != ({len(layers)}, {E})")
    bad = np.flatnonzero(counts.sum(axis=1) != n_tok * k)
    if bad.size:
        raise _fail(
            path,
            None,
            f"counts[{bad[0]}]",
            f"sums to {counts[bad[0]].sum()}, expected num_tokens*top_k = {n_tok * k}",
        )
    meta = TraceMeta(
        model=str(d.get("model", "")),
        n_experts=E,
        top_k=k,
        layer_ids=layers,
        source=f"allenai/OLMoE routing analysis: {d.get('domain', path.stem)}",
        extra={"domain": d.get("domain", path.stem)},
    )
    return CountTrace(counts=counts, meta=meta, n_tokens=n_tok)


def read_fiddler_popularity(path: str | Path, top_k: int = 2) -> CountTrace:
    """Fiddler ``expert_popularity_<subject>.json`` (Mixtral-8x7B, 32 layers x 8 experts).

    ``total_input_tokens`` in these files counts words, so ``n_tokens`` is taken as
    ``row sum / top_k`` (PROVENANCE.md); rows must all have the same sum.
    """
    path = Path(path)
    d = _load_json(path)
    counts = _check_matrix(path, _field(path, d, "expert_popularity", list), "expert_popularity")
    sums = counts.sum(axis=1)
    if np.any(sums != sums[0]) or sums[0] % top_k:
        raise _fail(
            path,
            None,
            "expert_popularity",
            f"row sums {sorted(set(sums.tolist()))[:4]} "
            f"are not one common multiple of top_k={top_k}",
        )
    meta = TraceMeta(
        model="mistralai/Mixtral-8x7B",
        n_experts=counts.shape[1],
        top_k=top_k,
        layer_ids=range(len(counts)),
        source=f"Fiddler popularity: {path.stem}",
    )
    return CountTrace(counts=counts, meta=meta, n_tokens=int(sums[0] // top_k))


@dataclass(frozen=True, eq=False)
class LayerTransitions:
    """Top-1 expert transition counts between layer pairs: ``matrices[p][i, j]`` = tokens with
    top-1 expert ``i`` at ``pairs[p][0]`` and ``j`` at ``pairs[p][1]``."""

    pairs: tuple[tuple[int, int], ...]
    matrices: np.ndarray  # (n_pairs, n_experts, n_experts) int64
    model: str
    source: str


def read_allenai_crosslayer(path: str | Path) -> LayerTransitions:
    """allenai ``expert_counts_crosslayer_top1/<domain>.json`` (top-1 transition matrices)."""
    path = Path(path)
    d = _load_json(path)
    if _field(path, d, "top_k_used", int) != 1:
        raise _fail(path, None, "top_k_used", "only top-1 (rank-aligned top-k is not a joint)")
    pairs = _field(path, d, "layer_pairs", list)
    mats = _field(path, d, "pair_counts", list)
    E = _field(path, d, "num_experts", int)
    if len(mats) != len(pairs):
        raise _fail(path, None, "pair_counts", f"{len(mats)} matrices for {len(pairs)} layer pairs")
    arr = np.stack([_check_matrix(path, m, f"pair_counts[{p}]") for p, m in enumerate(mats)])
    if arr.shape[1:] != (E, E):
        raise _fail(path, None, "pair_counts", f"matrices are {arr.shape[1:]}, expected ({E}, {E})")
    return LayerTransitions(
        pairs=tuple((int(a), int(b)) for a, b in pairs),
        matrices=arr,
        model=str(d.get("model", "")),
        source=f"allenai crosslayer {path.stem}",
    )
