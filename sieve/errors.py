"""Exceptions raised by sieve.

Every error a user can cause (unknown preset, malformed file, impossible timing, negative size)
is a :class:`SieveError`.  Messages name the component first and list the valid choices, e.g.
``"DRAM spec 'hbm3x': unknown preset (known: hbm2-2000, hbm3-6400, ...)"``.  The CLI turns a
``SieveError`` into one line on stderr and exit code 2.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

__all__ = [
    "ConfigError",
    "NotBuiltError",
    "OutputError",
    "SieveError",
    "TimingViolation",
    "TraceFormatError",
    "lookup",
]


class SieveError(Exception):
    """Base class of every user-facing sieve error."""


class ConfigError(SieveError, ValueError):
    """A preset name, override or parameter value is invalid."""


class TimingViolation(SieveError, RuntimeError):
    """A DRAM/PIM command was issued before its earliest legal cycle, or in a wrong bank state."""


class TraceFormatError(SieveError, ValueError):
    """A trace or data file is malformed; the message names the file, line and field."""


class OutputError(SieveError):
    """A result cannot be written: the output path is a file, a folder holding files sieve did
    not write, or a place that cannot be written (permissions, full disk, read-only)."""


class NotBuiltError(SieveError, ImportError):
    """A compiled extension of sieve (the engine ``sieve._dram`` or another) is missing."""

    @classmethod
    def of(cls, what: str, module: str, cause: BaseException) -> NotBuiltError:
        """The one message for every extension: what it is, how to build it, the cause."""
        return cls(f"sieve's compiled {what} ({module}) is not built: run `pip install -e .` "
                   f"in the project root (SIEVE_CYTHON_DEBUG=1 for a bounds-checked build); "
                   f"cause: {cause}")


T = TypeVar("T")


def choices(names: Iterable[str]) -> str:
    """Comma-separated, sorted list of valid names for an error message."""
    return ", ".join(sorted(names))


def lookup(table: Mapping[str, T], name: str, what: str) -> T:
    """Look ``name`` up in a registry dict, case-insensitively.

    Args:
        table: registry (name -> object); keys are lower-case.
        name: the name the user gave.
        what: the component, used in the error message ("DRAM spec", "model", ...).

    Raises:
        ConfigError: unknown name; the message lists the known names.
    """
    if not isinstance(name, str):
        raise ConfigError(f"{what}: expected a name, got {name!r} (known: {choices(table)})")
    key = name.strip().lower()
    if key in table:
        return table[key]
    raise ConfigError(f"{what} {name!r}: unknown{did_you_mean(key, table)} (known: "
                      f"{choices(table)})")


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """``" (did you mean X?)"`` for the closest of ``names`` (difflib ratio >= 0.6), or ``""``."""
    import difflib

    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""
