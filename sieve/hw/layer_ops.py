"""The GPU, link and PIM operations of one decoder layer, from a model's shapes: the one
description of a layer's work, below both the schedulers (:mod:`sieve.sched.trace` prices a
trace's layers with it) and the step simulator (:mod:`sieve.system.step` builds its tasks from
it), so the load a scheduler is shown is the work the step runs.

A layer of a MoE model, for ``t`` tokens on one GPU (seed §6.1, Figure 8):

* **mixer projections**: before attention the q/k/v (and gate) projections, after it the output
  projection, as GEMMs with the model's real weight shapes (:func:`mixer_gemms`; MLA: the
  low-rank q and kv projections before, the output after; Gated-DeltaNet layers run entirely on
  the GPU, see below);
* **decode attention**: on PIM for full, sliding-window and MLA layers
  (:class:`~sieve.hw.cost.PimAttention`), on the GPU for the GPU-only method
  (:func:`gpu_decode_attention`); Gated-DeltaNet layers keep their recurrent state on the GPU
  (the PUs cannot write results back into the array, :mod:`sieve.pim.attention`), modelled as
  a memory-bound kernel reading and writing the state; prefill attention always on the GPU;
* **router**: a GEMM ``t x H -> E``; **shared experts** (every token, seed §3.3); the routed
  experts (:class:`~sieve.hw.cost.GroupedExperts` on the GPU, :class:`~sieve.hw.cost.PimExperts`
  on PIM);
* **metadata** (per-expert tensors for the grouped GEMM) and **permute + weighted sum** as small
  memory kernels; the **LM head** at the end of the step.

Sizes follow the models' config.json values (sieve.model). Under tensor parallelism a GPU holds
``1/n`` of the heads and of every expert's intermediate dimension (:func:`tp_shard`).

This module builds operations (data); it times nothing.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from sieve.errors import ConfigError
from sieve.hw.cost import (
    DecodeAttention,
    ExpertShape,
    Gemm,
    GpuOp,
    GroupedExperts,
    MemoryStream,
    PrefillAttention,
)
from sieve.model.parts import GqaAttention, MlaAttention

__all__ = [
    "expert_shape",
    "fixed_gpu_ops",
    "gdn_op",
    "gpu_decode_attention",
    "layer_kernels",
    "lm_head_op",
    "mixer_gemms",
    "router_op",
    "sampler_op",
    "shared_op",
    "tp_shard",
    "weight_bytes",
]


def expert_shape(model, shared: bool = False) -> ExpertShape:
    """The routed (or shared) expert shape of a :class:`sieve.model.MoeModel`."""
    g = model.shared_expert_gemv() if shared else model.expert_gemv()
    if g is None:
        raise ConfigError(f"model {model.name!r}: has no shared experts")
    return ExpertShape(g.hidden_size, g.intermediate_size, gated=True)


def tp_shard(model, n: int):
    """The model as one of ``n`` tensor-parallel GPUs sees it: ``1/n`` of the attention heads
    (KV heads: at least one) and of every expert's (and shared expert's) intermediate size."""
    if n == 1:
        return model
    a = model.attention
    if isinstance(a, GqaAttention):
        if a.n_heads % n:
            raise ConfigError(f"TP{n}: {model.name!r} has {a.n_heads} attention heads, not a "
                              f"multiple of {n}")
        att = replace(a, n_heads=a.n_heads // n, n_kv_heads=max(a.n_kv_heads // n, 1))
    else:
        if a.n_heads % n:
            raise ConfigError(f"TP{n}: {model.name!r} has {a.n_heads} MLA heads, not a "
                              f"multiple of {n}")
        att = replace(a, n_heads=a.n_heads // n)
    if model.moe_intermediate_size % n:
        raise ConfigError(f"TP{n}: expert intermediate size {model.moe_intermediate_size} is "
                          f"not a multiple of {n}")
    kw = {"attention": att, "moe_intermediate_size": model.moe_intermediate_size // n}
    if model.n_shared_experts:
        kw["shared_intermediate_size"] = model.shared_intermediate_size // n
    if model.linear_attention is not None:
        la = model.linear_attention
        kw["linear_attention"] = replace(la, n_qk_heads=max(la.n_qk_heads // n, 1),
                                         n_v_heads=max(la.n_v_heads // n, 1))
    return replace(model, name=f"{model.name}/tp{n}", **kw)


def mixer_gemms(model, layer: int, tokens: int, dtype: str | None = None
                ) -> tuple[tuple[Gemm, ...], tuple[Gemm, ...]]:
    """(before attention, after attention) projection GEMMs of a softmax/MLA layer."""
    if tokens <= 0:
        return (), ()
    h = model.hidden_size
    a = model.attention
    if isinstance(a, MlaAttention):
        qk = a.qk_nope_head_dim + a.qk_rope_head_dim
        pre = []
        if a.q_lora_rank:
            pre += [Gemm(tokens, a.q_lora_rank, h, dtype),
                    Gemm(tokens, a.n_heads * qk, a.q_lora_rank, dtype)]
        else:
            pre.append(Gemm(tokens, a.n_heads * qk, h, dtype))
        pre.append(Gemm(tokens, a.kv_lora_rank + a.qk_rope_head_dim, h, dtype))
        # absorbed decode: the kv_b up-projection folds into q (nope part) and o
        pre.append(Gemm(tokens, a.n_heads * a.kv_lora_rank, a.qk_nope_head_dim, dtype))
        post = (Gemm(tokens, a.n_heads * a.v_head_dim, a.kv_lora_rank, dtype),
                Gemm(tokens, h, a.n_heads * a.v_head_dim, dtype))
        return tuple(pre), post
    q_out = a.n_heads * a.head_dim * (2 if a.output_gate else 1)
    kv_out = 2 * a.n_kv_heads * a.head_dim
    return ((Gemm(tokens, q_out + kv_out, h, dtype),),
            (Gemm(tokens, h, a.n_heads * a.head_dim, dtype),))


def gdn_op(model, layer: int, n_seqs: int, tokens: int, dtype: str | None = None
           ) -> tuple[GpuOp, ...]:
    """A Gated-DeltaNet layer on the GPU: its projections (as one GEMM with the mixer's
    weights) and the recurrent-state update, which reads and writes every sequence's state
    once (``2 x recurrent_state_bytes``) - memory-bound."""
    if tokens <= 0:
        return ()
    h = model.hidden_size
    proj = Gemm(tokens, max(model.mixer_params(layer) // h, 1), h, dtype)
    state = MemoryStream(2.0 * n_seqs * model.recurrent_state_bytes(layer))
    return (proj, state)


def gpu_decode_attention(model, layer: int, context_lens: np.ndarray, kv_dtype: str
                         ) -> DecodeAttention:
    """Decode attention of one layer on the GPU (the GPU-only method). Sliding layers read at
    most their window; MLA reads its latent cache as one shared KV head of width
    ``kv_lora_rank + qk_rope_head_dim``."""
    t = model.layer_types[layer]
    a = model.attention
    ctx = np.asarray(context_lens, dtype=np.int64)
    if t == "sliding":
        ctx = np.minimum(ctx, int(model.sliding_window))
    if isinstance(a, MlaAttention):
        return DecodeAttention(ctx, a.n_heads, 1, a.kv_lora_rank + a.qk_rope_head_dim,
                               kv_dtype)
    return DecodeAttention(ctx, a.n_heads, a.n_kv_heads, a.head_dim, kv_dtype)


def prefill_attention(model, layer: int, seq_lens: np.ndarray) -> PrefillAttention:
    """Prefill attention of new prompts on the GPU (MLA as one KV head, as decode)."""
    a = model.attention
    if isinstance(a, MlaAttention):
        return PrefillAttention(seq_lens, a.n_heads, a.n_heads,
                                a.qk_nope_head_dim + a.qk_rope_head_dim)
    return PrefillAttention(seq_lens, a.n_heads, a.n_kv_heads, a.head_dim)


def router_op(model, tokens: int) -> Gemm:
    return Gemm(tokens, model.n_experts, model.hidden_size)


def shared_op(model, tokens: int, dtype: str | None = None) -> GroupedExperts | None:
    if not model.n_shared_experts or tokens <= 0:
        return None
    return GroupedExperts([tokens] * model.n_shared_experts, expert_shape(model, shared=True),
                          dtype)


def lm_head_op(model, tokens: int, shards: int = 1) -> Gemm | None:
    """Logits of the last position of every sequence (``1/shards`` of the vocabulary)."""
    if tokens <= 0:
        return None
    return Gemm(tokens, -(-model.vocab_size // shards), model.hidden_size)


def layer_kernels(model, layer: int, tokens: int, kv_dtype: str = "bf16"
                  ) -> tuple[MemoryStream | None, MemoryStream | None, MemoryStream | None]:
    """The small kernels of a decoder layer besides its GEMMs and attention, each a launch of
    its own (every evaluated model's decoder layer: HF ``*DecoderLayer`` = input RMSNorm,
    attention with RoPE and the KV-cache update, post-attention RMSNorm; vLLM runs them as
    the ``fused_add_rms_norm``, ``rotary_embedding`` and ``reshape_and_cache`` kernels):
    ``(input norm, RoPE + KV-cache write, post-attention norm)``; the middle one is None for
    Gated-DeltaNet layers (their state update is :func:`gdn_op`). Bytes: the residual stream
    read, added and written (BF16), the norm weights; q and k read and written, k and v
    written to the cache. ⚠ Frameworks that fuse the norm into the TP all-reduce (vLLM's
    ``fuse_allreduce_rms`` on B200) save its launch; not modelled."""
    if tokens <= 0:
        return None, None, None
    h = model.hidden_size
    norm = MemoryStream(tokens * h * 2.0 * 3 + h * 2.0)  # x, residual in; x out; weights
    rope = None
    if model.layer_types[layer] != "gdn":
        a = model.attention
        kvb = 1 if kv_dtype == "fp8" else 2
        if isinstance(a, MlaAttention):
            qk = a.n_heads * a.qk_rope_head_dim + a.qk_rope_head_dim
            cache = a.kv_lora_rank + a.qk_rope_head_dim
        else:
            qk = (a.n_heads + a.n_kv_heads) * a.head_dim
            cache = 2 * a.n_kv_heads * a.head_dim
        rope = MemoryStream(tokens * (qk * 2.0 * 2 + cache * kvb))
    return norm, rope, norm


def sampler_op(model, sequences: int, shards: int = 1) -> MemoryStream | None:
    """Sampling of one token per sequence from the logits (temperature, top-k/top-p, draw:
    vLLM's GPU ``Sampler``), one kernel reading and writing fp32 logits: ``2 x 4 B x V`` per
    sequence (``1/shards`` of the vocabulary per GPU)."""
    if sequences <= 0:
        return None
    return MemoryStream(sequences * -(-model.vocab_size // shards) * 4.0 * 2)


def weight_bytes(op: GpuOp, system_dtype) -> float:
    """Bytes the operation streams from HBM that are weights (or, for decode attention, the
    KV cache): the part a weight-load task moves ahead of the compute (sieve.system.layer)."""
    from sieve.hw.presets import get_dtype

    if isinstance(op, GroupedExperts):
        d = get_dtype(op.dtype) if op.dtype else system_dtype
        active = int(np.count_nonzero(op.tokens))
        return float(active * op.shape.weights) * d.weight_bytes
    if isinstance(op, Gemm):
        d = get_dtype(op.dtype) if op.dtype else system_dtype
        return float(op.n) * op.k * d.weight_bytes if op.m else 0.0
    if isinstance(op, DecodeAttention):
        kv = 2 if op.kv_dtype in ("bf16", "fp16") else 1
        return float(op.context_lens.sum()) * 2 * op.n_kv_heads * op.head_dim * kv
    if isinstance(op, MemoryStream):
        return float(op.n_bytes)
    return 0.0


def fixed_gpu_ops(model, layer: int, tokens: int, kv_dtype: str = "bf16",
                  expert_dtype: str | None = None) -> tuple[GpuOp, ...]:
    """A MoE layer's GPU work other than its routed experts and decode attention, for
    ``tokens`` tokens on one GPU: what a scheduler is shown as ``LayerLoad.gpu_fixed``, in the
    step simulator and in :func:`sieve.sched.trace.layer_loads` alike. The layer's small
    kernels (:func:`layer_kernels`), its mixer projections (:func:`mixer_gemms`), the router
    and the shared experts; none for Gated-DeltaNet layers (their projections and state
    update run in the step as their own tasks, outside the expert phase's decision)."""
    if tokens <= 0 or model.layer_types[layer] == "gdn":
        return ()
    pre, post = mixer_gemms(model, layer, tokens)
    ops: list[GpuOp] = [k for k in layer_kernels(model, layer, tokens, kv_dtype) if k]
    ops += [*pre, *post, router_op(model, tokens)]
    sh = shared_op(model, tokens, expert_dtype)
    if sh is not None:
        ops.append(sh)
    return tuple(ops)
