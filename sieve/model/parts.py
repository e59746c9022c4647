"""Building blocks of an MoE model description: weight formats, attention variants, expert shapes.

:mod:`sieve.model.moe` assembles these into :class:`~sieve.model.moe.MoeModel`. Everything here is
frozen data plus exact integer arithmetic; nothing simulates anything.

Conventions
    * A weight matrix is ``rows x cols`` = ``out_features x in_features`` (``y = W x``), as
      stored by PyTorch ``nn.Linear``. A GEMV over it reads ``rows * cols`` weights.
    * Parameter counts are exact integers and include biases, norm weights and other small
      vectors (attention sinks, ``A_log``, ``dt_bias``), because published totals do.
    * Byte counts include the scale factors of block-scaled formats (:class:`WeightFormat`).

Sources: shared/reference/models-and-traces.md §A.4 (the formulas), HF ``transformers`` model
code for the families (``modeling_mixtral``, ``modeling_qwen3_moe``, ``modeling_qwen3_next``,
``modeling_qwen3_5_moe``, ``modeling_gpt_oss``, ``modeling_deepseek_v3``), and vLLM
``model_executor/layers/mamba/mamba_utils.py`` (``gated_delta_net_state_shape``) for the
Gated-DeltaNet cache layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sieve.errors import ConfigError, lookup
from sieve.limits import MAX_WIDTH
from sieve.validate import check_bool, check_int

__all__ = [
    "KV_DTYPE_BYTES",
    "WEIGHT_FORMATS",
    "ExpertGemv",
    "GatedDeltaNet",
    "GqaAttention",
    "MlaAttention",
    "Router",
    "WeightFormat",
    "get_weight_format",
    "kv_dtype_bytes",
]


# --------------------------------------------------------------------------------------------
# Storage formats
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class WeightFormat:
    """How a weight matrix is stored: element width plus optional per-block scale factors.

    Bytes of a ``rows x cols`` matrix::

        ceil(rows * cols * element_bits / 8)
          + ceil(rows / block_rows) * ceil(cols / block_cols) * scale_bits / 8

    (the second term only when the format has scales). Vectors (biases, norm weights) are stored
    with ``vector_bits`` per element: block-scaled checkpoints keep them in BF16.
    """

    name: str
    element_bits: int  # bits per stored weight element
    vector_bits: int  # bits per element of biases / norm vectors stored alongside
    block_rows: int = 0  # scale block height (output dim); 0 = no scales
    block_cols: int = 0  # scale block width (input / reduction dim)
    scale_bits: int = 0  # bits per scale factor
    source: str = ""

    def matrix_bytes(self, rows: int, cols: int) -> int:
        """Bytes of one ``rows x cols`` weight matrix, scales included."""
        data = math.ceil(rows * cols * self.element_bits / 8)
        if not self.scale_bits:
            return data
        blocks = math.ceil(rows / self.block_rows) * math.ceil(cols / self.block_cols)
        return data + math.ceil(blocks * self.scale_bits / 8)

    def vector_bytes(self, n: int) -> int:
        """Bytes of a length-``n`` vector (bias, norm weight)."""
        return math.ceil(n * self.vector_bits / 8)

    def bits_per_weight(self, rows: int, cols: int) -> float:
        """Effective storage bits per weight of a ``rows x cols`` matrix (scales included)."""
        return 8 * self.matrix_bytes(rows, cols) / (rows * cols)


#: Weight storage formats, by name.
WEIGHT_FORMATS: dict[str, WeightFormat] = {
    # Seed methodology ("activations and parameters are stored in bfloat16").
    "bf16": WeightFormat("bf16", 16, 16, source="2 bytes/param; seed methodology (Datasets)"),
    "fp16": WeightFormat("fp16", 16, 16, source="2 bytes/param"),
    "fp32": WeightFormat("fp32", 32, 32, source="4 bytes/param"),
    # DeepSeek-V3 as shipped: config quantization_config {quant_method fp8, fmt e4m3,
    # weight_block_size [128, 128]}; one float32 `weight_scale_inv` per 128x128 block
    # (models-and-traces.md §A.1 "released weight dtype").
    "fp8": WeightFormat("fp8", 8, 16, block_rows=128, block_cols=128, scale_bits=32,
                        source="FP8 e4m3 + fp32 scale per 128x128 block (DeepSeek-V3)"),
    # gpt-oss as shipped: OCP MX FP4 (E2M1 elements, 32-element blocks along the input dim,
    # one E8M0 scale byte per block) -> 4.25 bits/weight; biases stay BF16
    # (models-and-traces.md §A.1; checkpoint tensors *_blocks, *_scales, *_bias).
    "mxfp4": WeightFormat("mxfp4", 4, 16, block_rows=1, block_cols=32, scale_bits=8,
                          source="MXFP4 E2M1 + E8M0 scale per 32 weights (gpt-oss)"),
}

#: Bytes per element of KV-cache / recurrent-state storage.
KV_DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


def get_weight_format(name: str) -> WeightFormat:
    """Look up a weight format by name (ConfigError lists the valid ones)."""
    return lookup(WEIGHT_FORMATS, name, "weight dtype")


def kv_dtype_bytes(name: str) -> int:
    """Bytes per cached element for a KV/state dtype name (ConfigError lists the valid ones)."""
    return lookup(KV_DTYPE_BYTES, name, "KV-cache dtype")


# --------------------------------------------------------------------------------------------
# Attention variants
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GqaAttention:
    """Grouped-query softmax attention (full or sliding-window layers).

    Parameters: ``q: H x (g*nh*hd)``, ``k, v: H x (kv*hd)``, ``o: (nh*hd) x H`` where ``g = 2``
    when the query projection also emits a sigmoid output gate (Qwen3-Next / Qwen3.5 gated
    attention), plus optional q/k/v biases (``qkv_bias``), o bias, per-head q/k RMSNorm weights
    (``2*hd``, Qwen3 family) and one learned sink logit per head (gpt-oss).
    """

    n_heads: int
    n_kv_heads: int
    head_dim: int
    qkv_bias: bool = False
    o_bias: bool = False
    qk_norm: bool = False
    output_gate: bool = False
    sinks: bool = False

    kind = "gqa"

    def __post_init__(self) -> None:
        who = "GQA attention"
        for f in ("n_heads", "n_kv_heads", "head_dim"):
            check_int(who, f, getattr(self, f), lo=1, hi=MAX_WIDTH)
        for f in ("qkv_bias", "o_bias", "qk_norm", "output_gate", "sinks"):
            check_bool(who, f, getattr(self, f))
        if self.n_heads % self.n_kv_heads:
            raise ConfigError(f"{who}: the {self.n_kv_heads} key/value heads must divide the "
                              f"{self.n_heads} query heads (each KV head serves a whole group)")

    def params(self, hidden: int) -> int:
        """Parameters of one attention layer with model width ``hidden``."""
        q_out = self.n_heads * self.head_dim * (2 if self.output_gate else 1)
        kv_out = self.n_kv_heads * self.head_dim
        n = hidden * q_out + 2 * hidden * kv_out + self.n_heads * self.head_dim * hidden
        if self.qkv_bias:
            n += q_out + 2 * kv_out
        if self.o_bias:
            n += hidden
        if self.qk_norm:
            n += 2 * self.head_dim
        if self.sinks:
            n += self.n_heads
        return n

    def kv_elements_per_token(self) -> int:
        """Cached elements per token per layer: K and V, ``2 * kv_heads * head_dim``."""
        return 2 * self.n_kv_heads * self.head_dim


@dataclass(frozen=True)
class MlaAttention:
    """DeepSeek multi-head latent attention.

    Parameters (``q_r = q_lora_rank``; without it ``q`` is a plain ``H x nh*(d_nope+d_rope)``)::

        H*q_r + q_r + q_r*nh*(d_nope+d_rope)          # q_a, q_a_layernorm, q_b
        + H*(kv_r+d_rope) + kv_r + kv_r*nh*(d_nope+d_v)  # kv_a (with MQA rope key), norm, kv_b
        + nh*d_v*H                                    # o

    (models-and-traces.md §A.4). The decode cache holds the compressed latent plus the shared
    rope key: ``kv_lora_rank + qk_rope_head_dim`` elements per token per layer.
    """

    n_heads: int
    q_lora_rank: int  # 0 = no query compression
    kv_lora_rank: int
    qk_nope_head_dim: int
    qk_rope_head_dim: int
    v_head_dim: int

    kind = "mla"

    def __post_init__(self) -> None:
        for f in ("n_heads", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
                  "v_head_dim"):
            check_int("MLA attention", f, getattr(self, f), lo=1, hi=MAX_WIDTH)
        check_int("MLA attention", "q_lora_rank", self.q_lora_rank, lo=0, hi=MAX_WIDTH)

    def params(self, hidden: int) -> int:
        """Parameters of one MLA layer with model width ``hidden``."""
        qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
        if self.q_lora_rank:
            r = self.q_lora_rank
            q = hidden * r + r + r * self.n_heads * qk_head
        else:
            q = hidden * self.n_heads * qk_head
        r = self.kv_lora_rank
        kv = (hidden * (r + self.qk_rope_head_dim) + r
              + r * self.n_heads * (self.qk_nope_head_dim + self.v_head_dim))
        return q + kv + self.n_heads * self.v_head_dim * hidden

    def kv_elements_per_token(self) -> int:
        """Cached elements per token per layer: ``kv_lora_rank + qk_rope_head_dim``."""
        return self.kv_lora_rank + self.qk_rope_head_dim


@dataclass(frozen=True)
class GatedDeltaNet:
    """Gated DeltaNet linear attention (Qwen3-Next, Qwen3.5).

    With ``Kd = n_qk_heads*qk_head_dim``, ``Vd = n_v_heads*v_head_dim``, ``Vh = n_v_heads``,
    ``conv_dim = 2*Kd + Vd``, the parameters are (models-and-traces.md §A.4)::

        H*(2*Kd + 2*Vd)      # q, k, v, z projections (in_proj_qkvz, or in_proj_qkv + in_proj_z)
        + H*2*Vh             # b, a projections
        + conv_dim*conv_kernel   # depthwise causal conv1d, no bias
        + 2*Vh               # A_log, dt_bias
        + v_head_dim         # gated RMSNorm weight (shared across heads)
        + Vd*H               # out_proj

    Per-sequence state (vLLM ``gated_delta_net_state_shape``): a recurrent matrix of
    ``n_v_heads x qk_head_dim x v_head_dim`` elements and a conv window of
    ``conv_dim x (conv_kernel - 1)`` elements. Neither grows with the sequence.
    """

    n_qk_heads: int
    n_v_heads: int
    qk_head_dim: int
    v_head_dim: int
    conv_kernel: int

    kind = "gdn"

    def __post_init__(self) -> None:
        who = "Gated DeltaNet"
        for f in ("n_qk_heads", "n_v_heads", "qk_head_dim", "v_head_dim"):
            check_int(who, f, getattr(self, f), lo=1, hi=MAX_WIDTH)
        check_int(who, "conv_kernel", self.conv_kernel, lo=2, hi=MAX_WIDTH)
        if self.n_v_heads % self.n_qk_heads:
            raise ConfigError(f"{who}: the {self.n_qk_heads} query/key heads must divide the "
                              f"{self.n_v_heads} value heads")

    @property
    def key_dim(self) -> int:
        return self.n_qk_heads * self.qk_head_dim

    @property
    def value_dim(self) -> int:
        return self.n_v_heads * self.v_head_dim

    @property
    def conv_dim(self) -> int:
        return 2 * self.key_dim + self.value_dim

    def params(self, hidden: int) -> int:
        """Parameters of one Gated-DeltaNet layer with model width ``hidden``."""
        return (hidden * (2 * self.key_dim + 2 * self.value_dim) + hidden * 2 * self.n_v_heads
                + self.conv_dim * self.conv_kernel + 2 * self.n_v_heads + self.v_head_dim
                + self.value_dim * hidden)

    def ssm_state_elements(self) -> int:
        """Recurrent-state elements per sequence: ``n_v_heads * qk_head_dim * v_head_dim``."""
        return self.n_v_heads * self.qk_head_dim * self.v_head_dim

    def conv_state_elements(self) -> int:
        """Conv-window elements per sequence: ``conv_dim * (conv_kernel - 1)``."""
        return self.conv_dim * (self.conv_kernel - 1)


# --------------------------------------------------------------------------------------------
# Router and expert FFN shapes
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Router:
    """Routing function of an MoE layer (what a synthetic router needs to imitate).

    Parameters: ``H * n_experts`` weights, plus ``n_experts`` when ``bias`` (gpt-oss router
    bias; DeepSeek's ``e_score_correction_bias``).
    """

    scoring: str = "softmax"  # "softmax" | "sigmoid"
    norm_topk_prob: bool = True  # renormalise the top-k weights to sum to 1
    bias: bool = False
    n_group: int = 1  # DeepSeek group-limited routing: experts in n_group groups...
    topk_group: int = 1  # ...and only the best topk_group groups are eligible
    routed_scaling_factor: float = 1.0

    def params(self, hidden: int, n_experts: int) -> int:
        return hidden * n_experts + (n_experts if self.bias else 0)


@dataclass(frozen=True)
class ExpertGemv:
    """The matrices of one expert FFN as the PIM lowering sees them (per token: one GEMV each).

    ``gate`` and ``up`` are ``I x H`` (fused: one ``2I x H`` matrix), ``down`` is ``H x I``.
    ``activation``:

    * ``"swiglu"``: ``down(silu(gate x) * (up x))`` (Mixtral, Qwen3, DeepSeek).
    * ``"swiglu_clamped"`` (gpt-oss): ``g = min(gate x + b_g, limit)``,
      ``u = clip(up x + b_u, -limit, limit)``, ``down(g * sigmoid(alpha * g) * (u + 1)) + b_d``
      with ``alpha = 1.702``, ``limit = swiglu_limit``; gate and up rows are interleaved in the
      fused ``gate_up`` weight, and ``bias`` is True (``2I`` gate_up bias, ``H`` down bias).
    """

    hidden_size: int
    intermediate_size: int
    fused_gate_up: bool
    activation: str
    bias: bool = False
    swiglu_limit: float | None = None
    swiglu_alpha: float | None = None

    @property
    def gate_up_shape(self) -> tuple[int, int]:
        """(rows, cols) of the fused gate+up projection: ``(2*I, H)``."""
        return (2 * self.intermediate_size, self.hidden_size)

    @property
    def down_shape(self) -> tuple[int, int]:
        """(rows, cols) of the down projection: ``(H, I)``."""
        return (self.hidden_size, self.intermediate_size)

    def matrices(self) -> tuple[tuple[str, int, int], ...]:
        """``(name, rows, cols)`` of each weight matrix as stored in the checkpoint."""
        h, i = self.hidden_size, self.intermediate_size
        if self.fused_gate_up:
            return (("gate_up", 2 * i, h), ("down", h, i))
        return (("gate", i, h), ("up", i, h), ("down", h, i))

    def macs_per_token(self) -> int:
        """Multiply-accumulates per token: ``3 * H * I``."""
        return 3 * self.hidden_size * self.intermediate_size
