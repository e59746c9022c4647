"""MoE model descriptions: presets from public config.json files, parts, HF loading.

Layer: bottom (imports only :mod:`sieve.errors`). Modules: :mod:`~sieve.model.moe` (the
frozen :class:`MoeModel`, its counting conventions, the ``MODELS`` registry and
:func:`get_model`), :mod:`~sieve.model.parts` (attention variants, router, expert GEMV shapes,
weight formats), :mod:`~sieve.model.presets` (preset field values with sources) and
:mod:`~sieve.model.hf_config` (Hugging Face ``config.json`` <-> :class:`MoeModel`).
"""

from sieve.model.hf_config import (  # noqa: F401
    ARCHITECTURES,
    FAMILIES,
    parse_hf_config,
    to_hf_config,
)
from sieve.model.moe import (  # noqa: F401
    ACTIVATIONS,
    ALIASES,
    LAYER_TYPES,
    MODELS,
    MoeModel,
    get_model,
    load_hf_config,
)
from sieve.model.parts import (  # noqa: F401
    KV_DTYPE_BYTES,
    WEIGHT_FORMATS,
    ExpertGemv,
    GatedDeltaNet,
    GqaAttention,
    MlaAttention,
    Router,
    WeightFormat,
    get_weight_format,
    kv_dtype_bytes,
)

__all__ = [
    "ACTIVATIONS",
    "ALIASES",
    "ARCHITECTURES",
    "ExpertGemv",
    "FAMILIES",
    "GatedDeltaNet",
    "GqaAttention",
    "KV_DTYPE_BYTES",
    "LAYER_TYPES",
    "MODELS",
    "MlaAttention",
    "MoeModel",
    "Router",
    "WEIGHT_FORMATS",
    "WeightFormat",
    "get_model",
    "get_weight_format",
    "kv_dtype_bytes",
    "load_hf_config",
    "parse_hf_config",
    "to_hf_config",
]
