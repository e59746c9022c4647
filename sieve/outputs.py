"""Writing result files without leaving partial output behind.

Every file sieve writes goes through :func:`atomic_write` (or :func:`write_text` /
:func:`write_json`): the content is written to a temporary file in the same directory and
renamed into place only when complete, so an error part-way (bad input found late, Ctrl-C)
leaves no half-written CSV, JSON or figure.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

__all__ = ["atomic_write", "write_json", "write_text"]


@contextlib.contextmanager
def atomic_write(path: str | Path, mode: str = "w") -> Iterator[Any]:
    """Open a temporary file next to ``path``; rename it to ``path`` on success only."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_text(path: str | Path, text: str) -> Path:
    with atomic_write(path) as fh:
        fh.write(text)
    return Path(path)


def write_json(path: str | Path, obj: Any) -> Path:
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=_jsonable) + "\n")


def _jsonable(obj: Any) -> Any:
    try:
        import numpy as np

        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj)
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover
        pass
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def write_files(out_dir: str | Path, files: dict[str, bytes]) -> list[Path]:
    """Write already-rendered files (name -> bytes) into ``out_dir``, each atomically.

    Callers render everything first (tables, figures) and write last, so an error while
    computing leaves no file behind.
    """
    out = Path(out_dir)
    written = []
    for name, data in files.items():
        with atomic_write(out / name, "wb") as fh:
            fh.write(data)
        written.append(out / name)
    return written
