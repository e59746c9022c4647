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
from sieve.model.parts import GatedDeltaNet, GqaAttention, MlaAttention, Router
from sieve.validate import check_number

__all__ = ["ARCHITECTURES", "FAMILIES", "parse_hf_config", "to_hf_config"]

_MISSING = object()


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
    heads = f.int("num_attention_heads")
    window = f.raw("sliding_window", None)
    if window is not None:
        window = f.int("sliding_window")
    return dict(kw, family="mixtral",
                attention=GqaAttention(heads, _kv_heads(f, heads), _head_dim(f, h, heads)),
                layer_types=("sliding" if window else "full",) * n, sliding_window=window,
                moe_layer_ids=tuple(range(n)), router=Router("softmax", norm_topk_prob=True))


def _qwen3_moe(f: _Fields) -> dict[str, Any]:
    kw = _common(f, experts_key="num_experts", moe_i_key="moe_intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    if f.bool("use_sliding_window", False):
        raise f.error("use_sliding_window", "sliding-window Qwen3-MoE is not supported")
    heads = f.int("num_attention_heads")
    bias = f.bool("attention_bias", False)
    ids, dense_i = _qwen_moe_layers(f, n)
    return dict(kw, family="qwen3_moe",
                attention=GqaAttention(heads, _kv_heads(f, heads), _head_dim(f, h, heads),
                                       qkv_bias=bias, o_bias=bias, qk_norm=True),
                layer_types=("full",) * n, moe_layer_ids=ids, dense_intermediate_size=dense_i,
                router=Router("softmax", norm_topk_prob=f.bool("norm_topk_prob", False)))


def _qwen_hybrid(f: _Fields, family: str) -> dict[str, Any]:
    kw = _common(f, experts_key="num_experts", moe_i_key="moe_intermediate_size")
    n, h = kw["n_layers"], kw["hidden_size"]
    interval = f.int("full_attention_interval", 4)
    default = tuple("full" if (i + 1) % interval == 0 else "gdn" for i in range(n))
    layer_types = _layer_types(f, n, ("full_attention", "linear_attention"), default)
    heads = f.int("num_attention_heads")
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
                attention=GqaAttention(heads, _kv_heads(f, heads), _head_dim(f, h, heads),
                                       qk_norm=True, output_gate=gate),
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


def _deepseek_v3(f: _Fields) -> dict[str, Any]:
    kw = _common(f, experts_key="n_routed_experts", moe_i_key="moe_intermediate_size")
    n = kw["n_layers"]
    if f.bool("attention_bias", False):
        raise f.error("attention_bias", "MLA with biases is not supported")
    first_dense = f.int("first_k_dense_replace", 0, minimum=0)
    freq = f.int("moe_layer_freq", 1)
    ids = tuple(i for i in range(n) if i >= first_dense and i % freq == 0)
    n_shared = f.int("n_shared_experts", 0, minimum=0)
    f.one_of("topk_method", ("noaux_tc", "greedy", "group_limited_greedy"), "noaux_tc")
    return dict(kw, family="deepseek_v3", layer_types=("mla",) * n,
                attention=MlaAttention(
                    f.int("num_attention_heads"), f.int("q_lora_rank", None) or 0,
                    f.int("kv_lora_rank"), f.int("qk_nope_head_dim"), f.int("qk_rope_head_dim"),
                    f.int("v_head_dim")),
                moe_layer_ids=ids,
                dense_intermediate_size=f.int("intermediate_size") if len(ids) < n else 0,
                n_shared_experts=n_shared,
                shared_intermediate_size=kw["moe_intermediate_size"] if n_shared else 0,
                router=Router(f.one_of("scoring_func", ("sigmoid", "softmax"), "sigmoid"),
                              norm_topk_prob=f.bool("norm_topk_prob", True),
                              bias=f.raw("topk_method", "noaux_tc") == "noaux_tc",
                              n_group=f.int("n_group", 1), topk_group=f.int("topk_group", 1),
                              routed_scaling_factor=f.number("routed_scaling_factor", 1.0)),
                released_format=_released_format(f),
                n_mtp_layers=f.int("num_nextn_predict_layers", 0, minimum=0))


#: Supported ``model_type`` values -> parser.
FAMILIES: dict[str, Callable[[_Fields], dict[str, Any]]] = {
    "mixtral": _mixtral,
    "qwen3_moe": _qwen3_moe,
    "qwen3_next": lambda f: _qwen_hybrid(f, "qwen3_next"),
    "qwen3_5_moe": lambda f: _qwen_hybrid(f, "qwen3_5_moe"),
    "qwen3_5_moe_text": lambda f: _qwen_hybrid(f, "qwen3_5_moe"),
    "gpt_oss": _gpt_oss,
    "deepseek_v3": _deepseek_v3,
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
    if not isinstance(model_type, str) or model_type not in FAMILIES:
        raise ConfigError(f"model config {source!r}: unsupported model_type {model_type!r} "
                          f"(supported: {choices(FAMILIES)})")
    f = _Fields(text, source, data) if text is not None else _Fields(data, source)
    return FAMILIES[model_type](f)


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def to_hf_config(model) -> dict[str, Any]:
    """Write ``model`` as a config.json dict of its family's schema (sizes only)."""
    m, a = model, model.attention
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
    raise ConfigError(f"model {m.name!r}: cannot write family {m.family!r} (supported: "
                      f"{choices(f for f in FAMILIES if f != 'qwen3_5_moe_text')})")


def _quant(fmt: str) -> dict[str, Any]:
    if fmt == "mxfp4":
        return {"quantization_config": {"quant_method": "mxfp4"}}
    if fmt == "fp8":
        return {"quantization_config": {"quant_method": "fp8", "fmt": "e4m3",
                                        "activation_scheme": "dynamic",
                                        "weight_block_size": [128, 128]}}
    return {}
