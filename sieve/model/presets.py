"""Preset field values of the MoE models in :data:`sieve.model.moe.MODELS`, with their sources.

Each preset is a dict of :class:`sieve.model.moe.MoeModel` keyword arguments (``name`` excluded).
Every value is the model's public Hugging Face ``config.json`` value (the key is named in the
comment) and is cross-checked against shared/reference/models-and-traces.md §A.1 (the row named
in the comment, written "§A.1 <row>"). The config.json copies are (models-and-traces.md §A.3):

* ``AIC``: ai-dynamo/aiconfigurator @ 095f58a5, ``aic-core/src/aiconfigurator_core/model_configs/``
  (``mistralai--Mixtral-8x7B-v0.1``, ``mistralai--Mixtral-8x22B-v0.1``, ``Qwen--Qwen3-30B-A3B``,
  ``openai--gpt-oss-120b``, ``openai--gpt-oss-20b``, ``deepseek-ai--DeepSeek-V3`` and
  ``deepseek-ai--DeepSeek-R1``, each ``_config.json``); ``Qwen--Qwen3.5-397B-A17B_config.json``
  re-read for this module at ai-dynamo/aiconfigurator @ 87fe4b0c
  ``src/aiconfigurator/model_configs/``.
* ``INFERSIM``: alibaba/InferSim @ f2293dab ``hf_configs/qwen3-next-80B-A3B_config.json``; the same
  values re-read at ai-dynamo/aiconfigurator @ 1b7cfb10
  ``src/aiconfigurator/model_configs/Qwen--Qwen3-Next-80B-A3B-Thinking_config.json``.

Layer-type and MoE-layer rules are those of HF ``transformers`` (cited where used).
"""

from __future__ import annotations

from typing import Any

from sieve.model.parts import GatedDeltaNet, GqaAttention, MlaAttention, Router

__all__ = ["PRESET_FIELDS", "alternating_sliding_layers", "hybrid_gdn_layers", "uniform_layers"]


def uniform_layers(kind: str, n: int) -> tuple[str, ...]:
    """``n`` layers of one type."""
    return (kind,) * n


def hybrid_gdn_layers(n: int, full_attention_interval: int) -> tuple[str, ...]:
    """Qwen3-Next/3.5 layout: layer i is full attention iff ``(i + 1) % interval == 0``.

    Rule of HF ``Qwen3NextConfig`` (default ``layer_types``); the Qwen3.5-397B config lists the
    same pattern explicitly (``linear_attention`` x3, ``full_attention``, repeated).
    """
    return tuple("full" if (i + 1) % full_attention_interval == 0 else "gdn" for i in range(n))


def alternating_sliding_layers(n: int) -> tuple[str, ...]:
    """gpt-oss layout: even layers sliding-window, odd layers full (config ``layer_types``)."""
    return tuple("sliding" if i % 2 == 0 else "full" for i in range(n))


PRESET_FIELDS: dict[str, dict[str, Any]] = {
    # ---- Mixtral-8x7B-v0.1: AIC mistralai--Mixtral-8x7B-v0.1_config.json; §A.1 column 1 ----
    "mixtral-8x7b": dict(
        family="mixtral",  # model_type "mixtral"
        n_layers=32,  # num_hidden_layers; §A.1 layers
        hidden_size=4096,  # hidden_size; §A.1 hidden size
        vocab_size=32000,  # vocab_size; §A.1 vocab
        layer_types=uniform_layers("full", 32),  # sliding_window null; §A.1 attention type
        attention=GqaAttention(
            n_heads=32,  # num_attention_heads; §A.1 attention heads
            n_kv_heads=8,  # num_key_value_heads; §A.1 KV heads
            head_dim=128,  # hidden_size / num_attention_heads (no head_dim key); §A.1 head dim
        ),
        n_experts=8,  # num_local_experts; §A.1 routed experts / layer
        top_k=2,  # num_experts_per_tok; §A.1 experts per token
        moe_intermediate_size=14336,  # intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(32)),  # every layer MoE; §A.1 dense layers 0
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True),  # §A.1 router: softmax top-2, renormalised
        released_format="bf16",  # torch_dtype bfloat16; §A.1 released weight dtype
        max_position_embeddings=32768,  # max_position_embeddings; §A.1 max context
    ),
    # ---- Mixtral-8x22B-v0.1: AIC mistralai--Mixtral-8x22B-v0.1_config.json; §A.1 column 2 ----
    "mixtral-8x22b": dict(
        family="mixtral",  # model_type "mixtral"
        n_layers=56,  # num_hidden_layers; §A.1 layers
        hidden_size=6144,  # hidden_size; §A.1 hidden size
        vocab_size=32000,  # vocab_size (base v0.1; Instruct-v0.1 has 32768); §A.1 vocab
        layer_types=uniform_layers("full", 56),  # GQA, full; §A.1 attention type
        attention=GqaAttention(
            n_heads=48,  # num_attention_heads; §A.1 attention heads
            n_kv_heads=8,  # num_key_value_heads; §A.1 KV heads
            head_dim=128,  # hidden_size / num_attention_heads; §A.1 head dim
        ),
        n_experts=8,  # num_local_experts; §A.1 routed experts / layer
        top_k=2,  # num_experts_per_tok; §A.1 experts per token
        moe_intermediate_size=16384,  # intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(56)),  # every layer MoE; §A.1 dense layers 0
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True),  # §A.1 router: same as 8x7B
        released_format="bf16",  # torch_dtype bfloat16; §A.1 released weight dtype
        max_position_embeddings=65536,  # max_position_embeddings; §A.1 max context
    ),
    # ---- Qwen3-30B-A3B: AIC Qwen--Qwen3-30B-A3B_config.json; §A.1 column 3 ----
    "qwen3-30b-a3b": dict(
        family="qwen3_moe",  # model_type "qwen3_moe"
        n_layers=48,  # num_hidden_layers; §A.1 layers
        hidden_size=2048,  # hidden_size; §A.1 hidden size
        vocab_size=151936,  # vocab_size; §A.1 vocab
        layer_types=uniform_layers("full", 48),  # GQA, full, QK-RMSNorm; §A.1 attention type
        attention=GqaAttention(
            n_heads=32,  # num_attention_heads; §A.1 attention heads
            n_kv_heads=4,  # num_key_value_heads; §A.1 KV heads
            head_dim=128,  # head_dim (q out 4096 != hidden); §A.1 head dim
            qk_norm=True,  # Qwen3 q_norm/k_norm; §A.1 attention type "QK-RMSNorm"
        ),
        n_experts=128,  # num_experts; §A.1 routed experts / layer
        top_k=8,  # num_experts_per_tok (the seed text says 4); §A.1 experts per token
        moe_intermediate_size=768,  # moe_intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(48)),  # decoder_sparse_step 1, mlp_only_layers []; §A.1
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True),  # norm_topk_prob true; §A.1 router
        released_format="bf16",  # torch_dtype bfloat16; §A.1 released weight dtype
        max_position_embeddings=40960,  # max_position_embeddings; §A.1 max context
    ),
    # ---- Qwen3-Next-80B-A3B: INFERSIM qwen3-next-80B-A3B_config.json; §A.1 column 4 ----
    "qwen3-next-80b-a3b": dict(
        family="qwen3_next",  # model_type "qwen3_next"
        n_layers=48,  # num_hidden_layers; §A.1 layers
        hidden_size=2048,  # hidden_size; §A.1 hidden size
        vocab_size=151936,  # vocab_size; §A.1 vocab
        layer_types=hybrid_gdn_layers(48, 4),  # full_attention_interval 4; §A.1 attention type
        attention=GqaAttention(
            n_heads=16,  # num_attention_heads; §A.1 attention heads
            n_kv_heads=2,  # num_key_value_heads; §A.1 KV heads
            head_dim=256,  # head_dim; §A.1 head dim
            qk_norm=True,  # gated attention has q_norm/k_norm (HF modeling_qwen3_next)
            output_gate=True,  # q_proj emits query + gate (2 x 16 x 256); §A.1 notes
        ),
        linear_attention=GatedDeltaNet(
            n_qk_heads=16,  # linear_num_key_heads; §A.1 linear-attn dims
            n_v_heads=32,  # linear_num_value_heads; §A.1 linear-attn dims
            qk_head_dim=128,  # linear_key_head_dim; §A.1 linear-attn dims
            v_head_dim=128,  # linear_value_head_dim; §A.1 linear-attn dims
            conv_kernel=4,  # linear_conv_kernel_dim; §A.1 linear-attn dims
        ),
        n_experts=512,  # num_experts; §A.1 routed experts / layer
        top_k=10,  # num_experts_per_tok; §A.1 experts per token
        moe_intermediate_size=512,  # moe_intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(48)),  # decoder_sparse_step 1, mlp_only_layers []; §A.1
        n_shared_experts=1,  # one shared_expert module; §A.1 shared experts "1 x 512"
        shared_intermediate_size=512,  # shared_expert_intermediate_size; §A.1 shared experts
        shared_expert_gate=True,  # sigmoid shared_expert_gate H->1; §A.1 "(sigmoid-gated)"
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True),  # norm_topk_prob true; §A.1 router
        released_format="bf16",  # torch_dtype bfloat16; §A.1 released weight dtype
        max_position_embeddings=262144,  # max_position_embeddings; §A.1 max context
    ),
    # ---- Qwen3.5-397B-A17B (text model): AIC Qwen--Qwen3.5-397B-A17B_config.json
    #      (text_config); §A.1 column 5. Vision tower (27-layer ViT) and MTP layer not modelled.
    "qwen3.5-397b-a17b": dict(
        family="qwen3_5_moe",  # model_type "qwen3_5_moe" (text_config "qwen3_5_moe_text")
        n_layers=60,  # text_config.num_hidden_layers; §A.1 layers
        hidden_size=4096,  # text_config.hidden_size; §A.1 hidden size
        vocab_size=248320,  # text_config.vocab_size; §A.1 vocab
        layer_types=hybrid_gdn_layers(60, 4),  # text_config.layer_types; §A.1 attention type
        attention=GqaAttention(
            n_heads=32,  # text_config.num_attention_heads; §A.1 attention heads
            n_kv_heads=2,  # text_config.num_key_value_heads; §A.1 KV heads
            head_dim=256,  # text_config.head_dim; §A.1 head dim
            qk_norm=True,  # QK-norm; §A.1 attention type
            output_gate=True,  # text_config.attn_output_gate true; §A.1 attention type
        ),
        linear_attention=GatedDeltaNet(
            n_qk_heads=16,  # text_config.linear_num_key_heads; §A.1 linear-attn dims
            n_v_heads=64,  # text_config.linear_num_value_heads; §A.1 linear-attn dims
            qk_head_dim=128,  # text_config.linear_key_head_dim; §A.1 linear-attn dims
            v_head_dim=128,  # text_config.linear_value_head_dim; §A.1 linear-attn dims
            conv_kernel=4,  # text_config.linear_conv_kernel_dim; §A.1 linear-attn dims
        ),
        n_experts=512,  # text_config.num_experts; §A.1 routed experts / layer
        top_k=10,  # text_config.num_experts_per_tok; §A.1 experts per token
        moe_intermediate_size=1024,  # text_config.moe_intermediate_size; §A.1
        moe_layer_ids=tuple(range(60)),  # MoE block in every layer (HF Qwen3_5MoeDecoderLayer)
        n_shared_experts=1,  # one shared_expert module; §A.1 shared experts "1 x 1024"
        shared_intermediate_size=1024,  # text_config.shared_expert_intermediate_size; §A.1
        shared_expert_gate=True,  # sigmoid shared_expert_gate; §A.1 "(sigmoid-gated)"
        tie_word_embeddings=False,  # top-level tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True),  # HF Qwen3_5MoeTopKRouter always renorms
        released_format="bf16",  # text_config.dtype bfloat16; §A.1 released weight dtype
        max_position_embeddings=262144,  # text_config.max_position_embeddings; §A.1
        n_mtp_layers=1,  # text_config.mtp_num_hidden_layers (not counted); §A.1 notes
    ),
    # ---- gpt-oss-120b: AIC openai--gpt-oss-120b_config.json; §A.1 column 6 ----
    "gpt-oss-120b": dict(
        family="gpt_oss",  # model_type "gpt_oss"
        n_layers=36,  # num_hidden_layers; §A.1 layers
        hidden_size=2880,  # hidden_size; §A.1 hidden size
        vocab_size=201088,  # vocab_size; §A.1 vocab
        layer_types=alternating_sliding_layers(36),  # layer_types; §A.1 attention type
        sliding_window=128,  # sliding_window; §A.1 attention type "128 tokens"
        attention=GqaAttention(
            n_heads=64,  # num_attention_heads; §A.1 attention heads
            n_kv_heads=8,  # num_key_value_heads; §A.1 KV heads
            head_dim=64,  # head_dim (q out 4096 != hidden); §A.1 head dim
            qkv_bias=True,  # attention_bias true; §A.1 "with attention sinks and biases"
            o_bias=True,  # attention_bias true (o_proj bias)
            sinks=True,  # one learned sink logit per head; §A.1 attention type
        ),
        n_experts=128,  # num_local_experts; §A.1 routed experts / layer
        top_k=4,  # num_experts_per_tok = experts_per_token; §A.1 experts per token
        moe_intermediate_size=2880,  # intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(36)),  # every layer MoE; §A.1 dense layers 0
        expert_bias=True,  # gate_up_proj_bias (2I) + down_proj_bias (H); §A.1 notes
        activation="swiglu_clamped",  # clamped SwiGLU; §A.1 notes
        swiglu_limit=7.0,  # swiglu_limit; §A.1 notes
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True, bias=True),  # §A.1 router: linear+bias,
        # softmax over the top-4 (= softmax over all, then renormalised top-4)
        released_format="mxfp4",  # quantization_config.quant_method mxfp4 (experts only); §A.1
        max_position_embeddings=131072,  # max_position_embeddings; §A.1 max context
    ),
    # ---- gpt-oss-20b: AIC openai--gpt-oss-20b_config.json; §A.1 column 7 ----
    "gpt-oss-20b": dict(
        family="gpt_oss",  # model_type "gpt_oss"
        n_layers=24,  # num_hidden_layers; §A.1 layers
        hidden_size=2880,  # hidden_size; §A.1 hidden size
        vocab_size=201088,  # vocab_size; §A.1 vocab
        layer_types=alternating_sliding_layers(24),  # layer_types; §A.1 "same as 120b"
        sliding_window=128,  # sliding_window; §A.1 attention type
        attention=GqaAttention(
            n_heads=64,  # num_attention_heads; §A.1 attention heads
            n_kv_heads=8,  # num_key_value_heads; §A.1 KV heads
            head_dim=64,  # head_dim; §A.1 head dim
            qkv_bias=True,  # attention_bias true
            o_bias=True,  # attention_bias true
            sinks=True,  # attention sinks; §A.1 attention type
        ),
        n_experts=32,  # num_local_experts; §A.1 routed experts / layer
        top_k=4,  # num_experts_per_tok = experts_per_token; §A.1 experts per token
        moe_intermediate_size=2880,  # intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(24)),  # every layer MoE; §A.1 dense layers 0
        expert_bias=True,  # expert biases; §A.1 notes
        activation="swiglu_clamped",  # clamped SwiGLU; §A.1 notes
        swiglu_limit=7.0,  # swiglu_limit; §A.1 notes
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router("softmax", norm_topk_prob=True, bias=True),  # §A.1 router "same"
        released_format="mxfp4",  # quantization_config.quant_method mxfp4; §A.1
        max_position_embeddings=131072,  # max_position_embeddings; §A.1 max context
    ),
    # ---- DeepSeek-V3 (= R1 architecture): AIC deepseek-ai--DeepSeek-V3_config.json and
    #      deepseek-ai--DeepSeek-R1_config.json; §A.1 column 8 ----
    "deepseek-v3": dict(
        family="deepseek_v3",  # model_type "deepseek_v3"
        n_layers=61,  # num_hidden_layers (MTP layer excluded); §A.1 layers "61 (+1 MTP)"
        hidden_size=7168,  # hidden_size; §A.1 hidden size
        vocab_size=129280,  # vocab_size; §A.1 vocab
        layer_types=uniform_layers("mla", 61),  # MLA in every layer; §A.1 attention type
        attention=MlaAttention(
            n_heads=128,  # num_attention_heads; §A.1 attention heads
            q_lora_rank=1536,  # q_lora_rank; §A.1 attention type
            kv_lora_rank=512,  # kv_lora_rank; §A.1 attention type
            qk_nope_head_dim=128,  # qk_nope_head_dim; §A.1 head dim "qk 128 nope"
            qk_rope_head_dim=64,  # qk_rope_head_dim; §A.1 head dim "+ 64 rope"
            v_head_dim=128,  # v_head_dim; §A.1 head dim "v 128"
        ),
        n_experts=256,  # n_routed_experts; §A.1 routed experts / layer
        top_k=8,  # num_experts_per_tok; §A.1 experts per token
        moe_intermediate_size=2048,  # moe_intermediate_size; §A.1 MoE intermediate size
        moe_layer_ids=tuple(range(3, 61)),  # first_k_dense_replace 3, moe_layer_freq 1; §A.1
        dense_intermediate_size=18432,  # intermediate_size; §A.1 dense layers "dense FFN 18432"
        n_shared_experts=1,  # n_shared_experts; §A.1 shared experts "1 x 2048"
        shared_intermediate_size=2048,  # moe_intermediate_size x n_shared_experts; §A.1
        tie_word_embeddings=False,  # tie_word_embeddings false
        router=Router(
            "sigmoid",  # scoring_func sigmoid; §A.1 router
            norm_topk_prob=True,  # norm_topk_prob true; §A.1 router "norm top-k"
            bias=True,  # e_score_correction_bias (topk_method noaux_tc); §A.1 router
            n_group=8,  # n_group; §A.1 experts per token "8 groups"
            topk_group=4,  # topk_group; §A.1 experts per token "top-4 groups"
            routed_scaling_factor=2.5,  # routed_scaling_factor; §A.1 router
        ),
        released_format="fp8",  # quantization_config fp8 e4m3, 128x128 blocks; §A.1
        max_position_embeddings=163840,  # max_position_embeddings; §A.1 max context
        n_mtp_layers=1,  # num_nextn_predict_layers (not counted); §A.1 notes
    ),
}
