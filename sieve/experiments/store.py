"""The resumable store of finished runs: one small JSON file per run, keyed by its run id.

``<out>/runs/`` (a store folder of :mod:`sieve.outputs`: a ``store.json`` marker and nothing
but sieve's files) holds ``<run id>.json`` for every run that has finished::

    {"format": "sieve-run-record", "version": 1, "id": "<run id>",
     "sieve": {"version": "0.1.0", "code": "<code digest>"},
     "point": {"run": {...RunConfig fields...}, "timeline": false, "channels": false},
     "row": {...runs.csv row...}, "timeline": [...], "channels": [...],
     "system": {...resolved system...}, "seconds": 9.1, "cpu_seconds": 8.8,
     "worker": "host:pid"}

Each file is written atomically (a temporary file renamed into place,
:func:`sieve.outputs.write_bytes`) by the one process that collects results, so a killed sweep
leaves only whole files and one run never touches another's. A re-run reads the files back:
a file is reused only if it parses, names the same id and point, and was written by the same
code (:func:`sieve.experiments.config.code_digest`); anything else is simulated again and its
file replaced. JSON keeps every float exactly (shortest repr), so tables built from stored
runs equal tables built from runs simulated in this process.

This module reads and writes run files; it runs nothing.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

from sieve.experiments.config import code_digest, run_id
from sieve.experiments.points import Point, PointResult
from sieve.outputs import jsonable, open_store, write_bytes
from sieve.stages import stage

__all__ = ["RECORD_FORMAT", "STORE_NAME", "RunRecord", "RunStore"]

#: Format name of a run file, and the store's folder name inside a result folder.
RECORD_FORMAT = "sieve-run-record"
RECORD_VERSION = 1
STORE_NAME = "runs"


class RunRecord:
    """A finished run: its id, point, result rows, and how long it took where."""

    __slots__ = ("id", "point", "result", "seconds", "cpu_seconds", "worker", "code", "stored")

    def __init__(self, id: str, point: Point, result: PointResult, seconds: float = 0.0,
                 worker: str = "", code: str = "", stored: bool = False,
                 cpu_seconds: float = 0.0):
        self.id = id
        self.point = point
        self.result = result
        self.seconds = float(seconds)
        self.cpu_seconds = float(cpu_seconds)
        self.worker = worker
        self.code = code
        self.stored = stored  # read back from a store (not simulated by this sweep)

    def to_json(self) -> bytes:
        import sieve

        r = self.result
        doc = {"format": RECORD_FORMAT, "version": RECORD_VERSION, "id": self.id,
               "sieve": {"version": sieve.__version__, "code": self.code},
               "point": self.point.to_dict(), "row": r.row, "timeline": r.timeline,
               "channels": r.channels, "system": r.system, "seconds": self.seconds,
               "cpu_seconds": self.cpu_seconds, "worker": self.worker}
        return (json.dumps(doc, sort_keys=True, default=jsonable) + "\n"
                ).encode()

    @classmethod
    def from_json(cls, data: bytes | str) -> RunRecord:
        """Parse a run file; ValueError/KeyError/TypeError when it is not one."""
        d = json.loads(data)
        if not isinstance(d, dict) or d.get("format") != RECORD_FORMAT or d.get(
                "version") != RECORD_VERSION:
            raise ValueError("not a run record")
        point = Point.from_dict(d["point"])
        for k in ("row", "system"):
            if not isinstance(d[k], dict):
                raise ValueError(f"{k} is not a table")
        for k in ("timeline", "channels"):
            if not isinstance(d[k], list) or not all(isinstance(x, dict) for x in d[k]):
                raise ValueError(f"{k} is not a list of rows")
        def secs(k):
            v = d.get(k, 0.0)
            ok = isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            return float(v) if ok else 0.0

        return cls(str(d["id"]), point, PointResult(d["row"], d["timeline"], d["channels"],
                                                    d["system"]),
                   seconds=secs("seconds"), worker=str(d.get("worker", "")),
                   code=str(d["sieve"]["code"]), stored=True, cpu_seconds=secs("cpu_seconds"))


class RunStore:
    """The store folder ``<out>/runs`` (created on first use; see the module doc).

    Args:
        out_dir: the result folder (checked by the caller with
            :func:`sieve.outputs.check_out_dir`).
        flag: the option that named it, for messages.
    """

    _WHAT = "finished runs of sieve sweep / sieve run, one file per run id"

    def __init__(self, out_dir: str | os.PathLike, *, flag: str = "--out"):
        self._out, self._flag = out_dir, flag
        path = Path(os.path.realpath(os.fspath(out_dir))) / STORE_NAME
        self._open = path.exists() or path.is_symlink()
        # an existing store is checked now; a new one is made by the first run it keeps, so
        # a sweep refused before any run finished leaves nothing behind
        self.path = (open_store(out_dir, STORE_NAME, flag=flag, what=self._WHAT) if self._open
                     else path)

    def file(self, rid: str) -> Path:
        return self.path / f"{rid}.json"

    def get(self, point: Point, rid: str | None = None) -> RunRecord | None:
        """The stored record of ``point`` if it exists and is reusable (module doc)."""
        rid = rid or run_id(point)
        try:
            rec = RunRecord.from_json(self.file(rid).read_bytes())
        except (OSError, ValueError, KeyError, TypeError):
            return None
        if rec.id != rid or rec.code != code_digest() or rec.point != point:
            return None
        return rec

    def put(self, rec: RunRecord) -> Path:
        """Write a record (atomically; replaces an older file of the same id)."""
        with stage("io"):
            if not self._open:
                self.path = open_store(self._out, STORE_NAME, flag=self._flag, what=self._WHAT)
                self._open = True
            return write_bytes(self.file(rec.id), rec.to_json())

    def ids(self) -> list[str]:
        """The ids of the run files present (reusable or not)."""
        if not self.path.is_dir():
            return []
        return sorted(p.stem for p in self.path.glob("*.json")
                      if p.name not in ("store.json", "cache.json"))
