"""Routing traces and workloads: the trace format, importers, the synthetic router, statistics.

Layer: above :mod:`sieve.model`. Modules: :mod:`~sieve.workload.trace` (:class:`RoutingTrace`,
the versioned ``.npz`` format, per-GPU count helpers), :mod:`~sieve.workload.importers` (vLLM
router logs, count matrices, OLMoE/Mixtral expert-count files), :mod:`~sieve.workload.router`
(the seeded, calibrated :class:`SyntheticRouter`) and :mod:`~sieve.workload.stats` (act-ratio,
token-count bins, skew, overlap, NMI).
"""

from sieve.workload.importers import (  # noqa: F401
    LayerTransitions,
    read_allenai_counts,
    read_allenai_crosslayer,
    read_count_matrix,
    read_fiddler_popularity,
    read_vllm_router_log,
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
    "CountTrace",
    "DECODE",
    "DEFAULT_PARAMS",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "LayerTransitions",
    "PREFILL",
    "PRESET_FITS",
    "PRESET_SOURCES",
    "ROUTER_PRESETS",
    "RouterParams",
    "RouterShape",
    "RoutingTrace",
    "SyntheticRouter",
    "TraceMeta",
    "bin_counts",
    "contiguous_placement",
    "dirichlet_logits",
    "generate_trace",
    "get_router_params",
    "gpu_counts",
    "gpu_loads",
    "iid_coverage",
    "iid_overlap",
    "iter_trace_chunks",
    "load_skew",
    "load_trace",
    "nmi_from_joint",
    "read_allenai_counts",
    "read_allenai_crosslayer",
    "read_count_matrix",
    "read_fiddler_popularity",
    "read_vllm_router_log",
    "step_stats",
    "temporal_overlap",
    "top1_joint",
]
