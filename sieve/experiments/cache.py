"""Shared work: what one worker process reuses across its runs, and the cache file that carries
part of it from one sweep to the next.

In a worker process (and in-process runs):

* **GEMV layout choices** (:func:`sieve.pim.layout.gemv_layout`, ``col_groups="auto"``: the
  engine simulates every candidate split of a weight matrix over the pseudo-channels once per
  shape and spec; module-level memo) are computed once per process;
* **step inputs** (a synthetic step's batch and routing, which depend on the model, workload,
  batch, colocated flag, prefill count, seed and step, not on the method or system:
  :func:`sieve.system.run.step_input_key`) are kept in a bounded LRU memo
  (:class:`StepInputs`), so the methods of one batch route it once when they run in the same
  process; the executors send runs that share inputs to the process that has them;
* each spec's memo key is built once (:func:`sieve.pim.layout.spec_key`).

**The cache file** (``--cache FILE``; default ``<out>/runs/cache.json``, inside the run store)
holds the GEMV layout choices as JSON (never pickle)::

    {"format": "sieve-cache", "version": 1,
     "sieve": {"version": "0.1.0", "code": "<code digest>"},
     "specs": {"<sha256 of a spec key>": "<spec key: the spec's values as JSON>"},
     "gemv_col_groups": [["<spec sha256>", out_rows, in_cols, n_pcs, weight_bytes,
                          out_bytes, reduce_ns_per_byte, fast, col_groups], ...]}

It is loaded into every worker before its first run and written (atomically) at the end of a
sweep with what the workers added. Entries are used only by the same code (``sieve.code``
equal to :func:`sieve.experiments.config.code_digest`: the choice comes from the engine, so
another version's entry could differ) and only for the spec they name (the key holds every
value of the spec). A cache of other code is ignored (and replaced at the end); a file that is
not a sieve cache is refused before anything runs, so it is never overwritten. Step inputs are
not saved: they are large (a colocated batch routes every prompt token) and cheap to redraw
relative to the runs that use them.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections import OrderedDict
from pathlib import Path
from typing import Any

from sieve.errors import ConfigError
from sieve.experiments.config import code_digest
from sieve.limits import MAX_DATA_FILE_BYTES
from sieve.validate import strict_json

__all__ = ["CACHE_FORMAT", "StepInputs", "WorkerCache", "export_entries", "import_entries",
           "read_cache", "write_cache"]

CACHE_FORMAT = "sieve-cache"
CACHE_VERSION = 1


class StepInputs(OrderedDict):
    """An LRU memo of step inputs (``simulate_run(inputs=...)``), bounded by the bytes of their
    routing arrays (default 256 MiB per process)."""

    def __init__(self, max_bytes: int = 256 << 20):
        super().__init__()
        self.max_bytes = int(max_bytes)
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    @staticmethod
    def _size(value) -> int:
        sb = value[0]
        return int(sb.expert_ids.nbytes + sb.context.nbytes * 3)

    def get(self, key, default=None):
        if key in self:
            self.move_to_end(key)
            self.hits += 1
            return super().__getitem__(key)
        self.misses += 1
        return default

    def __setitem__(self, key, value):
        if key in self:
            self.bytes -= self._size(super().__getitem__(key))
        super().__setitem__(key, value)
        self.move_to_end(key)
        self.bytes += self._size(value)
        while self.bytes > self.max_bytes and len(self) > 1:
            _, old = self.popitem(last=False)
            self.bytes -= self._size(old)


def export_entries() -> list[list]:
    """This process's GEMV layout choices in the cache file's form (with the spec keys)."""
    from sieve.pim.layout import export_choices

    return [[e[0], *e[1:]] for e in export_choices()]


def _check_entry(e: Any) -> tuple | None:
    """A layout-choice entry ``[spec_key, out_rows, in_cols, n_pcs, wb, out_bytes,
    ns_per_byte, fast, col_groups]`` with exact types, or None."""
    if not isinstance(e, (list, tuple)) or len(e) != 9:
        return None
    key, rows, cols, pcs, wb, ob, nspb, fast, cg = e
    ints = (rows, cols, pcs, wb, ob, cg)
    if not isinstance(key, str) or not all(isinstance(x, int) and not isinstance(x, bool)
                                           and x >= 1 for x in ints):
        return None
    if isinstance(nspb, bool) or not isinstance(nspb, (int, float)) or not math.isfinite(
            nspb) or nspb < 0 or not isinstance(fast, bool) or pcs % cg:
        return None
    return (key, rows, cols, pcs, wb, ob, float(nspb), fast, cg)


def import_entries(entries: list) -> int:
    """Add checked layout-choice entries to this process's memo; returns how many were new."""
    from sieve.pim.layout import import_choices

    good = [t for t in (_check_entry(e) for e in entries) if t is not None]
    return import_choices(good)


def read_cache(path: str | os.PathLike, *, flag: str = "--cache") -> tuple[list, str]:
    """The layout-choice entries of a cache file usable by this code, and a note.

    A missing file gives ``([], "")``; a sieve cache of other code or with damaged entries
    gives ``([], note)``.

    Raises:
        ConfigError: the path exists and is not a sieve cache file (so it is never
            overwritten), or cannot be read.
    """
    p = Path(path)
    if not p.exists():
        return [], ""
    if p.is_dir():
        raise ConfigError(f"{flag} {str(p)!r}: is a folder, expected a cache file")
    try:
        with open(p, "rb") as fh:  # never past the bound (a device or a wrong file)
            raw = fh.read(MAX_DATA_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{flag} {str(p)!r}: cannot read ({exc.strerror or exc})") from None
    try:
        data = None if len(raw) > MAX_DATA_FILE_BYTES else strict_json(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # not JSON (UnicodeDecodeError is a ValueError)
        data = None
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
        raise ConfigError(f"{flag} {str(p)!r}: not a sieve cache file (give a new file name, "
                          "or 'none' for no cache)")
    sv = data.get("sieve")
    if data.get("version") != CACHE_VERSION or not isinstance(sv, dict) or sv.get(
            "code") != code_digest():
        return [], (f"cache {str(p)!r} was written by other sieve code "
                    f"({sv.get('version') if isinstance(sv, dict) else '?'}); not used, "
                    "replaced at the end")
    specs = data.get("specs")
    rows = data.get("gemv_col_groups")
    if not isinstance(specs, dict) or not isinstance(rows, list):
        return [], f"cache {str(p)!r}: damaged (not used, replaced at the end)"
    out = []
    for r in rows:
        if not isinstance(r, list) or not r or not isinstance(r[0], str) or not isinstance(
                specs.get(r[0]), str):
            return [], f"cache {str(p)!r}: damaged entry (not used, replaced at the end)"
        e = _check_entry([specs[r[0]], *r[1:]])
        if e is None or hashlib.sha256(e[0].encode()).hexdigest() != r[0]:
            return [], f"cache {str(p)!r}: damaged entry (not used, replaced at the end)"
        out.append(list(e))
    return out, ""


def write_cache(path: str | os.PathLike, entries: list) -> Path:
    """Write the cache file (atomically) with these layout-choice entries (sorted, no
    duplicates)."""
    import sieve
    from sieve.outputs import write_bytes

    specs: dict[str, str] = {}
    rows = set()
    for e in entries:
        t = _check_entry(e)
        if t is None:
            continue
        d = hashlib.sha256(t[0].encode()).hexdigest()
        specs[d] = t[0]
        rows.add((d, *t[1:]))
    doc = {"format": CACHE_FORMAT, "version": CACHE_VERSION,
           "sieve": {"version": sieve.__version__, "code": code_digest()},
           "specs": dict(sorted(specs.items())),
           "gemv_col_groups": [list(r) for r in sorted(rows)]}
    return write_bytes(path, (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode())


class WorkerCache:
    """What a worker process keeps across runs: the step-input memo, and the layout-choice
    entries already reported to the collecting process (so each run reports only new ones)."""

    def __init__(self, entries: list | None = None, max_step_bytes: int = 256 << 20):
        self.inputs = StepInputs(max_step_bytes)
        if entries:
            import_entries(entries)
        self._reported = {tuple(e) for e in export_entries()}

    def new_entries(self) -> list[list]:
        """Layout choices learned since the last call."""
        out = []
        for e in export_entries():
            t = tuple(e)
            if t not in self._reported:
                self._reported.add(t)
                out.append(e)
        return out
