"""Routing traces and workloads: the trace format, importers, the synthetic router, statistics.

Layer: above :mod:`sieve.model`. Modules: :mod:`~sieve.workload.trace` (:class:`RoutingTrace`,
the versioned ``.npz`` format, per-GPU count helpers), :mod:`~sieve.workload.importers` (vLLM
router logs, count matrices, OLMoE/Mixtral expert-count files), :mod:`~sieve.workload.router`
(the seeded, calibrated :class:`SyntheticRouter`), :mod:`~sieve.workload.stats` (act-ratio,
token-count bins, skew, overlap, NMI), :mod:`~sieve.workload.profiles` (sequence-length profiles:
HH-RLHF, MATH-500, InferenceMAX, fixed, your own) and :mod:`~sieve.workload.batch` (seeded
decode-only and colocated batches of one step, and their routing).
"""

from sieve.workload.batch import (  # noqa: F401
    Batch,
    colocated_batch,
    decode_batch,
    expected_decode_context,
    prefill_cap,
    step_trace,
)
from sieve.workload.importers import (  # noqa: F401
    LayerTransitions,
    read_allenai_counts,
    read_allenai_crosslayer,
    read_count_matrix,
    read_fiddler_popularity,
    read_vllm_router_log,
)
from sieve.workload.profiles import (  # noqa: F401
    PROFILES,
    Profile,
    fixed_profile,
    get_profile,
    load_profile,
)
from sieve.workload.router import (  # noqa: F401
    DEFAULT_PARAMS,
    PRESET_FITS,
    PRESET_SOURCES,
    ROUTER_PRESETS,
    RouterParams,
    RouterShape,
    SyntheticRouter,
    dirichlet_logits,
    generate_trace,
    get_router_params,
)
from sieve.workload.stats import (  # noqa: F401
    BIN_LABELS,
    bin_counts,
    iid_coverage,
    iid_overlap,
    load_skew,
    nmi_from_joint,
    step_stats,
    temporal_overlap,
    top1_joint,
)
from sieve.workload.trace import (  # noqa: F401
    DECODE,
    FORMAT_NAME,
    FORMAT_VERSION,
    PREFILL,
    CountTrace,
    RoutingTrace,
    TraceMeta,
    contiguous_placement,
    gpu_counts,
    gpu_loads,
    iter_trace_chunks,
    load_trace,
)

__all__ = [
    "BIN_LABELS",
    "Batch",
    "CountTrace",
    "DECODE",
    "DEFAULT_PARAMS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "LayerTransitions",
    "PREFILL",
    "PRESET_FITS",
    "PRESET_SOURCES",
    "PROFILES",
    "Profile",
    "ROUTER_PRESETS",
    "RouterParams",
    "RouterShape",
    "RoutingTrace",
    "SyntheticRouter",
    "TraceMeta",
    "bin_counts",
    "colocated_batch",
    "contiguous_placement",
    "decode_batch",
    "dirichlet_logits",
    "expected_decode_context",
    "fixed_profile",
    "generate_trace",
    "get_profile",
    "get_router_params",
    "gpu_counts",
    "gpu_loads",
    "iid_coverage",
    "iid_overlap",
    "iter_trace_chunks",
    "load_profile",
    "load_skew",
    "load_trace",
    "nmi_from_joint",
    "prefill_cap",
    "read_allenai_counts",
    "read_allenai_crosslayer",
    "read_count_matrix",
    "read_fiddler_popularity",
    "read_vllm_router_log",
    "step_stats",
    "step_trace",
    "temporal_overlap",
    "top1_joint",
]
