"""GPUs, links and systems: presets with sources, the cost interface and the time models.

Layer: above :mod:`sieve.dram` (a system names the DRAM/PIM spec of its stacks) and
:mod:`sieve.model` (operations may name a model's layer). Modules:

* :mod:`~sieve.hw.presets` - frozen :class:`GpuSpec`, :class:`LinkSpec`, dtypes (data);
* :mod:`~sieve.hw.calibrations` - fitted efficiencies of the GPU and link models (data);
* :mod:`~sieve.hw.system` - :class:`SystemConfig`, the whole system resolved once, presets and
  JSON/TOML files;
* :mod:`~sieve.hw.cost` - the one cost interface (:class:`CostModel`: ``gpu_ns``,
  ``comm_ns``, ``pim_ns`` over operation dataclasses; nanoseconds);
* :mod:`~sieve.hw.gpu` - calibrated roofline of GEMMs, grouped GEMMs, attention, weight loads;
* :mod:`~sieve.hw.comm` - alpha-beta collectives and EP dispatch/combine;
* :mod:`~sieve.hw.estimates` - the scheduler's cheap spec-peak estimates
  (:class:`RooflineCostModel`).

Every time model returns nanoseconds and takes the resolved objects (a :class:`SystemConfig`,
or the :class:`GpuSpec` and :class:`GpuCalibration` it holds); the defaults are named once,
by :data:`DEFAULT_SYSTEM` and :data:`sieve.hw.presets.DEFAULT_GPU`. The fits that produce the
calibrations live in :mod:`sieve.calibration`, which nothing here imports.
"""

from sieve.hw.calibrations import (  # noqa: F401
    CALIBRATIONS,
    COMM_CALIBRATIONS,
    AlphaBeta,
    CommCalibration,
    GpuCalibration,
    get_calibration,
    get_comm_calibration,
)
from sieve.hw.comm import (  # noqa: F401
    PAYLOADS,
    all_gather_time_ns,
    all_reduce_time_ns,
    all_to_all_time_ns,
    ep_combine_time_ns,
    ep_dispatch_time_ns,
    ep_exchange_time_ns,
    payload_bytes,
    tier_time_ns,
)
from sieve.hw.cost import (  # noqa: F401
    COLLECTIVES,
    EP_EXCHANGES,
    PIM_MAPPINGS,
    PIM_ORDERS,
    Collective,
    CommOp,
    CostModel,
    DecodeAttention,
    EpExchange,
    ExpertShape,
    Gemm,
    GpuOp,
    GroupedExperts,
    MemoryStream,
    PimAttention,
    PimExperts,
    PimOp,
    PrefillAttention,
    as_ops,
    counts_array,
)
from sieve.hw.estimates import (  # noqa: F401
    RooflineCostModel,
    t_comm_ns,
    t_comp_ns,
    t_dispatch_combine_ns,
    t_gpu_experts_ns,
    t_offchip_ns,
)
from sieve.hw.gpu import (  # noqa: F401
    attention_decode_time_ns,
    attention_prefill_time_ns,
    expert_gemm_cost,
    gemm_time_ns,
    gemv_time_ns,
    grouped_gemm_time_ns,
    kernel_time_ns,
    moe_layer_time_ns,
    weight_load_time_ns,
)
from sieve.hw.presets import (  # noqa: F401
    DTYPES,
    GPUS,
    LINKS,
    MAX_GPUS_PER_NODE,
    DType,
    GpuSpec,
    LinkSpec,
    get_dtype,
    get_gpu,
    get_link,
)
from sieve.hw.system import (  # noqa: F401
    DEFAULT_SYSTEM,
    SYSTEMS,
    SystemConfig,
    get_system,
    load_system,
    make_system,
)

__all__ = [
    "AlphaBeta",
    "CALIBRATIONS",
    "COLLECTIVES",
    "COMM_CALIBRATIONS",
    "Collective",
    "CommCalibration",
    "CommOp",
    "CostModel",
    "DEFAULT_SYSTEM",
    "DTYPES",
    "DType",
    "DecodeAttention",
    "EP_EXCHANGES",
    "EpExchange",
    "ExpertShape",
    "GPUS",
    "Gemm",
    "GpuCalibration",
    "GpuOp",
    "GpuSpec",
    "GroupedExperts",
    "LINKS",
    "LinkSpec",
    "MAX_GPUS_PER_NODE",
    "MemoryStream",
    "PAYLOADS",
    "PIM_MAPPINGS",
    "PIM_ORDERS",
    "PimAttention",
    "PimExperts",
    "PimOp",
    "PrefillAttention",
    "RooflineCostModel",
    "SYSTEMS",
    "SystemConfig",
    "all_gather_time_ns",
    "all_reduce_time_ns",
    "all_to_all_time_ns",
    "as_ops",
    "attention_decode_time_ns",
    "attention_prefill_time_ns",
    "counts_array",
    "ep_combine_time_ns",
    "ep_dispatch_time_ns",
    "ep_exchange_time_ns",
    "expert_gemm_cost",
    "gemm_time_ns",
    "gemv_time_ns",
    "get_calibration",
    "get_comm_calibration",
    "get_dtype",
    "get_gpu",
    "get_link",
    "get_system",
    "grouped_gemm_time_ns",
    "kernel_time_ns",
    "load_system",
    "make_system",
    "moe_layer_time_ns",
    "payload_bytes",
    "t_comm_ns",
    "t_comp_ns",
    "t_dispatch_combine_ns",
    "t_gpu_experts_ns",
    "t_offchip_ns",
    "tier_time_ns",
    "weight_load_time_ns",
]
