"""Tidy result tables as CSV: one writer, one reader, typed columns.

A table is a list of dicts with the same keys (one row per run, per task, per PIM program and
pseudo-channel, ...). :func:`to_csv` writes the columns in a stated order (floats with 9
significant digits, so a table read back reproduces figures to the pixel); :func:`read_csv`
reads it back, turning every column that parses as a number into ints or floats. Column names
carry their unit (``_ns``, ``_ms``, ``tok_s_gpu``, ``_frac``).

This module owns the table format; it computes nothing.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path

from sieve.errors import TraceFormatError

__all__ = ["read_csv", "to_csv"]


def _cell(v) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, float):
        return f"{v:.9g}"
    if v is None:
        return ""
    return str(v)


def to_csv(rows: Sequence[dict], columns: Sequence[str] | None = None) -> str:
    """CSV text of ``rows`` (``columns``: their order; default the first row's keys)."""
    cols = list(columns) if columns is not None else (list(rows[0]) if rows else [])
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r.get(c)) for c in cols])
    return out.getvalue()


def _parse(s: str):
    if s == "":
        return None
    try:
        return int(s)
    except ValueError:
        pass
    try:
        return float(s)
    except ValueError:
        return s


def read_csv(path: str | Path) -> list[dict]:
    """Rows of a table written by :func:`to_csv` (numbers parsed, empty cells None)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceFormatError(f"result table {str(p)!r}: cannot read ({exc})") from None
    rows = list(csv.DictReader(io.StringIO(text)))
    return [{k: _parse(v) for k, v in r.items()} for r in rows]
