"""Hugging Face ``config.json`` schemas of the supported MoE families: parse and write.

:func:`parse_hf_config` turns a config dict into :class:`sieve.model.moe.MoeModel` keyword
arguments; :func:`to_hf_config` writes a model back in its family's schema (used to record a
model in a form other tools read, and to test the parser by round trip).

The family is chosen by ``model_type`` (or, without it, by ``architectures[0]``). Keys a family
does not read (token ids, RoPE settings, dropout, ...) are ignored: HF configs carry many runtime
fields that do not change sizes. Structural fields with values sieve cannot model (an unknown
layer type, a non-SiLU expert activation, an unknown quantization method, Qwen3 sliding-window
attention, ...) raise :class:`~sieve.errors.ConfigError` naming the file and the field.
Field names and layer rules follow HF ``transformers`` (``configuration_*`` / ``modeling_*`` of
each family).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sieve.errors import ConfigError, choices
from sieve.limits import MAX_CONTEXT, MAX_EXPERTS, MAX_LAYERS
from sieve.model.parts import GatedDeltaNet, GqaAttention, MlaAttention, Router
from sieve.validate import check_number

__all__ = ["ARCHITECTURES", "FAMILIES", "GENERIC_FIELDS", "parse_hf_config", "to_hf_config"]

_MISSING = object()

#: Upper bound of an integer field, checked as it is read, before any list is built from it
#: (sieve.limits; a config with 10^12 layers must not build 10^12 layer types). Fields that
#: count layers are bounded by MAX_LAYERS, expert counts by MAX_EXPERTS; every other integer
#: (a width, a head count, a context length) by MAX_CONTEXT here, and the model's own checks
#: then hold widths to MAX_WIDTH.
_LAYER_FIELDS = ("num_hidden_layers", "n_layers", "num_layers", "n_layer",
                 "first_k_dense_replace", "decoder_sparse_step", "moe_layer_freq",
                 "interleave_moe_layer_step", "mtp_num_hidden_layers", "num_nextn_predict_layers",
                 "full_attention_interval")
_EXPERT_FIELDS = ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
                  "n_experts", "num_experts_per_tok", "experts_per_token", "moe_top_k", "top_k",
                  "n_shared_experts", "num_shared_experts", "n_group", "topk_group")


def _field_max(key: str) -> int:
    if key in _LAYER_FIELDS:
        return MAX_LAYERS
    if key in _EXPERT_FIELDS:
        return MAX_EXPERTS
    return MAX_CONTEXT


class _Fields:
    """Typed access to one config dict; every error names the file and the field."""

    def __init__(self, data: Mapping[str, Any], source: str, fallback: Mapping[str, Any] = ()):
        self.data, self.source, self.fallback = data, source, dict(fallback)

    def error(self, key: str, msg: str) -> ConfigError:
        return ConfigError(f"model config {self.source!r}: field {key!r}: {msg}")

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        if key in self.data:
            return self.data[key]
        if key in self.fallback:
            return self.fallback[key]
        if default is _MISSING:
            raise ConfigError(f"model config {self.source!r}: missing required field {key!r}")
        return default

    def int(self, key: str, default: Any = _MISSING, *, minimum: int = 1) -> int:
        v = self.raw(key, default)
        if v is None and default is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise self.error(key, f"expected an integer, got {v!r}")
        if v < minimum:
            raise self.error(key, f"must be >= {minimum}, got {v}")
        hi = _field_max(key)
        if v > hi:
            raise self.error(key, f"must be <= {hi} (sieve.limits), got {v}")
        return v

    def bool(self, key: str, default: Any = _MISSING) -> bool:
        v = self.raw(key, default)
        if not isinstance(v, bool):
            raise self.error(key, f"expected true/false, got {v!r}")
        return v

    def number(self, key: str, default: Any = _MISSING) -> float:
        v = self.raw(key, default)
        try:
            return check_number("", "", v, lo=None)
        except ConfigError:
            raise self.error(key, f"expected a finite number, got {v!r}") from None

    def one_of(self, key: str, valid: tuple, default: Any = _MISSING) -> Any:
        v = self.raw(key, default)
        if not isinstance(v, (str, int, float)) or isinstance(v, bool) or v not in valid:
            raise self.error(key, f"unsupported value {v!r} (supported: "
                                  f"{choices(str(x) for x in valid)})")
        return v

    def int_list(self, key: str, default: Any = _MISSING) -> list[int]:
        v = self.raw(key, default)
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, int)
                                          for x in v):
            raise self.error(key, f"expected a list of integers, got {v!r}")
        if len(v) > MAX_LAYERS:
            raise self.error(key, f"{len(v)} entries; at most {MAX_LAYERS} (sieve.limits)")
        return v


# --------------------------------------------------------------------------------------------
# Shared pieces
# --------------------------------------------------------------------------------------------

_HF_LAYER_TYPES = {"full_attention": "full", "sliding_attention": "sliding",
                   "linear_attention": "gdn"}


def _layer_types(f: _Fields, n: int, allowed: tuple[str, ...], default: tuple[str, ...]):
    raw = f.raw("layer_types", None)
    if raw is None:
        return default
    if not isinstance(raw, list) or len(raw) != n:
        raise f.error("layer_types", f"expected a list of {n} layer types (num_hidden_layers)")
    for t in raw:
        if t not in allowed:
            raise f.error("layer_types", f"unsupported layer type {t!r} (supported: "
                                         f"{choices(allowed)})")
    return tuple(_HF_LAYER_TYPES[t] for t in raw)


def _common(f: _Fields, *, experts_key: str, moe_i_key: str,
            top_k_key: str = "num_experts_per_tok") -> dict[str, Any]:
    f.one_of("hidden_act", ("silu",), "silu")
    return dict(
        n_layers=f.int("num_hidden_layers"),
        hidden_size=f.int("hidden_size"),
        vocab_size=f.int("vocab_size"),
        n_experts=f.int(experts_key),
        top_k=f.int(top_k_key),
        moe_intermediate_size=f.int(moe_i_key),
        tie_word_embeddings=f.bool("tie_word_embeddings", False),
        max_position_embeddings=f.int("max_position_embeddings", 0, minimum=0),
    )


def _head_dim(f: _Fields, hidden: int, heads: int) -> int:
    hd = f.raw("head_dim", None)
    if hd is None:  # HF default: hidden_size // num_attention_heads, which must be exact
        if hidden % heads:
            raise f.error("head_dim", f"absent, and hidden_size {hidden} is not a multiple of "
                                      f"num_attention_heads {heads}; give head_dim")
        return hidden // heads
    return f.int("head_dim")


def _kv_heads(f: _Fields, heads: int) -> int:
    kv = f.int("num_key_value_heads")
    if heads % kv:
        raise f.error("num_key_value_heads", f"{kv} does not divide num_attention_heads "
                                             f"{heads} (each KV head serves a whole group)")
    return kv


def _gqa(f: _Fields, hidden: int, **flags: bool) -> GqaAttention:
    """The GQA attention of the HF fields every GQA family shares: num_attention_heads,
    num_key_value_heads and head_dim (HF's default hidden / heads when absent)."""
    heads = f.int("num_attention_heads")
    return GqaAttention(heads, _kv_heads(f, heads), _head_dim(f, hidden, heads), **flags)


def _released_format(f: _Fields, default: str = "bf16") -> str:
    q = f.raw("quantization_config", None)
    if q is None:
        return default
    if not isinstance(q, Mapping):
        raise f.error("quantization_config", "expected an object")
    method = q.get("quant_method")
    if method == "mxfp4":
        return "mxfp4"
    if method == "fp8" and list(q.get("weight_block_size", [128, 128])) == [128, 128]:
        return "fp8"
    raise f.error("quantization_config", f"unsupported quant_method {method!r} / block size "
                  f"(supported: fp8 with weight_block_size [128, 128], mxfp4)")


def _qwen_moe_layers(f: _Fields, n: int) -> tuple[tuple[int, ...], int]:
    """HF Qwen rule: MoE iff not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0."""
    step = f.int("decoder_sparse_step", 1)
    dense = set(f.int_list("mlp_only_layers", []))
    bad = sorted(i for i in dense if not 0 <= i < n)
    if bad:
        raise f.error("mlp_only_layers", f"layer {bad[0]} out of range [0, {n}) "
                                         f"(num_hidden_layers {n})")
    ids = tuple(i for i in range(n) if i not in dense and (i + 1) % step == 0)
    return ids, (f.int("intermediate_size") if len(ids) < n else 0)


# --------------------------------------------------------------------------------------------
# Families
# --------------------------------------------------------------------------------------------


def _mixtral(f: _Fields) -> dict[str, Any]:
    kw = _common(f, experts_key="num_local_experts", moe_i_key="intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    window = f.raw("sliding_window", None)
    if window is not None:
        window = f.int("sliding_window")
    return dict(kw, family="mixtral",
                attention=_gqa(f, h),
                layer_types=("sliding" if window else "full",) * n, sliding_window=window,
                moe_layer_ids=tuple(range(n)), router=Router("softmax", norm_topk_prob=True))


def _qwen3_moe(f: _Fields) -> dict[str, Any]:
    kw = _common(f, experts_key="num_experts", moe_i_key="moe_intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    if f.bool("use_sliding_window", False):
        raise f.error("use_sliding_window", "sliding-window Qwen3-MoE is not supported")
    bias = f.bool("attention_bias", False)
    ids, dense_i = _qwen_moe_layers(f, n)
    return dict(kw, family="qwen3_moe",
                attention=_gqa(f, h, qkv_bias=bias, o_bias=bias, qk_norm=True),
                layer_types=("full",) * n, moe_layer_ids=ids, dense_intermediate_size=dense_i,
                router=Router("softmax", norm_topk_prob=f.bool("norm_topk_prob", False)))


def _qwen_hybrid(f: _Fields, family: str) -> dict[str, Any]:
    kw = _common(f, experts_key="num_experts", moe_i_key="moe_intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    interval = f.int("full_attention_interval", 4)
    default = tuple("full" if (i + 1) % interval == 0 else "gdn" for i in range(n))
    layer_types = _layer_types(f, n, ("full_attention", "linear_attention"), default)
    if family == "qwen3_next":
        ids, dense_i = _qwen_moe_layers(f, n)
        gate, norm = True, f.bool("norm_topk_prob", True)
    else:  # HF Qwen3_5MoeDecoderLayer: a MoE block in every layer, router always renormalises
        if f.int_list("mlp_only_layers", []):
            raise f.error("mlp_only_layers", "Qwen3.5-MoE has a MoE block in every layer")
        ids, dense_i = tuple(range(n)), 0
        gate, norm = f.bool("attn_output_gate", True), True
    shared_i = f.int("shared_expert_intermediate_size", 0, minimum=0)
    return dict(kw, family=family, layer_types=layer_types,
                attention=_gqa(f, h, qk_norm=True, output_gate=gate),
                linear_attention=GatedDeltaNet(
                    f.int("linear_num_key_heads"), f.int("linear_num_value_heads"),
                    f.int("linear_key_head_dim"), f.int("linear_value_head_dim"),
                    f.int("linear_conv_kernel_dim", minimum=2)),
                moe_layer_ids=ids, dense_intermediate_size=dense_i,
                n_shared_experts=1 if shared_i else 0, shared_intermediate_size=shared_i,
                shared_expert_gate=bool(shared_i), router=Router("softmax", norm_topk_prob=norm),
                n_mtp_layers=f.int("mtp_num_hidden_layers", 0, minimum=0))


def _gpt_oss(f: _Fields) -> dict[str, Any]:
    # gpt-oss configs carry both num_experts_per_tok and experts_per_token; either will do.
    key = "num_experts_per_tok" if "num_experts_per_tok" in f.data else "experts_per_token"
    kw = _common(f, experts_key="num_local_experts", moe_i_key="intermediate_size",
                 top_k_key=key)
    n = kw["n_layers"]
    if f.int("experts_per_token", kw["top_k"]) != kw["top_k"]:
        raise f.error("experts_per_token", f"disagrees with num_experts_per_tok {kw['top_k']}")
    bias = f.bool("attention_bias", True)
    default = tuple("sliding" if i % 2 == 0 else "full" for i in range(n))
    layer_types = _layer_types(f, n, ("full_attention", "sliding_attention"), default)
    window = f.int("sliding_window") if "sliding" in layer_types else None
    return dict(kw, family="gpt_oss", layer_types=layer_types, sliding_window=window,
                attention=GqaAttention(heads := f.int("num_attention_heads"),
                                       _kv_heads(f, heads), f.int("head_dim"), qkv_bias=bias,
                                       o_bias=bias, sinks=True),
                moe_layer_ids=tuple(range(n)), expert_bias=True, activation="swiglu_clamped",
                swiglu_limit=f.number("swiglu_limit"),
                router=Router("softmax", norm_topk_prob=True, bias=True),
                released_format=_released_format(f))


def _deepseek_v3(f: _Fields, family: str = "deepseek_v3") -> dict[str, Any]:
    # DeepSeek-V2 (remote-code modeling_deepseek, HF modeling_deepseek_v2) is the same block
    # with a softmax router and greedy or group-limited top-k (its configs' defaults differ)
    v2 = family == "deepseek_v2"
    kw = _common(f, experts_key="n_routed_experts", moe_i_key="moe_intermediate_size")
    n = kw["n_layers"]
    if f.bool("attention_bias", False):
        raise f.error("attention_bias", "MLA with biases is not supported")
    first_dense = f.int("first_k_dense_replace", 0, minimum=0)
    freq = f.int("moe_layer_freq", 1)
    ids = tuple(i for i in range(n) if i >= first_dense and i % freq == 0)
    n_shared = f.int("n_shared_experts", 0, minimum=0)
    # "gready": the spelling of the original DeepSeek-V2 remote code's default
    method = f.one_of("topk_method", ("noaux_tc", "greedy", "gready", "group_limited_greedy"),
                      "greedy" if v2 else "noaux_tc")
    return dict(kw, family=family, layer_types=("mla",) * n,
                attention=MlaAttention(
                    f.int("num_attention_heads"), f.int("q_lora_rank", None) or 0,
                    f.int("kv_lora_rank"), f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"),
                    f.int("v_head_dim")),
                moe_layer_ids=ids,
                dense_intermediate_size=f.int("intermediate_size") if len(ids) < n else 0,
                n_shared_experts=n_shared,
                shared_intermediate_size=kw["moe_intermediate_size"] if n_shared else 0,
                router=Router(f.one_of("scoring_func", ("sigmoid", "softmax"),
                                       "softmax" if v2 else "sigmoid"),
                              norm_topk_prob=f.bool("norm_topk_prob", not v2),
                              bias=method == "noaux_tc",
                              n_group=f.int("n_group", 1), topk_group=f.int("topk_group", 1),
                              routed_scaling_factor=f.number("routed_scaling_factor", 1.0)),
                released_format=_released_format(f),
                n_mtp_layers=f.int("num_nextn_predict_layers", 0, minimum=0))


def _olmoe(f: _Fields) -> dict[str, Any]:
    # HF modeling_olmoe: q/k/v/o biased by attention_bias, q/k RMSNorm over the projections'
    # full width (counted here per head, 2*head_dim: 61 k parameters fewer for OLMoE-1B-7B),
    # a MoE block in every layer, softmax router, no shared expert.
    kw = _common(f, experts_key="num_experts", moe_i_key="intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    bias = f.bool("attention_bias", False)
    return dict(kw, family="olmoe", layer_types=("full",) * n,
                attention=_gqa(f, h, qkv_bias=bias, o_bias=bias, qk_norm=True),
                moe_layer_ids=tuple(range(n)),
                router=Router("softmax", norm_topk_prob=f.bool("norm_topk_prob", False)))


def _qwen2_moe(f: _Fields) -> dict[str, Any]:
    # HF modeling_qwen2_moe: q/k/v biased (qkv_bias, default true), no q/k norm; one shared
    # expert of shared_expert_intermediate_size behind a sigmoid gate (Linear(H, 1)).
    kw = _common(f, experts_key="num_experts", moe_i_key="moe_intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    if f.bool("use_sliding_window", False):
        raise f.error("use_sliding_window", "sliding-window Qwen2-MoE is not supported")
    ids, dense_i = _qwen_moe_layers(f, n)
    shared_i = f.int("shared_expert_intermediate_size", 0, minimum=0)
    return dict(kw, family="qwen2_moe", layer_types=("full",) * n,
                attention=_gqa(f, h, qkv_bias=f.bool("qkv_bias", True)),
                moe_layer_ids=ids, dense_intermediate_size=dense_i,
                n_shared_experts=1 if shared_i else 0, shared_intermediate_size=shared_i,
                shared_expert_gate=bool(shared_i),
                router=Router("softmax", norm_topk_prob=f.bool("norm_topk_prob", False)))


def _llama4(f: _Fields) -> dict[str, Any]:
    # HF modeling_llama4 (text model): MoE in the layers of moe_layers (default every
    # interleave_moe_layer_step-th), dense layers of intermediate_size_mlp; each MoE block has
    # one shared expert of intermediate_size beside the routed ones (sigmoid of the top-k
    # logits scales the expert input, no renormalisation); q/k L2 norm without weights.
    # Attention: layers with RoPE (no_rope_layers[i] = 1; default all but every 4th) attend
    # within chunks of attention_chunk_size tokens, taken here as a window of that size (the
    # same KV reads until a context crosses a chunk boundary, an upper bound after it).
    kw = _common(f, experts_key="num_local_experts", moe_i_key="intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    step = f.int("interleave_moe_layer_step", 1)
    ids = f.raw("moe_layers", None)
    if ids is None:
        ids = list(range(step - 1, n, step))
    else:
        ids = f.int_list("moe_layers")
        if any(not 0 <= i < n for i in ids):
            raise f.error("moe_layers", f"layer ids must lie in [0, {n})")
    ids = tuple(sorted(set(ids)))
    rope = f.raw("no_rope_layers", None) or [int((i + 1) % 4 != 0) for i in range(n)]
    if not isinstance(rope, list) or len(rope) != n or any(x not in (0, 1) for x in rope):
        raise f.error("no_rope_layers", f"expected {n} flags (1 = RoPE and chunked "
                                        "attention, 0 = global NoPE layer)")
    chunk = f.raw("attention_chunk_size", None)
    chunk = f.int("attention_chunk_size") if chunk is not None else None
    types = tuple("sliding" if chunk and r else "full" for r in rope)
    bias = f.bool("attention_bias", False)
    return dict(kw, family="llama4", layer_types=types,
                sliding_window=chunk if "sliding" in types else None,
                attention=_gqa(f, h, qkv_bias=bias, o_bias=bias),
                moe_layer_ids=ids,
                dense_intermediate_size=(f.int("intermediate_size_mlp") if len(ids) < n
                                         else 0),
                n_shared_experts=1, shared_intermediate_size=kw["moe_intermediate_size"],
                router=Router("sigmoid", norm_topk_prob=False))


def _glm4_moe(f: _Fields) -> dict[str, Any]:
    # HF modeling_glm4_moe: DeepSeek-V3's MoE (sigmoid router with e_score_correction_bias,
    # group-limited top-k, n_shared_experts * moe_intermediate_size shared MLP, the first
    # first_k_dense_replace layers dense) under GQA attention with q/k/v biases
    # (attention_bias) and optional per-head q/k RMSNorm (use_qk_norm).
    kw = _common(f, experts_key="n_routed_experts", moe_i_key="moe_intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    first_dense = f.int("first_k_dense_replace", 1, minimum=0)
    ids = tuple(range(min(first_dense, n), n))
    n_shared = f.int("n_shared_experts", 1, minimum=0)
    return dict(kw, family="glm4_moe", layer_types=("full",) * n,
                attention=_gqa(f, h, qkv_bias=f.bool("attention_bias", False),
                                       qk_norm=f.bool("use_qk_norm", False)),
                moe_layer_ids=ids,
                dense_intermediate_size=f.int("intermediate_size") if len(ids) < n else 0,
                n_shared_experts=n_shared,
                shared_intermediate_size=kw["moe_intermediate_size"] if n_shared else 0,
                router=Router("sigmoid", norm_topk_prob=f.bool("norm_topk_prob", True),
                              bias=True, n_group=f.int("n_group", 1),
                              topk_group=f.int("topk_group", 1),
                              routed_scaling_factor=f.number("routed_scaling_factor", 1.0)),
                released_format=_released_format(f),
                n_mtp_layers=f.int("num_nextn_predict_layers", 0, minimum=0))


def _granitemoe(f: _Fields) -> dict[str, Any]:
    # HF modeling_granitemoe: experts as input_linear (2I x H, gate and up) and output_linear
    # (H x I), router Linear(H, E) then softmax over the top-k logits (= renormalised top-k);
    # the embedding/residual/logit multipliers do not change sizes.
    kw = _common(f, experts_key="num_local_experts", moe_i_key="intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    bias = f.bool("attention_bias", False)
    return dict(kw, family="granitemoe", layer_types=("full",) * n,
                attention=_gqa(f, h, qkv_bias=bias, o_bias=bias),
                moe_layer_ids=tuple(range(n)), router=Router("softmax", norm_topk_prob=True))


def _dbrx(f: _Fields) -> dict[str, Any]:
    # HF modeling_dbrx: fused Wqkv and out_proj without biases, GQA with attn_config.kv_n_heads,
    # experts w1/v1/w2 (gated SiLU) of ffn_config.ffn_hidden_size, softmax router whose top-k
    # weights are renormalised (moe_normalize_expert_weights), LayerNorms without bias.
    attn, ffn = f.raw("attn_config"), f.raw("ffn_config")
    for key, sub in (("attn_config", attn), ("ffn_config", ffn)):
        if not isinstance(sub, Mapping):
            raise f.error(key, "expected an object")
    a = _Fields(attn, f.source + " attn_config")
    e = _Fields(ffn, f.source + " ffn_config")
    n, h = f.int("n_layers"), f.int("d_model")
    heads = f.int("n_heads")
    if h % heads:
        raise f.error("n_heads", f"d_model {h} is not a multiple of n_heads {heads}")
    kv = a.int("kv_n_heads", heads)
    if heads % kv:
        raise a.error("kv_n_heads", f"{kv} does not divide n_heads {heads}")
    act = e.raw("ffn_act_fn", {"name": "silu"})
    act = act.get("name") if isinstance(act, Mapping) else act
    if act != "silu":
        raise e.error("ffn_act_fn", f"unsupported activation {act!r} (supported: silu)")
    norm = e.raw("moe_normalize_expert_weights", 1.0)  # a p-norm of the top-k; None: off
    return dict(family="dbrx", n_layers=n, hidden_size=h, vocab_size=f.int("vocab_size"),
                n_experts=e.int("moe_num_experts"), top_k=e.int("moe_top_k"),
                moe_intermediate_size=e.int("ffn_hidden_size"),
                tie_word_embeddings=f.bool("tie_word_embeddings", False),
                max_position_embeddings=f.int("max_seq_len", 0, minimum=0),
                layer_types=("full",) * n,
                attention=GqaAttention(heads, kv, h // heads),
                moe_layer_ids=tuple(range(n)),
                router=Router("softmax", norm_topk_prob=norm is not None))


class _Recorder(_Fields):
    """:class:`_Fields` that remembers every field it read and every default it assumed (the
    generic reader reports both)."""

    def __init__(self, data: Mapping[str, Any], source: str, fallback: Mapping[str, Any] = ()):
        super().__init__(data, source, fallback)
        self.read: dict[str, Any] = {}
        self.assumed: dict[str, str] = {}

    def has(self, key: str) -> bool:
        return key in self.data or key in self.fallback

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        if self.has(key):
            v = super().raw(key)
            self.read[key] = v
            return v
        if default is _MISSING:
            raise ConfigError(f"model config {self.source!r}: missing required field {key!r} "
                              "(generic MoE reader)")
        self.assumed.setdefault(key, repr(default))
        return default

    def pick(self, *keys: str) -> str:
        """The first of ``keys`` the config has (else the first, so its absence is named)."""
        return next((k for k in keys if self.has(k)), keys[0])

    def assume(self, key: str, why: str) -> None:
        self.assumed[key] = why


#: Field names the generic reader accepts for each quantity, in order of preference (those of
#: the HF families above, and the common names of other code bases).
GENERIC_FIELDS: dict[str, tuple[str, ...]] = {
    "layers": ("num_hidden_layers", "n_layers", "num_layers"),
    "hidden": ("hidden_size", "d_model", "n_embd"),
    "heads": ("num_attention_heads", "n_heads", "n_head"),
    "kv_heads": ("num_key_value_heads", "n_kv_heads", "num_kv_heads"),
    "experts": ("num_experts", "n_routed_experts", "num_local_experts", "moe_num_experts",
                "n_experts"),
    "top_k": ("num_experts_per_tok", "experts_per_token", "moe_top_k", "top_k"),
    "expert_intermediate": ("moe_intermediate_size", "expert_intermediate_size",
                            "intermediate_size"),
}


def _generic(f: _Recorder) -> dict[str, Any]:
    """Any config with the standard MoE fields (:data:`GENERIC_FIELDS`): GQA or MLA
    attention in every layer, SwiGLU experts, optional shared experts and leading or
    interleaved dense layers. Everything it cannot know (sliding windows, norm widths, gates
    other than a shared-expert gate) it assumes, and says so."""
    g = GENERIC_FIELDS
    f.one_of("hidden_act", ("silu",), "silu")
    n = f.int(f.pick(*g["layers"]))
    h = f.int(f.pick(*g["hidden"]))
    i_key = f.pick(*g["expert_intermediate"])
    moe_i = f.int(i_key)
    if i_key == "intermediate_size":
        f.assume("moe_intermediate_size", "= intermediate_size (no separate expert width)")
    first_dense = f.int("first_k_dense_replace", 0, minimum=0)
    step_key = f.pick("moe_layer_freq", "decoder_sparse_step", "interleave_moe_layer_step")
    step = f.int(step_key, 1)
    dense = set(f.int_list("mlp_only_layers", []))
    ids = tuple(i for i in range(n) if i >= first_dense and i not in dense
                and (i % step == 0 if step_key == "moe_layer_freq" else (i + 1) % step == 0))
    dense_i = 0
    if len(ids) < n:
        if i_key == "intermediate_size":
            raise f.error("intermediate_size", "is the expert width here (no "
                          "moe_intermediate_size), so the dense layers have no width: give "
                          "moe_intermediate_size")
        dense_i = f.int("intermediate_size")
    n_shared = f.int("n_shared_experts", 0, minimum=0)
    shared_i = f.int("shared_expert_intermediate_size", 0, minimum=0)
    if shared_i and not n_shared:
        n_shared = 1
        f.assume("n_shared_experts", "1 (shared_expert_intermediate_size is given)")
    elif n_shared and not shared_i:
        shared_i = moe_i
        f.assume("shared_expert_intermediate_size", "= the expert width, per shared expert")
    gate = f.bool("shared_expert_gate", False) if n_shared else False
    heads = f.int(f.pick(*g["heads"]))
    if f.has("kv_lora_rank"):  # multi-head latent attention (DeepSeek's field names)
        attention = MlaAttention(heads, f.int("q_lora_rank", None) or 0, f.int("kv_lora_rank"),
                                 f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"),
                                 f.int("v_head_dim"))
        types = ("mla",) * n
    else:
        kv_key = f.pick(*g["kv_heads"])
        if f.has(kv_key):
            kv = f.int(kv_key)
        else:
            kv = heads
            f.assume(kv_key, f"{heads} (= the query heads: multi-head attention)")
        if heads % kv:
            raise f.error(kv_key, f"{kv} does not divide the {heads} query heads")
        if f.has("head_dim"):
            hd = f.int("head_dim")
        else:
            if h % heads:
                raise f.error("head_dim", f"absent, and {h} is not a multiple of {heads} heads")
            hd = h // heads
            f.assume("head_dim", f"{hd} (= hidden size / query heads)")
        bias = f.bool("attention_bias", False)
        attention = GqaAttention(heads, kv, hd, qkv_bias=bias, o_bias=bias,
                                 qk_norm=f.bool("use_qk_norm", False))
        types = ("full",) * n
        f.assume("layer_types", "full attention in every layer (sliding or chunked windows "
                                "are not read by the generic reader)")
    scoring = f.one_of("scoring_func", ("softmax", "sigmoid"), "softmax")
    method = f.raw("topk_method", None)
    return dict(
        family="generic", n_layers=n, hidden_size=h, vocab_size=f.int("vocab_size"),
        n_experts=f.int(f.pick(*g["experts"])), top_k=f.int(f.pick(*g["top_k"])),
        moe_intermediate_size=moe_i, tie_word_embeddings=f.bool("tie_word_embeddings", False),
        max_position_embeddings=f.int("max_position_embeddings", 0, minimum=0),
        layer_types=types, attention=attention, moe_layer_ids=ids,
        dense_intermediate_size=dense_i, n_shared_experts=n_shared,
        shared_intermediate_size=shared_i if n_shared else 0, shared_expert_gate=gate,
        router=Router(scoring, norm_topk_prob=f.bool("norm_topk_prob", False),
                      bias=method == "noaux_tc", n_group=f.int("n_group", 1),
                      topk_group=f.int("topk_group", 1),
                      routed_scaling_factor=f.number("routed_scaling_factor", 1.0)),
        released_format=_released_format(f))


def generic_report(f: _Recorder) -> str:
    """One line: what the generic reader read and what it assumed."""
    read = ", ".join(f"{k}={v!r}" for k, v in f.read.items())
    assumed = ", ".join(f"{k}: {v}" for k, v in f.assumed.items()) or "nothing"
    return f"generic MoE reader; read {read}; assumed {assumed}"


#: Supported ``model_type`` values -> parser.
FAMILIES: dict[str, Callable[[_Fields], dict[str, Any]]] = {
    "mixtral": _mixtral,
    "qwen3_moe": _qwen3_moe,
    "qwen3_next": lambda f: _qwen_hybrid(f, "qwen3_next"),
    "qwen3_5_moe": lambda f: _qwen_hybrid(f, "qwen3_5_moe"),
    "qwen3_5_moe_text": lambda f: _qwen_hybrid(f, "qwen3_5_moe"),
    "gpt_oss": _gpt_oss,
    "deepseek_v3": _deepseek_v3,
    "deepseek_v2": lambda f: _deepseek_v3(f, "deepseek_v2"),
    "olmoe": _olmoe,
    "qwen2_moe": _qwen2_moe,
    "llama4": _llama4,
    "llama4_text": _llama4,
    "glm4_moe": _glm4_moe,
    "granitemoe": _granitemoe,
    "dbrx": _dbrx,
}
#: ``architectures[0]`` -> ``model_type``, used when ``model_type`` is absent.
ARCHITECTURES: dict[str, str] = {
    "MixtralForCausalLM": "mixtral",
    "Qwen3MoeForCausalLM": "qwen3_moe",
    "Qwen3NextForCausalLM": "qwen3_next",
    "Qwen3_5MoeForConditionalGeneration": "qwen3_5_moe",
    "Qwen3_5MoeForCausalLM": "qwen3_5_moe",
    "GptOssForCausalLM": "gpt_oss",
    "DeepseekV3ForCausalLM": "deepseek_v3",
    "DeepseekV2ForCausalLM": "deepseek_v2",
    "OlmoeForCausalLM": "olmoe",
    "Qwen2MoeForCausalLM": "qwen2_moe",
    "Llama4ForConditionalGeneration": "llama4",
    "Llama4ForCausalLM": "llama4_text",
    "Glm4MoeForCausalLM": "glm4_moe",
    "GraniteMoeForCausalLM": "granitemoe",
    "DbrxForCausalLM": "dbrx",
}


def parse_hf_config(data: Mapping[str, Any], source: str) -> dict[str, Any]:
    """Map a config.json dict to :class:`~sieve.model.moe.MoeModel` keyword arguments.

    A nested ``text_config`` (Qwen3.5) is read first, falling back to top-level keys (the
    Qwen3.5 config keeps ``tie_word_embeddings`` at top level).

    Raises:
        ConfigError: unknown architecture (lists the supported ones) or a missing/invalid field
            (names ``source`` and the field).
    """
    text = data.get("text_config")
    if text is not None and not isinstance(text, Mapping):
        raise ConfigError(f"model config {source!r}: field 'text_config': expected an object")
    model_type = (text or {}).get("model_type", data.get("model_type"))
    if model_type is None:
        archs = data.get("architectures") or [None]
        arch = archs[0] if isinstance(archs, list) else None
        model_type = ARCHITECTURES.get(arch) if isinstance(arch, str) else None
        if model_type is None:
            raise ConfigError(f"model config {source!r}: no 'model_type' and unknown "
                              f"'architectures' {data.get('architectures')!r} (supported "
                              f"architectures: {choices(ARCHITECTURES)})")
    if not isinstance(model_type, str):
        raise ConfigError(f"model config {source!r}: unsupported model_type {model_type!r} "
                          f"(expected text; supported: {choices(FAMILIES)})")
    if model_type not in FAMILIES:
        # any other MoE config with the standard fields: the generic reader, which reports
        # every field it read and every default it assumed (``source_note``)
        base = text if text is not None else data
        if not any(k in base for k in GENERIC_FIELDS["experts"]):
            raise ConfigError(f"model config {source!r}: unsupported model_type "
                              f"{model_type!r} and no expert count field for the generic MoE "
                              f"reader (one of {', '.join(GENERIC_FIELDS['experts'])}; "
                              f"supported model types: {choices(FAMILIES)})")
        rec = _Recorder(text, source, data) if text is not None else _Recorder(data, source)
        kw = _generic(rec)
        kw["source_note"] = f"model_type {model_type!r}: {generic_report(rec)}"
        return kw
    f = _Fields(text, source, data) if text is not None else _Fields(data, source)
    return FAMILIES[model_type](f)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


#: Families :func:`to_hf_config` writes.
WRITERS = ("mixtral", "qwen3_moe", "qwen3_next", "qwen3_5_moe", "gpt_oss", "deepseek_v3")


def to_hf_config(model) -> dict[str, Any]:
    """Write ``model`` as a config.json dict of its family's schema (sizes only): the presets'
    families (``WRITERS``); the others are read-only here."""
    m, a = model, model.attention
    if m.family not in WRITERS:
        raise ConfigError(f"model {m.name!r}: cannot write family {m.family!r} (supported: "
                          f"{choices(WRITERS)})")
    hf_types = {"full": "full_attention", "sliding": "sliding_attention",
                "gdn": "linear_attention"}
    base = {"num_hidden_layers": m.n_layers, "hidden_size": m.hidden_size,
            "vocab_size": m.vocab_size, "num_experts_per_tok": m.top_k, "hidden_act": "silu",
            "tie_word_embeddings": m.tie_word_embeddings,
            "max_position_embeddings": m.max_position_embeddings}
    if m.family == "deepseek_v3":
        moe = set(m.moe_layer_ids)
        first = next(i for i in range(m.n_layers) if i in moe)
        return dict(base, model_type="deepseek_v3", architectures=["DeepseekV3ForCausalLM"],
                    num_attention_heads=a.n_heads, num_key_value_heads=a.n_heads,
                    q_lora_rank=a.q_lora_rank or None, kv_lora_rank=a.kv_lora_rank,
                    qk_nope_head_dim=a.qk_nope_head_dim, qk_rope_head_dim=a.qk_rope_head_dim,
                    v_head_dim=a.v_head_dim, n_routed_experts=m.n_experts,
                    moe_intermediate_size=m.moe_intermediate_size,
                    intermediate_size=m.dense_intermediate_size,
                    n_shared_experts=m.n_shared_experts, first_k_dense_replace=first,
                    moe_layer_freq=1, scoring_func=m.router.scoring,
                    topk_method="noaux_tc" if m.router.bias else "greedy",
                    norm_topk_prob=m.router.norm_topk_prob, n_group=m.router.n_group,
                    topk_group=m.router.topk_group,
                    routed_scaling_factor=m.router.routed_scaling_factor,
                    num_nextn_predict_layers=m.n_mtp_layers,
                    **_quant(m.released_format))
    attn = {"num_attention_heads": a.n_heads, "num_key_value_heads": a.n_kv_heads,
            "head_dim": a.head_dim}
    if m.family == "mixtral":
        return dict(base, **attn, model_type="mixtral", architectures=["MixtralForCausalLM"],
                    num_local_experts=m.n_experts, intermediate_size=m.moe_intermediate_size,
                    sliding_window=m.sliding_window)
    if m.family == "gpt_oss":
        return dict(base, **attn, model_type="gpt_oss", architectures=["GptOssForCausalLM"],
                    num_local_experts=m.n_experts, experts_per_token=m.top_k,
                    intermediate_size=m.moe_intermediate_size, attention_bias=a.qkv_bias,
                    layer_types=[hf_types[t] for t in m.layer_types],
                    sliding_window=m.sliding_window, swiglu_limit=m.swiglu_limit,
                    **_quant(m.released_format))
    moe = set(m.moe_layer_ids)
    qwen = dict(base, **attn, num_experts=m.n_experts,
                moe_intermediate_size=m.moe_intermediate_size,
                mlp_only_layers=[i for i in range(m.n_layers) if i not in moe],
                intermediate_size=m.dense_intermediate_size or None,
                norm_topk_prob=m.router.norm_topk_prob)
    if m.family == "qwen3_moe":
        return dict(qwen, model_type="qwen3_moe", architectures=["Qwen3MoeForCausalLM"],
                    attention_bias=a.qkv_bias, decoder_sparse_step=1)
    la = m.linear_attention
    qwen.update(layer_types=[hf_types[t] for t in m.layer_types],
                linear_num_key_heads=la.n_qk_heads, linear_num_value_heads=la.n_v_heads,
                linear_key_head_dim=la.qk_head_dim, linear_value_head_dim=la.v_head_dim,
                linear_conv_kernel_dim=la.conv_kernel,
                shared_expert_intermediate_size=m.shared_intermediate_size)
    if m.family == "qwen3_next":
        return dict(qwen, model_type="qwen3_next", architectures=["Qwen3NextForCausalLM"],
                    decoder_sparse_step=1)
    if m.family == "qwen3_5_moe":
        text = dict(qwen, model_type="qwen3_5_moe_text", attn_output_gate=a.output_gate,
                    mtp_num_hidden_layers=m.n_mtp_layers)
        tie = text.pop("tie_word_embeddings")
        return {"architectures": ["Qwen3_5MoeForConditionalGeneration"],
                "model_type": "qwen3_5_moe", "text_config": text, "tie_word_embeddings": tie}
    raise AssertionError(m.family)  # pragma: no cover - WRITERS lists the families above


def _quant(fmt: str) -> dict[str, Any]:
    if fmt == "mxfp4":
        return {"quantization_config": {"quant_method": "mxfp4"}}
    if fmt == "fp8":
        return {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                                        "activation_scheme": "dynamic",
                                        "weight_block_size": [128, 128]}}
    return {}
