"""PIM kernels: GEMV layout over the PIM units, expert FFNs (TP and EP), attention, costs.

Layer: above :mod:`sieve.dram` and :mod:`sieve.hw`. Modules: :mod:`~sieve.pim.layout` (the 2-D
GEMV layout and :class:`~sieve.dram.pim_device.GemvKernel` descriptors), :mod:`~sieve.pim.host`
(the GPU step between two GEMVs), :mod:`~sieve.pim.ffn` (routed and shared experts under
tensor or expert parallelism), :mod:`~sieve.pim.attention` (decode attention per layer type)
and :mod:`~sieve.pim.costs` (memoised engine times). Every time comes from the engine.
"""

from sieve.pim.attention import (  # noqa: F401
    AttentionPimResult,
    AttentionSlice,
    attention_slices,
    default_pcs_per_slice,
    gdn_decode_gpu_ns,
    run_attention,
)
from sieve.pim.costs import (  # noqa: F401
    PimCostTable,
)
from sieve.pim.ffn import (  # noqa: F401
    ORDERS,
    FfnShape,
    MoePimResult,
    default_pcs_per_expert,
    ffn_layouts,
    ffn_shape,
    run_expert_ffn,
    run_moe_ep,
    run_moe_tp,
    run_shared_experts,
)
from sieve.pim.host import (  # noqa: F401
    GpuStep,
    gpu_step,
)
from sieve.pim.layout import (  # noqa: F401
    GemvLayout,
    col_group_choices,
    estimate_kernel_ns,
    gemv_kernel,
    gemv_layout,
    spec_key,
)

__all__ = [
    "AttentionPimResult",
    "AttentionSlice",
    "FfnShape",
    "GemvLayout",
    "GpuStep",
    "MoePimResult",
    "ORDERS",
    "PimCostTable",
    "attention_slices",
    "col_group_choices",
    "default_pcs_per_expert",
    "default_pcs_per_slice",
    "estimate_kernel_ns",
    "ffn_layouts",
    "ffn_shape",
    "gdn_decode_gpu_ns",
    "gemv_kernel",
    "gemv_layout",
    "gpu_step",
    "run_attention",
    "run_expert_ffn",
    "run_moe_ep",
    "run_moe_tp",
    "run_shared_experts",
    "spec_key",
]
