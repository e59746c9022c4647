"""The evaluation setups (data): the seed's systems per model, and what ``sieve run`` runs.

Seed §7 "Models": "four B200 GPUs for GPT-OSS, eight B200 GPUs for Qwen3.5, and a single B200
GPU for Qwen3, where all GPUs are attached to their HBM-PIM stacks"; batch sizes "up to 256";
datasets HH-RLHF and MATH-500 (here: their length profiles, sieve.workload.profiles); colocated
prefill+decode "in Qwen3" (§7.3). The main job (``sieve run`` with no arguments) is a small but
real slice of Figure 9: every method, three batch sizes, the GPT-OSS setup, sampled layers.
This module holds names only; they are resolved by the run.
"""

from __future__ import annotations

__all__ = ["FIG9", "FIG9_BATCHES", "FIG9_WORKLOADS", "FIG10", "FIG10_BATCH", "FIG11",
           "FIG11_BATCHES", "FIG11_CASES", "MAIN", "MAIN_BATCHES", "Setup"]

from dataclasses import dataclass


@dataclass(frozen=True)
class Setup:
    """A model on a system (names resolved at run time)."""

    model: str
    system: str


#: Seed §7 "Models": the system of each evaluated model.
FIG9: dict[str, Setup] = {
    "gpt-oss-120b": Setup("gpt-oss-120b", "4xb200"),
    "qwen3.5-397b-a17b": Setup("qwen3.5-397b-a17b", "8xb200"),
    "qwen3-30b-a3b": Setup("qwen3-30b-a3b", "1xb200"),
}
#: Seed Figure 9's batch range ("B up to 256").
FIG9_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: Seed §7 "Datasets": "real-world request traces from the HH-RLHF ... and MATH-500 datasets"
#: (here their length profiles, sieve.workload.profiles).
FIG9_WORKLOADS = ("hh-rlhf", "math-500")
#: Seed Figure 10: PIM channel utilisation, Sieve (TP over channels) against PIMoE (EP).
FIG10 = Setup("gpt-oss-120b", "4xb200")
FIG10_BATCH = 64
#: Seed §7.3 / Figure 11: colocated prefill+decode "in Qwen3".
FIG11 = Setup("qwen3-30b-a3b", "1xb200")
FIG11_BATCHES = (8, 16, 32, 64, 128, 256)
#: Figure 11's two colocated cases: "drawn" (prefill requests drawn from 1 .. the seed's cap,
#: "up to" two or eight) and "stress" (exactly the cap: "extreme cases with up to eight
#: prefill-phase requests per batch for B >= 64, and up to two ... for B <= 32", every prompt
#: >= 1024 tokens; sieve.workload.batch.prefill_cap).
FIG11_CASES = ("drawn", "stress")
#: The README's main job: the GPT-OSS setup, every method, three batch sizes.
MAIN = Setup("gpt-oss-120b", "4xb200")
MAIN_BATCHES = (4, 16, 64)


def default_system(model: str | None, *, colocated: bool = False) -> str:
    """The system a command runs on when ``--system`` is not given, the one rule of every
    subcommand (``sieve run``, ``timeline``, ``schedule``): no model named, the main job's
    (:data:`MAIN`, or :data:`FIG11` for colocated batches); a model of the seed's evaluation,
    the seed's system for it (:data:`FIG9`); any other model,
    :data:`sieve.hw.system.DEFAULT_SYSTEM`."""
    from sieve.hw.system import DEFAULT_SYSTEM

    if model is None:
        return (FIG11 if colocated else MAIN).system
    key = str(model).lower()
    return FIG9[key].system if key in FIG9 else DEFAULT_SYSTEM
