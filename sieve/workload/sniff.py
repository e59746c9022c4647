"""What kind of routing file a path holds, from its first bytes (so a file given to the wrong
reader can be named for what it is, and ``sieve trace info`` can describe any of them).

Kinds (:data:`KINDS`): a sieve routing trace (``.npz``, token level), a sieve count trace
(``.npz``, aggregate counts), a vLLM router log (JSONL), a JSON count matrix (a list of rows or
``{"counts": ...}``), an SGLang expert-distribution record (``{"logical_count": ...}``), an
OLMoE routing-analysis count file, a Fiddler expert-popularity file, a CSV count matrix, some
other ``.npz``, or unknown. Only the first :data:`SNIFF_BYTES` bytes are read, once.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

__all__ = ["IMPORT_HINT", "KINDS", "SNIFF_BYTES", "describe_kind", "sniff"]

#: Bytes read to tell the kind (JSON files are parsed from this prefix when they fit).
SNIFF_BYTES = 1 << 16
KINDS = {
    "sieve-trace": "a sieve routing trace (.npz, token level)",
    "sieve-counts": "a sieve count trace (.npz, per-layer per-expert counts)",
    "vllm-log": "a vLLM router log (JSONL, one line per routed token row)",
    "count-json": "a JSON count matrix (per-layer per-expert counts)",
    "sglang-json": "an SGLang expert-distribution record (JSON, logical_count)",
    "allenai-json": "an OLMoE routing-analysis count file (JSON)",
    "fiddler-json": "a Fiddler expert-popularity file (JSON)",
    "count-csv": "a CSV count matrix (rows = layers, columns = experts)",
    "npz": "a .npz archive that is not a sieve trace",
    "unknown": "not a routing file sieve knows",
}
#: How each importable kind becomes a sieve trace (``sieve trace import``).
IMPORT_HINT = {
    "vllm-log": "sieve trace import vllm FILE --out trace.npz",
    "count-json": "sieve trace import counts FILE --top-k K --out counts.npz",
    "sglang-json": "sieve trace import counts FILE --top-k K --out counts.npz",
    "count-csv": "sieve trace import counts FILE --top-k K --out counts.npz",
    "allenai-json": "sieve trace import allenai FILE --out counts.npz",
    "fiddler-json": "sieve trace import fiddler FILE --out counts.npz",
}


def sniff(path: str | Path) -> str:
    """The kind of file at ``path`` (a key of :data:`KINDS`); never raises for unreadable or
    odd files (they are "unknown")."""
    p = Path(path)
    try:
        with open(p, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return "unknown"
    if head.startswith(b"PK"):
        return _sniff_npz(p)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith("{"):
        first = text.split("\n", 1)[0]
        try:
            rec = json.loads(first)
        except (ValueError, RecursionError):  # not JSON, or an over-long integer literal
            rec = None
        if isinstance(rec, dict) and rec.get("type") in ("route", "meta"):
            return "vllm-log"
        if '"logical_count"' in text:
            return "sglang-json"
        if '"expert_popularity"' in text:
            return "fiddler-json"
        if '"top_k_used"' in text and '"counts"' in text:
            return "allenai-json"
        if re.search(r'"counts"\s*:', text):
            return "count-json"
        return "unknown"
    if text.startswith("["):
        return "count-json"
    lines = [x for x in text.splitlines()[:3] if x.strip()]
    if lines and all(re.fullmatch(r"[\w.\- ]+(,[\w.\- ]+)+", x.strip()) for x in lines):
        return "count-csv"
    return "unknown"


def _sniff_npz(p: Path) -> str:
    import zipfile
    import zlib

    try:
        with zipfile.ZipFile(p) as zf:
            names = set(zf.namelist())
            if "header.npy" not in names:
                return "npz"
            raw = zf.read("header.npy")
    except (OSError, EOFError, zlib.error, zipfile.BadZipFile, KeyError, RuntimeError,
            ValueError):  # EOFError, zlib.error: a member's compressed data cut or damaged
        return "unknown"
    if b"sieve-expert-counts" in raw:
        return "sieve-counts"
    if b"sieve-routing-trace" in raw:
        return "sieve-trace"
    return "npz"


def describe_kind(path: str | Path, expected: str) -> str:
    """A sentence for an error when ``path`` is not ``expected``: what it is and, if it can
    be imported, the command that does it."""
    kind = sniff(path)
    what = KINDS[kind]
    hint = IMPORT_HINT.get(kind)
    out = f"{path} is {what}, not {expected}"
    if kind == "sieve-counts":
        out += " (aggregate counts cannot route steps: `sieve trace info` summarises them)"
    elif hint:
        out += f" (import it: `{hint}`)"
    return out
