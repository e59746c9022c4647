"""The bounds sieve puts on its inputs, in one place (issue 18): the CLI, sweep files and the
library check against these same numbers, before anything is read in full, allocated or
simulated. Each bound says why it is where it is; docs/user-guide.md ("What bad input gets")
lists them.

This module must not import any other sieve module (it sits below :mod:`sieve.validate`).
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["LIMITS", "MAX_BATCH", "MAX_CONTEXT", "MAX_DATA_FILE_BYTES", "MAX_EXPERTS",
           "MAX_GPUS", "MAX_GRID_POINTS", "MAX_INT_DIGITS", "MAX_LAYERS", "MAX_LINE_BYTES",
           "MAX_STEPS", "MAX_TEXT_FILE_BYTES", "MAX_WIDTH", "Limit", "table_markdown"]

#: Largest configuration text file sieve reads whole (config.json, system, spec, profile and
#: sweep files): the largest real one is a few kB (a Hugging Face config with a quantisation
#: ignore list is ~30 kB), so 32 MiB refuses ``/dev/zero``, a log given by mistake or a runaway
#: generated file in well under a second, without reading more than the bound.
MAX_TEXT_FILE_BYTES = 32 << 20

#: Largest routing-data file read whole (JSON/CSV count matrices, SGLang, OLMoE and Fiddler
#: count files): the real ones are kB to a few MB (a 256-expert x 61-layer matrix of counts is
#: ~200 kB); 256 MiB bounds the memory a wrong file can take. JSONL router logs are streamed
#: line by line, each line at most MAX_LINE_BYTES.
MAX_DATA_FILE_BYTES = 256 << 20

#: Longest line of a line-oriented input (a JSONL router log): a routed token row is ~100 B;
#: 1 MiB refuses a binary file or /dev/zero at its first "line".
MAX_LINE_BYTES = 1 << 20

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

#: Decoder layers of one model: the deepest released LLMs have 126 (Llama 3.1 405B) and
#: 61-94 among MoE models (DeepSeek-V3 61, Qwen3-235B-A22B 94); the step model keeps per-layer
#: timings, so 1024 leaves 8x room and refuses runaway configs.
MAX_LAYERS = 1024

#: Any width of a model: hidden size, FFN and expert widths, vocabulary, attention heads, head
#: and latent dimensions. The widest released values are ~256 k (Gemma's vocabulary) and
#: 53,248 (Llama 3.1 405B's FFN); 2^20 leaves 4x on the largest and keeps every weight count
#: (width x width x layers x experts) far inside 64 bits. A hidden size of 2^40 would ask for
#: exabytes of weights.
MAX_WIDTH = 1 << 20

#: Routed experts per MoE layer: the most released is 512 (Qwen3-Next); routing arrays and
#: per-expert schedules are sized by it, so 16384 leaves 32x.
MAX_EXPERTS = 1 << 14

#: Context length (tokens) of a model or a request: Llama 4 Scout's 10 M is the longest
#: released; 2^27 (134 M) leaves 13x and keeps KV sizes inside 64 bits.
MAX_CONTEXT = 1 << 27

class Limit(NamedTuple):
    """One bound, as the user guide's table shows it."""

    constant: str  #: its name in this module
    value: int
    shown: str  #: the value as the table shows it
    reason: str


#: Every bound, in the order of the user guide's table (``python -m sieve.limits --write
#: docs/user-guide.md`` regenerates the table; a test checks it is current).
LIMITS: dict[str, Limit] = {
    "configuration file size": Limit(
        "MAX_TEXT_FILE_BYTES", MAX_TEXT_FILE_BYTES, "32 MiB",
        "real ones are a few kB; refuses `--model /dev/zero` or a log given by mistake before "
        "reading it whole"),
    "routing-data file read whole (count matrices, SGLang/OLMoE/Fiddler JSON)": Limit(
        "MAX_DATA_FILE_BYTES", MAX_DATA_FILE_BYTES, "256 MiB",
        "real ones are kB to a few MB; bounds what a wrong file can take"),
    "line of a JSONL router log": Limit(
        "MAX_LINE_BYTES", MAX_LINE_BYTES, "1 MiB",
        "a token row is ~100 B; refuses a binary file or /dev/zero at its first line"),
    "integer literal in a configuration file": Limit(
        "MAX_INT_DIGITS", MAX_INT_DIGITS, "30 digits",
        "every modelled size fits in 64 bits; Python's own limit (4300 digits) gives an error "
        "that names no field"),
    "requests in one step, a run's `batch`": Limit(
        "MAX_BATCH", MAX_BATCH, f"{MAX_BATCH}",
        "the seed stops at 256; 65536 decode requests exceed every system preset's KV memory "
        "at the workloads' lengths"),
    "steps of a run, measured and warm-up each": Limit(
        "MAX_STEPS", MAX_STEPS, f"{MAX_STEPS}",
        "the CLI's `--steps` bound, also for sweep files and the library"),
    "GPUs of a system": Limit(
        "MAX_GPUS", MAX_GPUS, f"{MAX_GPUS}",
        "NVL576-class systems fit; the step simulator keeps per-GPU state"),
    "points of a sweep": Limit(
        "MAX_GRID_POINTS", MAX_GRID_POINTS, f"{MAX_GRID_POINTS}",
        "counted arithmetically before any point is built (also by `--dry-run`); at ~1 s a "
        "point, more than a day on 2 cores"),
    "decoder layers of a model (and any layer-count field of a config.json)": Limit(
        "MAX_LAYERS", MAX_LAYERS, f"{MAX_LAYERS}",
        "8x the deepest released model (126, Llama 3.1 405B); checked before a list of layer "
        "types is built"),
    "a model width: hidden size, FFN and expert widths, vocabulary, heads, head dims": Limit(
        "MAX_WIDTH", MAX_WIDTH, "2^20",
        "4x the widest released (Gemma's 256 k vocabulary); weight counts stay inside 64 bits"),
    "routed experts per MoE layer (and top-k, shared experts, expert groups)": Limit(
        "MAX_EXPERTS", MAX_EXPERTS, f"{MAX_EXPERTS}",
        "32x the most released (512, Qwen3-Next)"),
    "context tokens (max_position_embeddings, sliding windows, other config integers)": Limit(
        "MAX_CONTEXT", MAX_CONTEXT, "2^27",
        "13x the longest released context (10 M, Llama 4 Scout)"),
}

TABLE_BEGIN = ("<!-- limits:begin (generated by `python -m sieve.limits --write "
               "docs/user-guide.md`) -->")
TABLE_END = "<!-- limits:end -->"


def table_markdown(indent: str = "  ") -> str:
    """The user guide's table of bounds, between its markers."""
    rows = [TABLE_BEGIN, "| bound | value | why |", "|---|---|---|"]
    rows += [f"| {name} (`{lim.constant}`) | {lim.shown} | {lim.reason} |"
             for name, lim in LIMITS.items()]
    rows.append(TABLE_END)
    return "\n".join(indent + r for r in rows) + "\n"


if __name__ == "__main__":  # pragma: no cover - a maintainer's command
    import os
    import sys

    if sys.argv[1:2] == ["--write"] and len(sys.argv) == 3:
        # (no sieve.outputs here: this module imports no other sieve module)
        path = sys.argv[2]
        with open(path, encoding="utf-8") as fh:
            doc = fh.read()
        a, b = doc.find("  " + TABLE_BEGIN), doc.find(TABLE_END)
        if a < 0 or b < a:
            sys.exit(f"{path}: no limits table between its markers")
        doc = doc[:a] + table_markdown() + doc[b + len(TABLE_END) + 1:]
        with open(path + ".tmp", "w", encoding="utf-8") as fh:
            fh.write(doc)
        os.replace(path + ".tmp", path)
    else:
        sys.stdout.write(table_markdown())
