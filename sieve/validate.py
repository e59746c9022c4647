"""Input validation shared by every layer: one place that decides what an integer, a number, a
boolean, a name, a list, a text file or a memory budget is, and words the error.

Every check takes ``what`` (the component, e.g. ``"DRAM spec 'hbm3-6400'"`` or ``"--batch"``)
and ``name`` (the field) and raises :class:`sieve.errors.ConfigError` with one line naming both,
the value given and the valid range or choices. The rules:

* integers: Python ``int`` or a numpy integer, never ``bool``, never a float (``1.7`` is refused,
  not truncated; so is ``64.0``), never a string;
* numbers: any real number (int, float, numpy scalar), never ``bool`` or a string, finite unless
  asked otherwise;
* booleans: ``True``/``False`` (or numpy ``bool_``) only: the string ``"no"`` is not false;
* names: non-empty strings; sequences: lists/tuples (or arrays), never a string or a mapping
  (a string would otherwise be iterated character by character);
* text read from the command line or a file (:func:`parse_int`) uses ASCII digits only: no
  ``1_000``, no ``0x_1``, no non-ASCII digits, no ``+``;
* memory: :func:`check_memory` refuses a plan whose estimated size exceeds the memory the machine
  can give (:func:`memory_limit_bytes`) *before* anything is allocated.

* files: :func:`read_text` reads at most :data:`sieve.limits.MAX_TEXT_FILE_BYTES` (a FIFO or
  device once, never whole); :func:`parse_document` turns JSON or TOML into data with every
  failure one line: invalid syntax, nesting too deep, an integer literal longer than
  :data:`sieve.limits.MAX_INT_DIGITS` digits, a non-finite number (``NaN``, ``Infinity``,
  ``1e999``, TOML ``inf``/``nan``), each named by its place in the file.

This module must not import any other sieve module except :mod:`sieve.errors` and
:mod:`sieve.limits`.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from sieve.errors import ConfigError, choices

__all__ = [
    "MEMORY_LIMIT_ENV",
    "parse_document",
    "check_bool",
    "check_int",
    "check_int_array",
    "check_mapping",
    "check_memory",
    "check_name",
    "check_number",
    "check_sequence",
    "format_bytes",
    "memory_limit_bytes",
    "override_fields",
    "parse_int",
    "read_text",
]

#: Environment variable that caps the memory sieve plans to use (bytes, or with a K/M/G/T
#: binary suffix, e.g. ``SIEVE_MEMORY_LIMIT=8G``); default: what the machine has available.
MEMORY_LIMIT_ENV = "SIEVE_MEMORY_LIMIT"

_DEC = re.compile(r"-?[0-9]+\Z")
_HEX = re.compile(r"0[xX][0-9a-fA-F]+\Z")


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool) or type(v).__name__ == "bool_"


def _range_text(lo, hi) -> str:
    if lo is not None and hi is not None:
        return f"in [{lo}, {hi}]"
    if lo is not None:
        return f">= {lo}"
    if hi is not None:
        return f"<= {hi}"
    return ""


def check_int(what: str, name: str, v: Any, *, lo: int | None = None,
              hi: int | None = None) -> int:
    """``int(v)`` if ``v`` is an integer (Python or numpy, not bool) in ``[lo, hi]``.

    Raises:
        ConfigError: not an integer (floats, strings and bools are refused, never truncated or
            parsed) or out of range; the message names ``what``, ``name`` and the range.
    """
    rng = _range_text(lo, hi)
    if _is_bool(v) or not isinstance(v, numbers.Integral):
        raise ConfigError(f"{what}: {name} must be an integer{' ' + rng if rng else ''}, "
                          f"got {v!r}")
    x = int(v)
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        raise ConfigError(f"{what}: {name} must be {rng}, got {x}")
    return x


def check_number(what: str, name: str, v: Any, *, lo: float | None = 0.0,
                 hi: float | None = None, finite: bool = True) -> float:
    """``float(v)`` if ``v`` is a real number (not bool, not a string) in ``[lo, hi]``.

    The default (``lo=0``, finite) is what sizes and times need: a finite number >= 0.

    Raises:
        ConfigError: not a real number, NaN, infinite (when ``finite``) or out of range.
    """
    if _is_bool(v) or not isinstance(v, numbers.Real):
        raise ConfigError(f"{what}: {name} must be a number, got {v!r}")
    try:
        x = float(v)
    except OverflowError:  # an integer beyond the float range
        raise ConfigError(f"{what}: {name} must be a finite number, got an integer of "
                          f"{int(v).bit_length()} bits") from None
    rng = _range_text(None if lo is None else f"{lo:g}", None if hi is None else f"{hi:g}")
    cond = " and ".join(c for c in ("finite" if finite else "", rng) if c)
    if (math.isnan(x) or (finite and math.isinf(x)) or (lo is not None and x < lo)
            or (hi is not None and x > hi)):
        raise ConfigError(f"{what}: {name} must be {cond or 'a number'}, got {v!r}")
    return x


def check_bool(what: str, name: str, v: Any) -> bool:
    """``v`` if it is ``True`` or ``False`` (numpy bools too); strings and numbers are refused."""
    if not _is_bool(v):
        raise ConfigError(f"{what}: {name} must be true or false, got {v!r}")
    return bool(v)


def check_name(what: str, name: str, v: Any, valid: Iterable[str] | None = None) -> str:
    """``v`` if it is a non-empty string (and one of ``valid`` when given, case-sensitive)."""
    if not isinstance(v, str) or not v.strip():
        extra = f" (one of: {choices(valid)})" if valid is not None else ""
        raise ConfigError(f"{what}: {name} must be a non-empty name{extra}, got {v!r}")
    if valid is not None:
        valid = list(valid)
        if v not in valid:
            raise ConfigError(f"{what}: unknown {name} {v!r} (known: {choices(valid)})")
    return v


def check_sequence(what: str, name: str, v: Any, *, item: Callable[[str, Any], Any] | None = None,
                   min_len: int = 0) -> tuple:
    """``tuple(v)`` for a list, tuple or 1-D array; a string or a mapping is refused.

    Args:
        item: optional ``item(label, x) -> x`` applied to each element (``label`` is
            ``"name[i]"``), e.g. ``lambda n, x: check_int(what, n, x, lo=1)``.
        min_len: the least number of elements.
    """
    if isinstance(v, (str, bytes, Mapping)) or not isinstance(v, Iterable):
        raise ConfigError(f"{what}: {name} must be a list, got {v!r}")
    out = tuple(v)
    if len(out) < min_len:
        raise ConfigError(f"{what}: {name} needs at least {min_len} element(s), got {len(out)}")
    if item is not None:
        out = tuple(item(f"{name}[{i}]", x) for i, x in enumerate(out))
    return out


def check_mapping(what: str, name: str, v: Any) -> dict[str, Any]:
    """``dict(v)`` for a mapping whose keys are strings; anything else is refused."""
    if not isinstance(v, Mapping):
        raise ConfigError(f"{what}: {name} must be a table of NAME = VALUE, got {v!r}")
    bad = [k for k in v if not isinstance(k, str)]
    if bad:
        raise ConfigError(f"{what}: {name} keys must be names (strings), got {bad[0]!r}")
    return dict(v)


def check_int_array(what: str, name: str, a: Any, *, lo: int | None = None,
                    hi: int | None = None, ndim: int | None = 1):
    """``a`` as a C-contiguous int64 numpy array: integer (or bool-free whole) dtype only.

    Floats are refused rather than truncated, whatever their values (``[1.7, 64.2]`` and
    ``[64.0]`` alike); so are strings and objects.
    """
    import numpy as np

    if isinstance(a, (str, bytes, Mapping)):
        raise ConfigError(f"{what}: {name} must be an array of integers, got {a!r}")
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{what}: {name} must be an array of integers ({exc})") from None
    if arr.dtype.kind not in "iu" and not (arr.size == 0 and arr.dtype.kind == "f"):
        raise ConfigError(f"{what}: {name} must hold integers, got dtype {arr.dtype}")
    if ndim is not None and arr.ndim != ndim:
        raise ConfigError(f"{what}: {name} must be {ndim}-D, got shape {arr.shape}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        raise ConfigError(f"{what}: {name} values must be < 2**63, got {int(arr.max())}")
    arr = np.ascontiguousarray(arr, dtype=np.int64)
    if arr.size:
        mn, mx = int(arr.min()), int(arr.max())
        if (lo is not None and mn < lo) or (hi is not None and mx > hi):
            bad = mn if lo is not None and mn < lo else mx
            raise ConfigError(f"{what}: {name} values must be {_range_text(lo, hi)}, got {bad}")
    return arr


def parse_int(text: str, *, hex_ok: bool = False) -> int | None:
    """Strict integer syntax for text from a command line or a file; None if it is not one.

    Decimal ASCII digits with an optional leading ``-``; with ``hex_ok`` also ``0x``/``0X``
    followed by hex digits. Python-only forms (``1_000``, ``0x_1``, ``0o17``, ``+5``, spaces,
    non-ASCII digits) are not integers here.
    """
    if not isinstance(text, str) or not text.isascii():
        return None
    if hex_ok and _HEX.match(text):
        return int(text[2:], 16)
    if _DEC.match(text):
        return int(text, 10)
    return None


def check_regular_file(path: str | Path, what: str, error: type[Exception] = ConfigError,
                       why: str = "it is read more than once") -> None:
    """Refuse, in one line, a path that is not a regular file: a missing one, a folder, or a
    pipe, FIFO or device (``/dev/stdin``, ``<(...)``), which a second read would find empty
    (``why`` says why the reader needs a real file)."""
    import stat

    try:
        st = os.stat(path)
    except OSError as exc:
        raise error(f"{what}: cannot read ({exc.strerror or type(exc).__name__})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{what}: is a folder, expected a file")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{what}: not a regular file (a pipe, FIFO or device): {why}; save it to "
                    "a file first")


def read_text(path: str | Path, what: str, limit: int | None = None) -> str:
    """The whole of a UTF-8 text file of at most ``limit`` bytes (default
    :data:`sieve.limits.MAX_TEXT_FILE_BYTES`), read once and never past the bound; one-line
    ConfigError when it cannot be read, is larger, or is not UTF-8."""
    from sieve.limits import MAX_TEXT_FILE_BYTES

    cap = MAX_TEXT_FILE_BYTES if limit is None else int(limit)
    p = Path(path)
    try:
        if p.is_dir():
            raise ConfigError(f"{what} {str(p)!r}: is a folder, not a file")
        with open(p, "rb") as fh:
            data = fh.read(cap + 1)
    except OSError as exc:
        raise ConfigError(f"{what} {str(p)!r}: cannot read ({exc.strerror or exc})") from None
    if len(data) > cap:
        raise ConfigError(f"{what} {str(p)!r}: larger than {format_bytes(cap)}, the limit for a "
                          "configuration file (sieve.limits.MAX_TEXT_FILE_BYTES): not a "
                          "configuration file?")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{what} {str(p)!r}: not UTF-8 text (byte {exc.start})") from None


class _Refused(ValueError):
    pass


def _json_int(s: str) -> int:
    from sieve.limits import MAX_INT_DIGITS

    if len(s.lstrip("-")) > MAX_INT_DIGITS:
        raise _Refused(f"integer literal of {len(s.lstrip('-'))} digits (at most "
                       f"{MAX_INT_DIGITS}: sieve.limits.MAX_INT_DIGITS)")
    return int(s)


def _json_float(s: str) -> float:
    v = float(s)
    if not math.isfinite(v):
        raise _Refused(f"number {s} is not finite")
    return v


def _json_constant(s: str):
    raise _Refused(f"{s} is not a number sieve accepts (finite numbers only)")


def strict_json(text: str) -> Any:
    """``json.loads`` with sieve's rules: integer literals of at most
    :data:`sieve.limits.MAX_INT_DIGITS` digits, finite numbers only. Raises ValueError
    (``json.JSONDecodeError`` or a refusal with its reason) or RecursionError; callers name
    the file and line (:func:`parse_document` for whole configuration files)."""
    import json

    return json.loads(text, parse_int=_json_int, parse_float=_json_float,
                      parse_constant=_json_constant)


def _check_tree(obj: Any, where: str) -> None:
    """TOML gives ints of any size and inf/nan: refuse both, naming the key."""
    from sieve.limits import MAX_INT_DIGITS

    stack = [(obj, where)]
    while stack:
        o, at = stack.pop()
        if isinstance(o, Mapping):
            stack.extend((v, f"{at}.{k}" if at else str(k)) for k, v in o.items())
        elif isinstance(o, list):
            stack.extend((v, f"{at}[{i}]") for i, v in enumerate(o))
        elif isinstance(o, bool):
            continue
        elif isinstance(o, int) and abs(o) >= 10 ** MAX_INT_DIGITS:
            raise _Refused(f"{at or 'value'}: integer of more than {MAX_INT_DIGITS} digits")
        elif isinstance(o, float) and not math.isfinite(o):
            raise _Refused(f"{at or 'value'}: {o} is not finite")


def parse_document(text: str, path: str | Path, what: str, kind: str | None = None) -> Any:
    """JSON or TOML text (``kind`` "json"/"toml", default from the file suffix: ``.toml`` is
    TOML, anything else JSON) as Python data; every failure one ConfigError naming ``what``
    and the file (module docstring)."""
    p = Path(path)
    kind = kind or ("toml" if p.suffix.lower() == ".toml" else "json")
    who = f"{what} {str(p)!r}"
    try:
        if kind == "toml":
            import tomllib

            data = tomllib.loads(text)
            _check_tree(data, "")
            return data
        return strict_json(text)
    except _Refused as exc:
        raise ConfigError(f"{who}: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{who}: nested too deeply to be a configuration file") from None
    except ValueError as exc:  # json.JSONDecodeError and tomllib.TOMLDecodeError are ValueErrors
        raise ConfigError(f"{who}: not valid {kind.upper()}: {exc}") from None


# --------------------------------------------------------------------------------------------
# Memory budget
# --------------------------------------------------------------------------------------------

_SUFFIX = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def format_bytes(n: float) -> str:
    """``1.5 GiB``-style text of a byte count."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{int(n)} B"


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_limit() -> int | None:
    try:
        raw = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        used = int(Path("/sys/fs/cgroup/memory.current").read_text().strip())
    except (OSError, ValueError):
        return None
    return int(raw) - used if raw.isdigit() else None


def memory_limit_bytes() -> int:
    """Memory sieve may plan to use: ``$SIEVE_MEMORY_LIMIT`` if set, else what this machine has
    available now (the least of /proc/meminfo ``MemAvailable``, the cgroup's free memory and
    ``RLIMIT_AS``; physical memory where none of those can be read)."""
    env = os.environ.get(MEMORY_LIMIT_ENV)
    if env is not None:
        m = re.fullmatch(r"([0-9]+)([KMGT]?)", env.strip().upper())
        if not m or not env.isascii():
            raise ConfigError(f"{MEMORY_LIMIT_ENV}: {env!r} is not a size (bytes, or with a "
                              f"K/M/G/T suffix, e.g. 8G)")
        return int(m.group(1)) * _SUFFIX[m.group(2)]
    limits = [x for x in (_meminfo_available(), _cgroup_limit()) if x is not None and x > 0]
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_AS)[0]
        if soft != resource.RLIM_INFINITY:
            limits.append(soft)
    except (ImportError, OSError, ValueError):
        pass
    if not limits:
        try:
            limits.append(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
        except (OSError, ValueError, AttributeError):
            return 1 << 62
    return min(limits)


def check_memory(what: str, need_bytes: float, advice: str = "") -> None:
    """Refuse a plan whose estimated memory ``need_bytes`` exceeds :func:`memory_limit_bytes`.

    Call it with an estimate *before* allocating; ``advice`` says which input to lower.
    """
    limit = memory_limit_bytes()
    if need_bytes > limit:
        src = f"${MEMORY_LIMIT_ENV}" if os.environ.get(MEMORY_LIMIT_ENV) else "available memory"
        raise ConfigError(f"{what}: needs about {format_bytes(need_bytes)}, more than the "
                          f"{format_bytes(limit)} of {src}" + (f"; {advice}" if advice else ""))


# --------------------------------------------------------------------------------------------
# Frozen dataclass overrides
# --------------------------------------------------------------------------------------------


def override_fields(obj: Any, what: str, values: Mapping[str, Any] | None,
                    kw: Mapping[str, Any]) -> Any:
    """Copy of the frozen dataclass ``obj`` with fields replaced, then ``.validate()``d.

    Unknown field names raise ConfigError listing the valid ones.
    """
    items = check_mapping(f"{what} {obj.name!r}", "overrides", values or {})
    items.update(kw)
    names = {f.name for f in fields(obj)}
    for key in items:
        if key not in names:
            raise ConfigError(f"{what} {obj.name!r}: unknown override {key!r} "
                              f"(valid: {choices(names)})")
    return replace(obj, **items).validate()
