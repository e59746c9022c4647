"""The bounds sieve puts on its inputs, in one place (issue 18): the CLI, sweep files and the
library check against these same numbers, before anything is read in full, allocated or
simulated. Each bound says why it is where it is; docs/user-guide.md ("What bad input gets")
lists them.

This module must not import any other sieve module (it sits below :mod:`sieve.validate`).
"""

from __future__ import annotations

__all__ = ["LIMITS", "MAX_INT_DIGITS", "MAX_TEXT_FILE_BYTES"]

#: Largest configuration text file sieve reads whole (config.json, system, spec, profile and
#: sweep files): the largest real one is a few kB (a Hugging Face config with a quantisation
#: ignore list is ~30 kB), so 32 MiB refuses ``/dev/zero``, a log given by mistake or a runaway
#: generated file in well under a second, without reading more than the bound.
MAX_TEXT_FILE_BYTES = 32 << 20

#: Longest integer literal accepted in a configuration file: every size sieve models fits in 64
#: bits (20 digits); Python refuses to convert more than 4300 digits with an error that names
#: no field, and converting long ones is quadratic.
MAX_INT_DIGITS = 30

#: name -> (bound, reason), for the user guide's table.
LIMITS: dict[str, tuple[int, str]] = {
    "configuration file size": (MAX_TEXT_FILE_BYTES, "real ones are a few kB; refuses "
                                "/dev/zero and logs given by mistake before reading them whole"),
    "integer literal digits": (MAX_INT_DIGITS, "every modelled size fits in 64 bits; Python's "
                               "own limit (4300) gives an error naming no field"),
}
