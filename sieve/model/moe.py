"""MoE model descriptions: public-config presets, HF config.json loading, derived sizes.

A :class:`MoeModel` is frozen data taken from a model's Hugging Face ``config.json`` plus exact
derived quantities: parameters and bytes per routed/shared expert, non-MoE parameters, total and
active parameter counts (for the act-ratio of seed Figure 3), KV-cache bytes per token and
per-sequence recurrent state per layer type, and the expert GEMV shapes the PIM lowering needs.

Counting conventions (stated once, used everywhere)
    * ``total_params()`` counts every weight of the text model that ships in the main checkpoint:
      embedding, LM head (once if tied), all layers, norms, biases, routers. Multi-token-prediction
      (MTP) layers and vision towers are **not** counted (they are not in the published totals).
    * Routed experts and shared experts are counted separately; ``non_moe_params()`` is
      everything else (attention / linear attention, embedding, LM head, norms, routers, the
      Qwen shared-expert gate vector, dense FFN layers). Shared experts are always active but
      are *not* included in ``non_moe_params()``.
    * ``active_params(n)`` = ``non_moe_params() + n_moe_layers * n_shared_experts *
      shared_expert_params() + sum(n) * expert_params()``.

Sources: every preset value cites shared/reference/models-and-traces.md §A.1 (the column of
that model) and the config.json it was copied from (§A.3). See docs/models.md.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from sieve.errors import ConfigError, choices, lookup
from sieve.limits import MAX_CONTEXT, MAX_EXPERTS, MAX_LAYERS, MAX_WIDTH
from sieve.model.hf_config import parse_hf_config
from sieve.model.parts import (
    ExpertGemv,
    GatedDeltaNet,
    GqaAttention,
    MlaAttention,
    Router,
    get_weight_format,
    kv_dtype_bytes,
)
from sieve.model.presets import PRESET_FIELDS
from sieve.validate import check_int, check_sequence, parse_document, read_text

__all__ = [
    "ACTIVATIONS",
    "ALIASES",
    "LAYER_TYPES",
    "MODELS",
    "MoeModel",
    "get_model",
    "load_hf_config",
]

#: Per-layer token mixers: GQA full attention, GQA sliding window, MLA, Gated DeltaNet.
LAYER_TYPES = ("full", "sliding", "mla", "gdn")
#: Expert activations (see :class:`sieve.model.parts.ExpertGemv`).
ACTIVATIONS = ("swiglu", "swiglu_clamped")
#: gpt-oss clamped-SwiGLU slope (HF ``modeling_gpt_oss.GptOssExperts.alpha``).
GPT_OSS_SWIGLU_ALPHA = 1.702


@dataclass(frozen=True)
class MoeModel:
    """One MoE LLM (text model), as its config.json describes it.

    Attributes:
        name: registry name (or the name given to :func:`load_hf_config`).
        family: HF ``model_type`` family ("mixtral", "qwen3_moe", "qwen3_next", "qwen3_5_moe",
            "gpt_oss", "deepseek_v3"); selects the config.json schema for export.
        n_layers: decoder layers (``num_hidden_layers``), MTP layers excluded.
        hidden_size: model width H.
        vocab_size: vocabulary size V (embedding and LM head are ``V x H``).
        layer_types: token mixer of each layer, one of :data:`LAYER_TYPES`.
        attention: the softmax/latent attention used by "full", "sliding" or "mla" layers.
        n_experts: routed experts per MoE layer.
        top_k: routed experts per token.
        moe_intermediate_size: routed-expert FFN width I.
        moe_layer_ids: layers whose FFN is a routed MoE; the others use a dense FFN.
        n_shared_experts: always-active shared experts per MoE layer.
        shared_intermediate_size: FFN width of one shared expert.
        dense_intermediate_size: FFN width of non-MoE layers (0 when every layer is MoE).
        linear_attention: Gated-DeltaNet config, required when any layer is "gdn".
        sliding_window: window (tokens) of "sliding" layers.
        tie_word_embeddings: LM head shares the embedding matrix.
        router: routing function (scoring, bias, groups).
        shared_expert_gate: a sigmoid gate vector ``H -> 1`` scales the shared expert (Qwen).
        expert_bias: experts have biases (gpt-oss: ``2I`` on gate_up, ``H`` on down).
        activation: expert activation, one of :data:`ACTIVATIONS`.
        swiglu_limit: clamp limit of "swiglu_clamped".
        released_format: weight format of the experts as released (a key of
            :data:`sieve.model.parts.WEIGHT_FORMATS`).
        max_position_embeddings: maximum context (informational).
        n_mtp_layers: MTP layers shipped in the checkpoint (informational; not counted).
        source: where the values came from.
    """

    name: str
    family: str
    n_layers: int
    hidden_size: int
    vocab_size: int
    layer_types: tuple[str, ...]
    attention: GqaAttention | MlaAttention
    n_experts: int
    top_k: int
    moe_intermediate_size: int
    moe_layer_ids: tuple[int, ...]
    n_shared_experts: int = 0
    shared_intermediate_size: int = 0
    dense_intermediate_size: int = 0
    linear_attention: GatedDeltaNet | None = None
    sliding_window: int | None = None
    tie_word_embeddings: bool = False
    router: Router = field(default_factory=Router)
    shared_expert_gate: bool = False
    expert_bias: bool = False
    activation: str = "swiglu"
    swiglu_limit: float | None = None
    released_format: str = "bf16"
    max_position_embeddings: int = 0
    n_mtp_layers: int = 0
    source: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.name, str):
            raise ConfigError(f"model: name must be text, got {self.name!r}")
        who = f"model {self.name!r}"
        for f, hi in (("n_layers", MAX_LAYERS), ("hidden_size", MAX_WIDTH),
                      ("vocab_size", MAX_WIDTH), ("n_experts", MAX_EXPERTS),
                      ("top_k", MAX_EXPERTS), ("moe_intermediate_size", MAX_WIDTH)):
            object.__setattr__(self, f, check_int(who, f, getattr(self, f), lo=1, hi=hi))
        for f, hi in (("n_shared_experts", MAX_EXPERTS), ("shared_intermediate_size", MAX_WIDTH),
                      ("dense_intermediate_size", MAX_WIDTH),
                      ("max_position_embeddings", MAX_CONTEXT), ("n_mtp_layers", MAX_LAYERS)):
            object.__setattr__(self, f, check_int(who, f, getattr(self, f), lo=0, hi=hi))
        object.__setattr__(self, "layer_types", check_sequence(who, "layer_types",
                                                                self.layer_types))
        object.__setattr__(self, "moe_layer_ids", check_sequence(
            who, "moe_layer_ids", self.moe_layer_ids, item=lambda n, x: check_int(who, n, x)))
        if not isinstance(self.attention, (GqaAttention, MlaAttention)):
            raise ConfigError(f"{who}: attention must be GqaAttention or MlaAttention, got "
                              f"{self.attention!r}")
        if len(self.layer_types) != self.n_layers:
            raise ConfigError(f"{who}: layer_types has {len(self.layer_types)} entries for "
                              f"{self.n_layers} layers")
        for t in self.layer_types:
            if t not in LAYER_TYPES:
                raise ConfigError(f"{who}: unknown layer type {t!r} (known: "
                                  f"{choices(LAYER_TYPES)})")
        if self.top_k > self.n_experts:
            raise ConfigError(f"{who}: top_k {self.top_k} > n_experts {self.n_experts}")
        ids = self.moe_layer_ids
        if not ids:
            raise ConfigError(f"{who}: no MoE layer (moe_layer_ids is empty: e.g. "
                              "first_k_dense_replace or decoder_sparse_step leave every layer "
                              "dense); sieve models MoE models")
        if list(ids) != sorted(set(ids)) or any(not 0 <= i < self.n_layers for i in ids):
            raise ConfigError(f"{who}: moe_layer_ids must be sorted, unique and in "
                              f"[0, {self.n_layers}), got {ids}")
        if "gdn" in self.layer_types and self.linear_attention is None:
            raise ConfigError(f"{who}: 'gdn' layers need a linear_attention config")
        mla = isinstance(self.attention, MlaAttention)
        if mla != ("mla" in self.layer_types) or (mla and set(self.layer_types) != {"mla"}):
            raise ConfigError(f"{who}: MLA attention must be used by every layer (layer type "
                              f"'mla') and GQA attention by 'full'/'sliding' layers")
        if self.sliding_window is not None:
            object.__setattr__(self, "sliding_window", check_int(
                who, "sliding_window", self.sliding_window, lo=1, hi=MAX_CONTEXT))
        if "sliding" in self.layer_types and not self.sliding_window:
            raise ConfigError(f"{who}: 'sliding' layers need a positive sliding_window")
        if self.n_shared_experts < 0 or (self.n_shared_experts > 0) != (
                self.shared_intermediate_size > 0):
            raise ConfigError(f"{who}: n_shared_experts and shared_intermediate_size must both "
                              f"be positive or both 0")
        if len(ids) < self.n_layers and self.dense_intermediate_size <= 0:
            raise ConfigError(f"{who}: non-MoE layers need a positive dense_intermediate_size")
        if self.activation not in ACTIVATIONS:
            raise ConfigError(f"{who}: unknown activation {self.activation!r} (known: "
                              f"{choices(ACTIVATIONS)})")
        if self.activation == "swiglu_clamped" and not self.swiglu_limit:
            raise ConfigError(f"{who}: activation 'swiglu_clamped' needs swiglu_limit")
        get_weight_format(self.released_format)

    # ---- structure --------------------------------------------------------------------------

    @property
    def n_moe_layers(self) -> int:
        """Number of layers with a routed-MoE FFN."""
        return len(self.moe_layer_ids)

    @property
    def dense_layer_ids(self) -> tuple[int, ...]:
        """Layers with a dense (non-MoE) FFN."""
        moe = set(self.moe_layer_ids)
        return tuple(i for i in range(self.n_layers) if i not in moe)

    def _layer_type(self, layer: int) -> str:
        if not isinstance(layer, (int, np.integer)) or not 0 <= layer < self.n_layers:
            raise ConfigError(f"model {self.name!r}: layer {layer!r} out of range "
                              f"[0, {self.n_layers})")
        return self.layer_types[layer]

    # ---- parameters -------------------------------------------------------------------------

    def expert_params(self) -> int:
        """Parameters of one routed expert: ``3*H*I`` (+ ``2*I + H`` biases for gpt-oss)."""
        h, i = self.hidden_size, self.moe_intermediate_size
        return 3 * h * i + ((2 * i + h) if self.expert_bias else 0)

    def shared_expert_params(self) -> int:
        """Parameters of one shared expert: ``3*H*I_shared`` (0 without shared experts).

        Qwen's ``shared_expert_gate`` vector (``H`` weights) is counted with the routers in
        :meth:`non_moe_params`, not here.
        """
        return 3 * self.hidden_size * self.shared_intermediate_size

    def mixer_params(self, layer: int) -> int:
        """Parameters of the token mixer (attention or Gated DeltaNet) of ``layer``."""
        if self._layer_type(layer) == "gdn":
            return self.linear_attention.params(self.hidden_size)
        return self.attention.params(self.hidden_size)

    def param_breakdown(self) -> dict[str, int]:
        """Parameter count by component; the values sum to :meth:`total_params`."""
        h, v = self.hidden_size, self.vocab_size
        n_moe = self.n_moe_layers
        return {
            "embedding": v * h,
            "lm_head": 0 if self.tie_word_embeddings else v * h,
            "final_norm": h,
            "layer_norms": 2 * h * self.n_layers,  # input + post-attention RMSNorm per layer
            "mixers": sum(self.mixer_params(i) for i in range(self.n_layers)),
            "routers": n_moe * self.router.params(h, self.n_experts),
            "shared_expert_gates": n_moe * h if self.shared_expert_gate else 0,
            "dense_ffn": len(self.dense_layer_ids) * 3 * h * self.dense_intermediate_size,
            "shared_experts": n_moe * self.n_shared_experts * self.shared_expert_params(),
            "routed_experts": n_moe * self.n_experts * self.expert_params(),
        }

    def non_moe_params(self) -> int:
        """Always-active parameters other than experts (routed and shared experts excluded)."""
        b = self.param_breakdown()
        return sum(b.values()) - b["routed_experts"] - b["shared_experts"]

    def total_params(self, *, include_embedding: bool = True) -> int:
        """All parameters; ``include_embedding=False`` drops the input embedding table.

        With tied embeddings the shared matrix is still counted once (it is the LM head).
        """
        total = sum(self.param_breakdown().values())
        return total if include_embedding else total - self._embedding_only()

    def _embedding_only(self) -> int:
        return 0 if self.tie_word_embeddings else self.vocab_size * self.hidden_size

    def active_params(self, n_active_experts: int | Sequence[int] | np.ndarray | None = None,
                      *, include_embedding: bool = True) -> int:
        """Parameters touched when ``n_active_experts`` distinct routed experts run per layer.

        Args:
            n_active_experts: distinct routed experts activated in each MoE layer: an int
                (same for every MoE layer) or an array of length ``n_moe_layers``. ``None``
                means ``top_k`` (one token).
            include_embedding: count the input embedding table (the LM head always counts).

        Returns:
            ``non_moe + n_moe_layers * n_shared * shared_expert_params + sum(n) * expert_params``.
        """
        n = self._active_counts(n_active_experts)
        shared = self.n_moe_layers * self.n_shared_experts * self.shared_expert_params()
        active = self.non_moe_params() + shared + int(n.sum()) * self.expert_params()
        return active if include_embedding else active - self._embedding_only()

    def act_ratio(self, n_active_experts: int | Sequence[int] | np.ndarray | None = None) -> float:
        """Activated / total parameters, non-MoE included (seed Figure 3's act-ratio)."""
        return self.active_params(n_active_experts) / self.total_params()

    def _active_counts(self, n) -> np.ndarray:
        who = f"model {self.name!r}: n_active_experts"
        if n is None:
            n = self.top_k
        arr = np.asarray(n)
        whole_floats = arr.dtype.kind == "f" and bool(np.all(arr == np.round(arr)))
        if arr.dtype.kind not in "iu" and not whole_floats:
            raise ConfigError(f"{who} must be integers, got {n!r}")
        arr = arr.astype(np.int64)
        if arr.ndim == 0:
            arr = np.full(self.n_moe_layers, int(arr))
        elif arr.shape != (self.n_moe_layers,):
            raise ConfigError(f"{who}: expected an int or {self.n_moe_layers} values (one per "
                              f"MoE layer), got shape {arr.shape}")
        if arr.size and (arr.min() < 0 or arr.max() > self.n_experts):
            raise ConfigError(f"{who} must lie in [0, {self.n_experts}], got "
                              f"{arr.min()}..{arr.max()}")
        return arr

    # ---- bytes ------------------------------------------------------------------------------

    def expert_bytes(self, dtype: str = "bf16") -> int:
        """Bytes of one routed expert stored in weight format ``dtype``.

        ``sum(fmt.matrix_bytes(r, c) for the expert's matrices) + fmt.vector_bytes(biases)``.
        bf16: ``2 * expert_params()``. fp8: 1 byte/weight + a 4-byte scale per 128x128 block.
        mxfp4: 4.25 bits/weight (0.5 byte + 1 scale byte per 32 weights along the input dim).
        Biases (gpt-oss) are BF16 in every format except fp32.
        """
        fmt = get_weight_format(dtype)
        g = self.expert_gemv()
        n = sum(fmt.matrix_bytes(r, c) for _, r, c in g.matrices())
        if self.expert_bias:
            n += fmt.vector_bytes(2 * self.moe_intermediate_size + self.hidden_size)
        return n

    def shared_expert_bytes(self, dtype: str = "bf16") -> int:
        """Bytes of one shared expert in weight format ``dtype`` (0 without shared experts)."""
        g = self.shared_expert_gemv()
        if g is None:
            return 0
        fmt = get_weight_format(dtype)
        return sum(fmt.matrix_bytes(r, c) for _, r, c in g.matrices())

    def weight_bytes(self, expert_dtype: str | None = None, dense_dtype: str = "bf16") -> int:
        """Checkpoint-style bytes: experts (routed + shared) in ``expert_dtype`` (default: the
        released format), everything else at ``dense_dtype`` bytes per parameter.

        Matches gpt-oss as shipped (only experts are MXFP4). For DeepSeek-V3, whose attention and
        dense FFNs are FP8 as well, pass ``dense_dtype="fp8"`` for a lower bound (block scales of
        non-expert matrices are not counted).
        """
        fmt = get_weight_format(expert_dtype or self.released_format)
        dense = get_weight_format(dense_dtype)
        moe = self.n_moe_layers * (self.n_experts * self.expert_bytes(fmt.name)
                                   + self.n_shared_experts * self.shared_expert_bytes(fmt.name))
        return moe + self.non_moe_params() * dense.element_bits // 8

    # ---- expert GEMV shapes -----------------------------------------------------------------

    def expert_gemv(self) -> ExpertGemv:
        """Matrices and activation of one routed expert (see :class:`ExpertGemv`)."""
        clamped = self.activation == "swiglu_clamped"
        return ExpertGemv(self.hidden_size, self.moe_intermediate_size,
                          fused_gate_up=self.family == "gpt_oss", activation=self.activation,
                          bias=self.expert_bias, swiglu_limit=self.swiglu_limit,
                          swiglu_alpha=GPT_OSS_SWIGLU_ALPHA if clamped else None)

    def shared_expert_gemv(self) -> ExpertGemv | None:
        """Matrices of one shared expert (plain SwiGLU, no bias), or None."""
        if not self.n_shared_experts:
            return None
        return ExpertGemv(self.hidden_size, self.shared_intermediate_size, fused_gate_up=False,
                          activation="swiglu")

    # ---- KV cache and recurrent state -------------------------------------------------------

    def kv_bytes_per_token(self, layer: int, dtype: str = "bf16") -> int:
        """KV-cache bytes one token adds to ``layer``.

        full / sliding: ``2 * kv_heads * head_dim * bytes`` (a sliding layer stops growing at
        ``sliding_window`` tokens; see :meth:`kv_bytes`); mla: ``(kv_lora_rank +
        qk_rope_head_dim) * bytes``; gdn: 0 (fixed state, see :meth:`recurrent_state_bytes`).
        """
        if self._layer_type(layer) == "gdn":
            return 0
        return self.attention.kv_elements_per_token() * kv_dtype_bytes(dtype)

    def kv_bytes(self, layer: int, seq_len: int, dtype: str = "bf16") -> int:
        """Per-sequence cache bytes of ``layer`` after ``seq_len`` tokens (state included)."""
        if seq_len < 0:
            raise ConfigError(f"model {self.name!r}: seq_len must be >= 0, got {seq_len}")
        t = self._layer_type(layer)
        if t == "gdn":
            return self.recurrent_state_bytes(layer, dtype) if seq_len else 0
        tokens = min(seq_len, self.sliding_window) if t == "sliding" else seq_len
        return tokens * self.kv_bytes_per_token(layer, dtype)

    def kv_cache_bytes(self, seq_len: int, dtype: str = "bf16") -> int:
        """Per-sequence cache bytes over all layers after ``seq_len`` tokens."""
        return sum(self.kv_bytes(i, seq_len, dtype) for i in range(self.n_layers))

    def state_elements(self, layer: int) -> dict[str, int]:
        """Fixed per-sequence state elements of ``layer``: ``{"ssm": ..., "conv": ...}``."""
        if self._layer_type(layer) != "gdn":
            return {"ssm": 0, "conv": 0}
        la = self.linear_attention
        return {"ssm": la.ssm_state_elements(), "conv": la.conv_state_elements()}

    def recurrent_state_bytes(self, layer: int, dtype: str = "bf16",
                              conv_dtype: str | None = None) -> int:
        """Per-sequence recurrent state of a Gated-DeltaNet ``layer`` (0 for other layers).

        ``ssm_elements * bytes(dtype) + conv_elements * bytes(conv_dtype or dtype)``. vLLM keeps
        the SSM state in fp32 and the conv window in the model dtype; pass ``dtype="fp32",
        conv_dtype="bf16"`` for that layout.
        """
        e = self.state_elements(layer)
        return (e["ssm"] * kv_dtype_bytes(dtype)
                + e["conv"] * kv_dtype_bytes(conv_dtype or dtype))

    # ---- serialisation ----------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable fields plus a ``derived`` summary (ignored by :meth:`from_dict`)."""
        d = dataclasses.asdict(self)
        d["attention"]["kind"] = self.attention.kind
        d["layer_types"] = list(self.layer_types)
        d["moe_layer_ids"] = list(self.moe_layer_ids)
        d["derived"] = {
            "n_moe_layers": self.n_moe_layers,
            "expert_params": self.expert_params(),
            "shared_expert_params": self.shared_expert_params(),
            "non_moe_params": self.non_moe_params(),
            "total_params": self.total_params(),
            "active_params_top_k": self.active_params(),
        }
        return d

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MoeModel:
        """Rebuild a model from :meth:`to_dict` output."""
        d = {k: v for k, v in data.items() if k != "derived"}
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise ConfigError(f"model dict: unknown field(s) {unknown} (known: {choices(known)})")
        att = dict(d["attention"])
        kind = att.pop("kind", "gqa")
        d["attention"] = (MlaAttention if kind == "mla" else GqaAttention)(**att)
        if d.get("linear_attention") is not None:
            d["linear_attention"] = GatedDeltaNet(**d["linear_attention"])
        if d.get("router") is not None:
            d["router"] = Router(**d["router"])
        return cls(**d)


# --------------------------------------------------------------------------------------------
# HF config.json loading
# --------------------------------------------------------------------------------------------


def load_hf_config(path: str | Path, name: str | None = None) -> MoeModel:
    """Load a model from a Hugging Face ``config.json``.

    Supported schemas (:data:`sieve.model.hf_config.FAMILIES`): Mixtral, Qwen3-MoE, Qwen3-Next,
    Qwen3.5-MoE (``text_config`` may nest), gpt-oss, DeepSeek-V3, DeepSeek-V2, OLMoE,
    Qwen2-MoE, Llama 4 (its text model), GLM-4-MoE, Granite-MoE and DBRX; any other
    ``model_type`` with the standard MoE fields goes through the generic reader, and the
    model's ``source`` then names every field it read and every default it assumed.

    Args:
        path: the config.json file.
        name: registry-style name for the model (default: the file's parent directory name,
            or the file stem when that is "config").

    Raises:
        ConfigError: unreadable or malformed file, unknown architecture (the message lists the
            supported ones), missing or invalid field (the message names the file and field).
    """
    p = Path(path)
    who = f"model config {str(p)!r}"
    data = parse_document(read_text(p, "model config"), p, "model config", kind="json")
    if not isinstance(data, dict):
        raise ConfigError(f"{who}: expected a JSON object at top level")
    if name is None:
        name = p.parent.name if p.stem == "config" and p.parent.name else p.stem
    try:
        kwargs = parse_hf_config(data, str(p))  # its errors name the file and the field
    except ConfigError as exc:  # the parts' (attention, router) errors do not
        if str(exc).startswith("model config "):
            raise
        raise ConfigError(f"{who}: {exc}") from None
    note = kwargs.pop("source_note", None)
    try:
        return MoeModel(name=name, source=f"{p} ({note})" if note else str(p), **kwargs)
    except ConfigError as exc:
        raise ConfigError(f"{who}: {exc}") from None


#: Registry of presets, keyed by lower-case name (values and sources: sieve/model/presets.py).
MODELS: dict[str, MoeModel] = {k: MoeModel(name=k, **v) for k, v in PRESET_FIELDS.items()}
#: Alternative names that resolve to a preset (same architecture and config).
ALIASES: dict[str, str] = {"deepseek-r1": "deepseek-v3"}  # R1 config = V3 config (§A.1 notes)


def get_model(name: str | Path) -> MoeModel:
    """Return a preset by name (or alias), or load a ``config.json`` when given a path.

    A :class:`~pathlib.Path`, a string ending in ``.json`` or containing a path separator is a
    path; a directory means its ``config.json``. The alias ``deepseek-r1`` returns the
    ``deepseek-v3`` preset object itself.

    Raises:
        ConfigError: unknown name; the message lists the presets and aliases.
    """
    if isinstance(name, Path) or (isinstance(name, str) and (
            name.lower().endswith(".json") or "/" in name or "\\" in name)):
        p = Path(name)
        return load_hf_config(p / "config.json" if p.is_dir() else p)
    table = {**MODELS, **{a: MODELS[t] for a, t in ALIASES.items()}}
    return lookup(table, name, "model")
