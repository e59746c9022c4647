"""Hugging Face MoE families beyond the presets (issue 16): each loads from a copy of its public
config.json (tests/data/hf_configs/public/SOURCES.md) and reproduces the model card's parameter
counts; any other MoE config loads through the generic reader, which names what it read and
what it assumed.

Oracles: the published counts (typed in from the cards, with the precision they are given to)
and the family's structure as its HF ``modeling_*.py`` builds it (written next to each check).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sieve.errors import ConfigError
from sieve.model.hf_config import FAMILIES, GENERIC_FIELDS
from sieve.model.moe import load_hf_config

PUBLIC = Path(__file__).parent / "data" / "hf_configs" / "public"

# file: (family, (total, half unit), (active, half unit), counting convention of the card)
# Conventions: "emb" counts the input embedding and the LM head, "noemb" the LM head only,
# "nonemb" neither (a tied matrix counted once either way). Half units: the rounding of a
# figure published to fewer digits (the 2 % rule applies when it is wider).
PUBLISHED = {
    "olmoe": ("olmoe", (6.9e9, 0.05e9), (1.3e9, 0.05e9), "emb"),
    "qwen2_moe": ("qwen2_moe", (14.3e9, 0.05e9), (2.7e9, 0.05e9), "emb"),
    "deepseek_v2": ("deepseek_v2", (15.7e9, 0.05e9), (2.4e9, 0.05e9), "noemb"),
    # the card's 109B includes the vision encoder (not modelled): text model only here
    "llama4": ("llama4", (109e9, 0.5e9), (17e9, 0.5e9), "emb"),
    "glm4_moe": ("glm4_moe", (106e9, 0.5e9), (12e9, 0.5e9), "nonemb"),
    "granitemoe": ("granitemoe", (1.3e9, 0.05e9), (0.4e9, 0.05e9), "nonemb"),
    "granitemoe_3b": ("granitemoe", (3.3e9, 0.05e9), (0.8e9, 0.05e9), "nonemb"),
    "dbrx": ("dbrx", (132e9, 0.5e9), (36e9, 0.5e9), "emb"),
}


def _within(computed: float, published: tuple[float, float]) -> bool:
    value, half_unit = published
    return abs(computed - value) <= max(0.02 * value, half_unit)


def _active(m, convention: str) -> int:
    vh = m.vocab_size * m.hidden_size
    a = m.active_params()
    if convention == "emb":
        return a
    if convention == "noemb":  # the input embedding only (tied: it is the LM head, kept)
        return a - (0 if m.tie_word_embeddings else vh)
    return a - vh * (1 if m.tie_word_embeddings else 2)


#: public copies of the presets' families: file -> the preset it must load to, exactly
PRESET_COPIES = {"mixtral": "mixtral-8x7b", "qwen3_moe": "qwen3-30b-a3b",
                 "qwen3_next": "qwen3-next-80b-a3b", "qwen3_5_moe": "qwen3.5-397b-a17b",
                 "gpt_oss": "gpt-oss-120b", "deepseek_v3": "deepseek-v3"}


@pytest.mark.parametrize("name", sorted(PRESET_COPIES))
def test_public_configs_of_the_presets_families_load_to_the_presets(name):
    """The presets were typed in from models-and-traces.md §A.1; the published files give
    exactly the same models (so the presets' counts, tested in test_models.py against the
    cards, are the public configs' counts)."""
    import dataclasses

    from sieve.model.moe import MODELS

    m = load_hf_config(PUBLIC / f"{name}.json")
    preset = MODELS[PRESET_COPIES[name]]
    assert m.family == preset.family
    assert (dataclasses.replace(m, name="", source="")
            == dataclasses.replace(preset, name="", source=""))


def test_every_public_config_is_here_and_every_family_has_one():
    files = {p.stem for p in PUBLIC.glob("*.json")}
    assert files == set(PUBLISHED) | set(PRESET_COPIES)
    assert {f for f in FAMILIES if not f.endswith("_text")} <= {
        load_hf_config(PUBLIC / f"{n}.json").family for n in files}
    new = {"olmoe", "qwen2_moe", "deepseek_v2", "llama4", "glm4_moe", "granitemoe", "dbrx"}
    assert new <= set(FAMILIES)
    assert {fam for fam, *_ in PUBLISHED.values()} == new


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_total_params_match_the_card(name):
    family, total, _, _ = PUBLISHED[name]
    m = load_hf_config(PUBLIC / f"{name}.json")
    assert m.family == family and "generic" not in m.source
    assert _within(m.total_params(), total), m.total_params()


@pytest.mark.parametrize("name", sorted(n for n in PUBLISHED if n != "deepseek_v2"))
def test_active_params_match_the_card(name):
    _, _, active, conv = PUBLISHED[name]
    m = load_hf_config(PUBLIC / f"{name}.json")
    assert _within(_active(m, conv), active), _active(m, conv)


@pytest.mark.xfail(strict=True, reason="DeepSeek-V2-Lite's '2.4B activated' is 2.45B without "
                   "the embedding (2.1 % above, just past the rounding of 2.4), 2.66B with it, "
                   "2.24B without embedding and LM head; documented in docs/models.md")
def test_deepseek_v2_lite_active_2_4b():
    m = load_hf_config(PUBLIC / "deepseek_v2.json")
    assert any(_within(_active(m, c), (2.4e9, 0.05e9)) for c in ("emb", "noemb", "nonemb"))


def test_family_structure():
    """What each family's HF modeling code builds, read off the public configs."""
    q = load_hf_config(PUBLIC / "qwen2_moe.json")
    # Qwen2MoeSparseMoeBlock: one shared expert (5632 wide) behind Linear(H, 1); q/k/v biased
    assert (q.n_shared_experts, q.shared_intermediate_size, q.shared_expert_gate) == (1, 5632,
                                                                                     True)
    assert q.attention.qkv_bias and not q.attention.o_bias and not q.attention.qk_norm
    assert q.param_breakdown()["shared_expert_gates"] == 24 * 2048
    ll = load_hf_config(PUBLIC / "llama4.json")
    # Llama4TextDecoderLayer: RoPE + chunked attention (8192) unless (i + 1) % 4 == 0; every
    # layer MoE (interleave_moe_layer_step 1) with one shared expert; sigmoid router, top-1
    assert ll.layer_types.count("sliding") == 36 and ll.layer_types.count("full") == 12
    assert ll.layer_types[3] == "full" and ll.sliding_window == 8192
    assert ll.n_moe_layers == 48 and ll.n_shared_experts == 1 and ll.top_k == 1
    assert ll.router.scoring == "sigmoid" and (ll.attention.n_heads,
                                               ll.attention.n_kv_heads) == (40, 8)
    g = load_hf_config(PUBLIC / "glm4_moe.json")
    # first_k_dense_replace 1: layer 0 dense (10944 wide); sigmoid router with the correction
    # bias; one MTP layer (not counted, as in the card's 106B); q/k/v biases, o without
    assert g.moe_layer_ids == tuple(range(1, 46)) and g.dense_intermediate_size == 10944
    assert g.router.bias and g.router.scoring == "sigmoid" and g.n_mtp_layers == 1
    assert g.attention.qkv_bias and not g.attention.o_bias
    d = load_hf_config(PUBLIC / "deepseek_v2.json")
    # DeepSeek-V2-Lite: MLA without q LoRA, 2 shared experts, softmax greedy routing
    assert d.attention.q_lora_rank == 0 and d.n_shared_experts == 2
    assert d.router.scoring == "softmax" and not d.router.bias and d.moe_layer_ids[0] == 1
    b = load_hf_config(PUBLIC / "dbrx.json")
    # DBRX: attn_config/ffn_config nested; 48 heads on 8 KV heads of 128; 16 experts top-4
    assert (b.attention.n_heads, b.attention.n_kv_heads, b.attention.head_dim) == (48, 8, 128)
    assert (b.n_experts, b.top_k, b.moe_intermediate_size) == (16, 4, 10752)
    gr = load_hf_config(PUBLIC / "granitemoe.json")
    assert gr.tie_word_embeddings and gr.router.norm_topk_prob
    o = load_hf_config(PUBLIC / "olmoe.json")
    assert o.attention.qk_norm and not o.router.norm_topk_prob and o.n_moe_layers == 16


def test_a_llama4_config_without_the_nested_text_config():
    """``llama4_text`` (Llama4ForCausalLM) at top level, with dense layers interleaved
    (Maverick's interleave_moe_layer_step 2): odd layers MoE, even ones dense."""
    text = json.loads((PUBLIC / "llama4.json").read_text())["text_config"]
    text.update(interleave_moe_layer_step=2, num_hidden_layers=8, no_rope_layers=[])
    m = _load(text)
    assert m.moe_layer_ids == (1, 3, 5, 7) and m.dense_intermediate_size == 16384
    assert m.layer_types == ("sliding",) * 3 + ("full",) + ("sliding",) * 3 + ("full",)


def _load(cfg: dict):
    import tempfile

    d = Path(tempfile.mkdtemp())
    p = d / "config.json"
    p.write_text(json.dumps(cfg))
    return load_hf_config(p, name="x")


# ---- the generic reader ------------------------------------------------------------------------

def test_generic_reader_counts_as_the_family_reader_and_says_what_it_assumed():
    """DeepSeek-V2-Lite's and OLMoE's fields under an unknown model_type: the same
    sizes as their own readers (OLMoE less its q/k norm weights, which the generic reader
    cannot know of), and ``source`` names the fields read and the defaults assumed."""
    for name, diff in (("deepseek_v2", 0), ("olmoe", 16 * 2 * 128)):
        cfg = json.loads((PUBLIC / f"{name}.json").read_text())
        cfg["model_type"] = "my_moe"
        m = _load(cfg)
        own = load_hf_config(PUBLIC / f"{name}.json")
        assert m.family == "generic"
        assert own.total_params() - m.total_params() == diff
        assert own.active_params() - m.active_params() == diff
        assert "generic MoE reader" in m.source and "model_type 'my_moe'" in m.source
    assert "read hidden_act='silu', num_hidden_layers=16" in m.source
    assert "head_dim: 128 (= hidden size / query heads)" in m.source
    assert "layer_types: full attention in every layer" in m.source


def test_generic_reader_on_a_synthetic_config():
    """A hand-computed count. H=8, 3 layers (layer 0 dense, 16 wide), 4 heads of 2 on 2 KV
    heads, 4 experts of width 4, top-2, one shared expert of width 6, vocab 10, untied:
    embedding + LM head 2*10*8 = 160, final norm 8, layer norms 2*8*3 = 48,
    attention per layer q 8*8 + k, v 2*(8*4) + o 8*8 = 192 -> 576, dense 3*8*16 = 384,
    routers 2 * 8*4 = 64, shared 2 * 3*8*6 = 288, routed 2 * 4 * 3*8*4 = 768: total 2296."""
    cfg = {"model_type": "brand_new_moe", "n_layers": 3, "d_model": 8, "n_heads": 4,
           "num_kv_heads": 2, "n_experts": 4, "moe_top_k": 2, "moe_intermediate_size": 4,
           "intermediate_size": 16, "first_k_dense_replace": 1,
           "shared_expert_intermediate_size": 6, "vocab_size": 10}
    m = _load(cfg)
    assert m.total_params() == 2296
    # active: all but 2 of 4 routed experts per MoE layer: 2296 - 2 * 2 * 96
    assert m.active_params() == 2296 - 384
    assert "n_shared_experts: 1 (shared_expert_intermediate_size is given)" in m.source
    assert "n_layers=3" in m.source and "d_model=8" in m.source


def test_generic_reader_refusals():
    with pytest.raises(ConfigError, match="no expert count field.*num_experts") as e:
        _load({"model_type": "llama", "hidden_size": 8, "num_hidden_layers": 2})
    assert "supported model types" in str(e.value)
    with pytest.raises(ConfigError, match="dense layers have no width"):
        _load({"model_type": "m", "num_hidden_layers": 2, "hidden_size": 8,
               "num_attention_heads": 2, "num_experts": 4, "num_experts_per_tok": 2,
               "intermediate_size": 4, "first_k_dense_replace": 1, "vocab_size": 10})
    with pytest.raises(ConfigError, match="missing required field 'vocab_size'"):
        _load({"model_type": "m", "num_hidden_layers": 2, "hidden_size": 8,
               "num_attention_heads": 2, "num_experts": 4, "num_experts_per_tok": 2,
               "moe_intermediate_size": 4})
    with pytest.raises(ConfigError, match="hidden_act.*unsupported value 'gelu'"):
        _load({"model_type": "m", "hidden_act": "gelu", "num_experts": 4})
    assert GENERIC_FIELDS["experts"][0] == "num_experts"


# ---- a user's model end to end: its router named and selectable ------------------------------

def _row(**kw):
    from sieve.system.run import RunConfig, simulate_run

    base = dict(model=str(PUBLIC / "olmoe.json"), system="1xb200", method="allexp", batch=4,
                steps=1, warmup=0, layers=1)
    return simulate_run(RunConfig(**{**base, **kw}), keep_steps=True)


def test_the_router_a_model_gets_is_named_and_selectable():
    from sieve.system.run import RunConfig

    own = _row(model="qwen3-30b-a3b").row
    assert (own["router"], own["router_source"]) == ("qwen3-30b-a3b", "own")
    default = _row()
    assert default.row["router"] == "qwen3-30b-a3b"
    assert default.row["router_source"].startswith("default")
    chosen = _row(router="Mixtral-8x7B")
    assert (chosen.row["router"], chosen.row["router_source"]) == ("mixtral-8x7b", "chosen")
    # a different fit routes differently (Mixtral's is far more uniform: more experts active)
    act = [sum(p["experts_active"] for p in r.steps[0].partitions) for r in (default, chosen)]
    assert act[0] != act[1]
    with pytest.raises(ConfigError, match=r"router \(--router\) 'gpt-oss'.*did you mean "
                                          r"'gpt-oss-20b'.*known: deepseek-v3"):
        RunConfig(model="qwen3-30b-a3b", system="1xb200", router="gpt-oss")
    with pytest.raises(ConfigError, match="a trace routes the steps itself"):
        RunConfig(model="qwen3-30b-a3b", system="1xb200", router="gpt-oss-120b",
                  trace="t.npz")


def test_cli_runs_a_public_config_and_says_how_it_read_it(tmp_path, capsys):
    from sieve.cli import main

    out = tmp_path / "o"
    rc = main(["run", "--model", str(PUBLIC / "granitemoe.json"), "--system", "1xb200",
               "--batch", "2", "--methods", "allexp,sieve-cp", "--layers", "1", "--warmup",
               "0", "--router", "gpt-oss-120b", "--out", str(out), "--jobs", "1"])
    text = capsys.readouterr().out
    assert rc == 0
    assert "# granitemoe: family granitemoe, 1.33B parameters, from " in text
    assert "routed by the synthetic router fitted to gpt-oss-120b (chosen" in text
    import csv

    rows = list(csv.DictReader((out / "runs.csv").open()))
    assert {r["router"] for r in rows} == {"gpt-oss-120b"} and len(rows) == 2


def test_cli_model_shows_a_generic_config(tmp_path, capsys):
    from sieve.cli import main

    cfg = json.loads((PUBLIC / "olmoe.json").read_text())
    cfg["model_type"] = "my_moe"
    p = tmp_path / "config.json"
    p.write_text(json.dumps(cfg))
    assert main(["model", str(p)]) == 0
    text = capsys.readouterr().out
    assert "family generic, 16 layers (16 full)" in text
    assert "generic MoE reader; read" in text and "assumed" in text
    assert "synthetic router: the fit to qwen3-30b-a3b (default" in text
    assert main(["model"]) == 0
    listing = capsys.readouterr().out
    assert "gpt-oss-120b" in listing and "olmoe" in listing and "generic reader" in listing


def test_writing_back_is_refused_in_one_line_for_read_only_families():
    from sieve.model.hf_config import to_hf_config

    with pytest.raises(ConfigError, match="cannot write family 'olmoe' .supported: "
                                          "deepseek_v3, gpt_oss"):
        to_hf_config(load_hf_config(PUBLIC / "olmoe.json"))
