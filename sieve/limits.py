"""The bounds sieve puts on its inputs, in one place (issue 18): the CLI, sweep files and the
library check against these same numbers, before anything is read in full, allocated or
simulated. Each bound says why it is where it is; docs/user-guide.md ("What bad input gets")
lists them.

This module must not import any other sieve module (it sits below :mod:`sieve.validate`).
"""

from __future__ import annotations

__all__ = ["LIMITS", "MAX_BATCH", "MAX_GPUS", "MAX_GRID_POINTS", "MAX_INT_DIGITS", "MAX_STEPS",
           "MAX_TEXT_FILE_BYTES"]

#: Largest configuration text file sieve reads whole (config.json, system, spec, profile and
#: sweep files): the largest real one is a few kB (a Hugging Face config with a quantisation
#: ignore list is ~30 kB), so 32 MiB refuses ``/dev/zero``, a log given by mistake or a runaway
#: generated file in well under a second, without reading more than the bound.
MAX_TEXT_FILE_BYTES = 32 << 20

#: Longest integer literal accepted in a configuration file: every size sieve models fits in 64
#: bits (20 digits); Python refuses to convert more than 4300 digits with an error that names
#: no field, and converting long ones is quadratic.
MAX_INT_DIGITS = 30

#: Requests in one step of the whole system (a run's ``batch``): the seed's evaluation stops at
#: 256; 65536 decode requests exceed the KV-cache memory of every system preset at the
#: workloads' lengths, and a step's routing arrays stay in the hundreds of MB.
MAX_BATCH = 1 << 16

#: Steps of one run (measured, and warm-up separately): the CLI's bound since issue 8; more
#: steps of the same point add nothing a longer trace would not say better.
MAX_STEPS = 10_000

#: GPUs of one system: NVL576-class systems and a 512-GPU EP deployment fit; the step
#: simulator keeps per-GPU state, so 1e9 GPUs would exhaust memory before the first step.
MAX_GPUS = 4096

#: Points of one sweep (all blocks, all grid axes crossed), counted before any is built: at
#: about a second per point on two cores 100,000 points are more than a day of work.
MAX_GRID_POINTS = 100_000

#: name -> (bound, reason), for the user guide's table.
LIMITS: dict[str, tuple[int, str]] = {
    "configuration file size": (MAX_TEXT_FILE_BYTES, "real ones are a few kB; refuses "
                                "/dev/zero and logs given by mistake before reading them whole"),
    "integer literal digits": (MAX_INT_DIGITS, "every modelled size fits in 64 bits; Python's "
                               "own limit (4300) gives an error naming no field"),
    "batch": (MAX_BATCH, "beyond every system's KV memory; bounds the routing arrays"),
    "steps": (MAX_STEPS, "per run, measured and warm-up each"),
    "GPUs": (MAX_GPUS, "per-GPU state of the step simulator"),
    "sweep points": (MAX_GRID_POINTS, "counted before any point is built"),
}
