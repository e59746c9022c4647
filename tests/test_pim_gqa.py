"""PIM units for grouped-query attention (pim.vectors_per_read, pim.softmax_per_ck).

The gate: one request's decode attention with group 1 (multi-head) and group 8 (GQA-8) on
each PIM preset, its command counts computed here by hand from the shapes (not from the
lowering), and its time against the internal-bandwidth bound. A PU that feeds one vector per
column read (vectors_per_read = 1) streams the cache once per query head; one that feeds 8
streams it once per KV head.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from sieve.dram.device import GemvKernel, run_pim
from sieve.dram.presets import PRESETS, get_spec
from sieve.errors import ConfigError
from sieve.model.moe import get_model
from sieve.pim.attention import run_attention
from sieve.pim.layout import gemv_layout

#: The PIM presets of issue 15 part 1 and the seed's default.
PRESETS_GQA = ("b200-hbm3e-pim", "neupims-hbm2-pim", "attacc-hbm3-pim", "duplex-logic-pim",
               "b200-logic-pim")
TOKENS = 4096  # every split below divides evenly at this context length
HEAD_DIM = 128


def _model(group: int):
    m = get_model("qwen3-30b-a3b")
    att = replace(m.attention, n_heads=group, n_kv_heads=1, head_dim=HEAD_DIM)
    return replace(m, attention=att)


def _hand_counts(spec, group: int) -> dict[str, int]:
    """Commands of one slice (T tokens x 128, one KV head, ``group`` query heads) on one PC."""
    o, p = spec.org, spec.pim
    elems = o.access_bytes // 2  # bf16 elements per burst
    pus = p.pus_per_pc(o)
    passes = math.ceil(group / p.vectors_per_read)
    # score K (T x 128): each PU holds T / PUs rows of 128 / elems bursts
    score_macs = TOKENS // pus * (HEAD_DIM // elems)
    # value V^T (128 x T): each PU holds 128 / PUs rows of T / elems bursts
    value_macs = HEAD_DIM // pus * (TOKENS // elems)
    unit = p.softmax_per_ck > 0
    q_bursts = HEAD_DIM * 2 // o.access_bytes  # one query vector
    p_bursts = TOKENS * 2 // o.access_bytes  # one probability vector
    return {
        # MACAB on all-bank PUs, MACSB where the PUs read bank bundles (pim.bundles)
        spec.pim_mac_command: passes * (score_macs + value_macs),
        # every query vector written once; the probabilities only for a GPU softmax
        "GWRITE": group * (q_bursts + (0 if unit else p_bursts)),
        # the scores read back only for a GPU softmax; every output row (128 x 2 B)
        "RDRES": group * ((0 if unit else p_bursts) + HEAD_DIM * 2 // o.access_bytes),
    }


@pytest.mark.parametrize("name", PRESETS_GQA)
@pytest.mark.parametrize("group", (1, 8))
def test_attention_commands_by_hand(name, group):
    spec = get_spec(name)
    r = run_attention(spec, _model(group), 0, [TOKENS], pcs_per_slice=1)
    want = _hand_counts(spec, group)
    got = {k: r.pim.command_counts.get(k, 0) for k in want}
    assert got == want
    # nothing else streams: the MACs alone take MACs x nCCDAB, all on one PC
    t = spec.timing
    assert r.time_ns >= want[spec.pim_mac_command] * t.nCCDAB * spec.tCK_ns


@pytest.mark.parametrize("name", PRESETS_GQA)
def test_group_8_costs_what_the_pu_says(name):
    """GQA-8 against multi-head attention of the same cache: a vectors_per_read = 8 PU pays
    the same weight stream (only the 8 query / output vectors' I/O more), a 1-vector PU 8x."""
    spec = get_spec(name)
    t1 = run_attention(spec, _model(1), 0, [TOKENS], pcs_per_slice=1).time_ns
    t8 = run_attention(spec, _model(8), 0, [TOKENS], pcs_per_slice=1).time_ns
    if spec.pim.vectors_per_read >= 8:
        assert t8 / t1 < 1.3
    else:
        assert t8 / t1 > 6.0


@pytest.mark.parametrize("name", ("duplex-logic-pim", "b200-logic-pim"))
@pytest.mark.parametrize("ctx,batch", ((2048, 16), (4096, 64), (8192, 16)))
def test_gqa_capable_attention_near_internal_bound(name, ctx, batch):
    """A whole GQA-8 layer (Qwen3-30B-A3B: 32 query heads on 4 KV heads) on a GQA-capable
    preset runs within 30 % of its internal-bandwidth bound (issue 15; docs/validation.md, "PIM
    attention against the internal-bandwidth bound": 1.18-1.27x). Its PUs read bank bundles
    (Duplex's Logic-PIM), so a bundle's row switch hides behind the other's stream; what is
    left above the bound, per PC: all-bank refresh (tRFC / tREFI: 9 % on HBM3, 11.5 % on
    HBM3E), the query and output bursts over the channel bus, the first activation and the
    softmax of a group's last slice. With every bank activated at once (pim.bundles = 1) the
    row switches add 9-13 % and the same layer needs up to 1.35x."""
    spec = get_spec(name)
    r = run_attention(spec, "qwen3-30b-a3b", 0, [ctx] * batch)
    bound = r.kv_bytes / spec.pim_internal_bandwidth_gbs
    assert bound <= r.time_ns <= 1.30 * bound
    flat = spec.override({"pim.bundles": 1})
    r1 = run_attention(flat, "qwen3-30b-a3b", 0, [ctx] * batch)
    assert r1.time_ns > 1.03 * r.time_ns  # the row switches no longer hidden


def test_vector_passes_in_the_engine():
    """A kernel of 5 vectors in passes of 2 issues 3 passes of MACs and each vector's GWRITEs
    and RDRESs once: the commands of its three passes issued as one-vector kernels whose
    GWRITE/RDRES counts are the passes'."""
    spec = get_spec("b200-logic-pim")
    k = gemv_layout(spec, 512, 256, 1).kernel
    k5 = replace(k, n_vectors=5, vectors_per_pass=2)
    r = run_pim(spec, [k5])  # every PC runs the kernel: counts are per PC x PCs
    n = spec.org.total_pseudochannels
    mac = spec.pim_mac_command
    assert r.command_counts[mac] == n * 3 * k.n_chunks * k.rows_per_chunk * k.macs_per_row
    assert r.command_counts[mac] == n * k5.macs
    assert r.command_counts["GWRITE"] == n * 5 * k.n_chunks * k.gw_per_chunk
    assert r.command_counts["RDRES"] == n * 5 * k.n_res
    parts = [replace(k, n_vectors=1, gw_per_chunk=k.gw_per_chunk * g, n_res=k.n_res * g,
                     vectors_per_pass=1) for g in (2, 2, 1)]
    r2 = run_pim(spec, parts)
    assert r.command_counts == r2.command_counts
    # the same commands, except that a separate kernel starts only once the previous one's
    # last result has arrived (read latency), where the next pass of one kernel does not wait
    t = spec.timing
    assert r.time_ns <= r2.time_ns <= r.time_ns + 2 * (t.nCL + t.nBL) * spec.tCK_ns


def test_vectors_per_read_validation():
    spec = get_spec("b200-hbm3e-pim")
    with pytest.raises(ConfigError, match="vectors_per_read"):
        spec.override({"pim.vectors_per_read": 0})
    with pytest.raises(ConfigError, match="gbuf_bytes"):
        spec.override({"pim.vectors_per_read": 128})  # 128 x 32 B > the 2 KB buffer
    with pytest.raises(ConfigError, match="vectors_per_read must be 1"):
        get_spec("samsung-hbm2-pim").override({"pim.vectors_per_read": 2})
    with pytest.raises(ConfigError, match="softmax_per_ck"):
        spec.override({"pim.softmax_per_ck": -1})
    with pytest.raises(ConfigError, match="vectors_per_pass"):
        GemvKernel(1, 1, 1, 1, 1, 1, vectors_per_pass=0)
    # peak throughput counts every vector a read feeds
    v8 = spec.override({"pim.vectors_per_read": 8, "pim.gbuf_bytes": 8192})
    assert v8.pim_peak_tflops == pytest.approx(8 * spec.pim_peak_tflops)


def test_presets_cite_their_pu():
    for name in PRESETS_GQA:
        s = PRESETS[name]
        assert s.pim is not None
        if s.pim.vectors_per_read > 1 or name != "b200-hbm3e-pim":
            assert any(k.startswith("pim") for k in s.sources), name
    assert PRESETS["duplex-logic-pim"].pim_peak_tflops == pytest.approx(5 * 21.3, rel=0.01)
    assert np.isclose(PRESETS["duplex-logic-pim"].pim_internal_bandwidth_gbs
                      / PRESETS["duplex-logic-pim"].peak_bandwidth_gbs, 4.0)
