"""PIM lowerings: 2-D GEMV layout, expert FFN (TP / EP), shared experts, attention, cost table."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from sieve import dram, pim
from sieve.dram import checker
from sieve.dram.pimmode import result_rows
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError
from sieve.model.moe import get_model
from sieve.pim.attention import attention_slices, gdn_decode_gpu_ns, run_attention
from sieve.pim.costs import PimCostTable
from sieve.pim.ffn import (
    FfnShape,
    ffn_shape,
    run_expert_ffn,
    run_moe_ep,
    run_moe_tp,
    run_shared_experts,
)

B200 = "b200-hbm3e-pim"
SHAPES = {m: ffn_shape(m) for m in ("qwen3-30b-a3b", "gpt-oss-120b", "qwen3.5-397b-a17b")}


def small(name: str = B200):
    """1 stack x 4 channels (8 PCs): fast full simulations and logs."""
    return get_spec(name).override(stacks=1, channels=4)


def internal_ns(spec, nbytes: float) -> float:
    return nbytes / get_spec(spec).pim_internal_bandwidth_gbs


def one_refresh_ns(spec) -> float:
    """What one refresh can cost a kernel: tRFC plus closing and re-opening its row. Programs
    with idle GPU steps are monotone only up to this: the engine refreshes on schedule, so a
    little more work can move a due refresh from a busy kernel into an idle gap."""
    t = get_spec(spec).timing
    return (t.nRFC + t.nRP + t.nRCDRD + t.nRAS) * get_spec(spec).tCK_ns


@pytest.mark.parametrize("rows,cols", [(5760, 2880), (1536, 2048)])
def test_gemv_is_bounded_and_strictly_monotone_in_tokens_and_size(rows, cols):
    spec = get_spec(B200)
    prev = 0.0
    for n in range(1, 17):
        lay = pim.gemv_layout(spec, rows, cols, n)
        t = dram.run_pim(spec, [lay.kernel]).time_ns
        assert t >= n * internal_ns(spec, lay.weight_bytes) and t >= prev
        prev = t
    prev = 0.0
    for scale in (1, 2, 3, 4, 6, 8):
        lay = pim.gemv_layout(spec, rows * scale, cols, 2)
        t = dram.run_pim(spec, [lay.kernel]).time_ns
        assert t >= 2 * internal_ns(spec, lay.weight_bytes) and t >= prev
        prev = t


# ---- 2-D layout --------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols", [(4096, 4096), (1536, 2048), (2048, 768), (5760, 2880)])
def test_2d_layout_beats_row_only_and_is_the_best_candidate(rows, cols):
    spec = get_spec(B200)
    auto = pim.gemv_layout(spec, rows, cols)
    t = {c: dram.run_pim(spec, [pim.gemv_kernel(spec, rows, cols, col_groups=c)]).time_ns
         for c in pim.col_group_choices(spec, cols)}
    assert t[auto.col_groups] == min(t.values())
    assert t[auto.col_groups] < t[1]
    assert auto.padding <= pim.gemv_layout(spec, rows, cols, col_groups=1).padding
    assert auto.row_groups * auto.col_groups == spec.org.total_pseudochannels


def test_2d_layout_counts():
    spec = get_spec(B200)
    lay = pim.gemv_layout(spec, 1536, 2048, col_groups=16)
    k = lay.kernel
    assert (lay.row_groups, lay.rows_per_pc, lay.cols_per_pc) == (16, 96, 128)
    assert lay.padding == 0.0  # 96 rows = 3 per PU, 128 columns = 8 bursts
    assert k.gw_per_chunk * k.n_chunks * 32 == 128 * 2  # only the PC's slice of x
    assert k.n_res * 32 == 96 * 2  # partial sums of the PC's rows
    assert lay.reduce_bytes == 256 * 96 * 2 and lay.readback_bytes == lay.reduce_bytes
    assert k.macs * 256 * 32 * 32 == lay.padded_weight_bytes
    # row-only: 1536 rows over 256 PCs = 6 rows for 32 PUs -> 81 % padding
    assert pim.gemv_layout(spec, 1536, 2048, col_groups=1).padding == pytest.approx(0.8125)


def test_output_tiles_repeat_the_input_pass_per_tile():
    """tile_rows=T: a PU's rows padded to a multiple of T and run as one kernel per tile, at
    the rows after the previous tile's weights and results; without it, one kernel."""
    spec = get_spec("samsung-hbm2-pim")  # 64 pCH x 8 PUs = 512 PUs
    plain = pim.gemv_layout(spec, 8192, 4096, col_groups=1)
    assert plain.kernels() == [plain.kernel] and plain.output_tiles == 1
    lay = pim.gemv_layout(spec, 8192, 4096, col_groups=1, tile_rows=8)
    one = pim.gemv_layout(spec, 4096, 4096, col_groups=1)  # 8 rows per PU: one tile's work
    assert lay.output_tiles == 2 and lay.rows_per_pu == 16 == plain.rows_per_pu
    ks = lay.kernels()
    assert len(ks) == 2 and ks[0] == one.kernel
    assert ks[1] == dataclasses.replace(one.kernel, base_row=lay.tile_stride)
    assert lay.tile_stride == one.dram_rows + result_rows(spec)
    assert lay.padded_weight_bytes == 2 * one.padded_weight_bytes == plain.padded_weight_bytes
    assert lay.readback_bytes == 2 * one.readback_bytes and lay.weight_bytes == 8192 * 4096 * 2
    # each tile writes the whole input again: twice the GRF_A writes of the one-pass layout
    assert sum(k.gw_per_chunk * k.n_chunks for k in ks) == 2 * (
        plain.kernel.gw_per_chunk * plain.kernel.n_chunks)
    # fewer rows than a tile: padded to one tile (PIMSimulator's 8 GRF_B rows per block)
    small_ = pim.gemv_layout(spec, 1024, 4096, col_groups=1, tile_rows=8)
    assert small_.output_tiles == 1 and small_.kernel == one.kernel
    assert small_.padding == pytest.approx(0.75)
    # the second tile's kernel starts right after the first: about twice one tile's time
    t1 = dram.run_pim(spec, [one.kernel]).time_ns
    t2 = dram.run_pim(spec, ks).time_ns
    assert 1.98 * t1 < t2 < 2.02 * t1
    with pytest.raises(ConfigError, match="tile_rows"):
        pim.gemv_layout(spec, 64, 64, tile_rows=0)
    with pytest.raises(ConfigError, match="tile_rows 1099511627776: one output tile"):
        pim.gemv_layout(spec, 64, 64, tile_rows=2 ** 40)
    # (one bank parity per input chunk: the 128 chunks' rows over the even and odd banks)
    with pytest.raises(ConfigError, match="600 output tiles .tile_rows 1. needs 39000 rows"):
        pim.gemv_layout(spec, 512 * 600, 16384, col_groups=1, tile_rows=1)


def test_layout_errors():
    with pytest.raises(ConfigError, match="col_groups 3 is not a divisor"):
        pim.gemv_layout(B200, 64, 64, col_groups=3)
    with pytest.raises(ConfigError, match="auto, fast"):
        pim.gemv_layout(B200, 64, 64, col_groups="best")
    with pytest.raises(ConfigError, match="n_pcs"):
        pim.gemv_layout(B200, 64, 64, n_pcs=1000)


# ---- expert FFN ------------------------------------------------------------------------------

@pytest.mark.parametrize("model", list(SHAPES))
@pytest.mark.parametrize("order", ["token", "expert"])
def test_ffn_bounds_and_monotone_in_tokens(model, order):
    shape = SHAPES[model]
    prev = 0.0
    for n in range(1, 17):
        r = run_expert_ffn(B200, shape, n, order=order)
        assert r.time_ns >= n * internal_ns(B200, shape.weight_bytes_bf16)
        assert r.time_ns >= prev - one_refresh_ns(B200)
        prev = max(prev, r.time_ns)
        assert r.imbalance < 1.01  # TP: every PC equally busy up to bus arbitration


def test_ffn_monotone_in_size():
    prev = 0.0
    for inter in (256, 512, 768, 1024, 1536, 2048, 2880, 4096):
        r = run_expert_ffn(B200, FfnShape(2048, inter), 2, order="expert")
        assert r.time_ns >= prev - one_refresh_ns(B200)
        prev = max(prev, r.time_ns)


def test_ffn_orders_and_gaps():
    shape = SHAPES["qwen3-30b-a3b"]
    tok = run_expert_ffn(B200, shape, 4, order="token")
    exp = run_expert_ffn(B200, shape, 4, order="expert")
    assert tok.act_ns == pytest.approx(4 * exp.act_ns, rel=0.05)  # one GPU step per token
    assert exp.time_ns < tok.time_ns
    assert tok.act_ns > 4 * 2500  # the calibrated t0_gemm (2.56 us) per step
    free = run_expert_ffn(B200, shape, 4, order="token", gpu_fixed_ns=0.0)
    assert free.time_ns < tok.time_ns - 4 * 2000
    # a down kernel never starts before its gate/up results plus the GPU step
    s, e = tok.pim.kernel_times_ns(0)
    gap = tok.act_ns / 4
    assert np.all(s[1::2] >= e[0::2] + gap - 1.0)


def test_tp_layer_is_balanced_and_ep_skew_is_reported():
    spec = get_spec(B200)
    shape = SHAPES["qwen3-30b-a3b"]
    counts = np.zeros(128, dtype=np.int64)
    counts[:6] = [12, 6, 3, 2, 1, 1]  # skewed: expert 0 is hot
    tp = run_moe_tp(spec, shape, counts, order="expert")
    assert tp.imbalance < 1.01
    busy = tp.pim.pc_busy_ns
    assert (busy.max() - busy.min()) / busy.max() < 0.01
    assert tp.time_ns >= counts.sum() * internal_ns(spec, shape.weight_bytes_bf16)
    assert np.all(np.diff(tp.expert_start_ns) > 0)  # experts run one after another
    ep = run_moe_ep(spec, shape, counts, order="expert")
    assert ep.pcs_per_expert == 2 and ep.pim.simulated_channels == 128
    assert ep.imbalance > 10  # most groups are idle, group 0 does 12 tokens
    assert ep.group_busy_ns.argmax() == 0
    # a group's PCs hold 1/128 of the PIM: its expert streams at most that share of the peak
    g_ns = 12 * internal_ns(spec, shape.weight_bytes_bf16) * 128
    assert ep.time_ns >= g_ns


def test_ep_placement_and_errors():
    spec = get_spec(B200)
    shape = SHAPES["gpt-oss-120b"]
    counts = np.array([3, 0, 1, 2] * 8)
    r = run_moe_ep(spec, shape, counts, pcs_per_expert=16, placement=np.zeros(32, dtype=int))
    assert r.group_busy_ns[0] > 0 and np.all(r.group_busy_ns[1:] == 0)
    assert np.all(np.diff(r.expert_start_ns) > 0)
    with pytest.raises(ConfigError, match="pcs_per_expert must divide"):
        run_moe_ep(spec, shape, counts, pcs_per_expert=3)
    with pytest.raises(ConfigError, match="placement"):
        run_moe_ep(spec, shape, counts, placement=[0] * 3)
    with pytest.raises(ConfigError, match="order 'random' unknown"):
        run_moe_tp(spec, shape, counts, order="random")
    with pytest.raises(ConfigError, match="token_counts"):
        run_moe_tp(spec, shape, [-1, 2])
    with pytest.raises(ConfigError, match="n_tokens"):
        run_expert_ffn(spec, shape, 0)


def test_shared_experts_take_every_token():
    r = run_shared_experts(B200, "qwen3.5-397b-a17b", 8, order="expert")
    assert list(r.tokens) == [8]
    single = run_expert_ffn(B200, ffn_shape("qwen3.5-397b-a17b", shared=True), 8,
                            order="expert")
    assert r.time_ns == single.time_ns
    with pytest.raises(ConfigError, match="no shared experts"):
        run_shared_experts(B200, "gpt-oss-120b", 8)


# ---- cost table ------------------------------------------------------------------------------

def test_memoised_table_equals_fresh_simulation():
    table = PimCostTable(B200, order="token")
    rng = np.random.default_rng(7)
    for _ in range(6):
        shape = SHAPES[list(SHAPES)[rng.integers(len(SHAPES))]]
        n = int(rng.integers(1, 17))
        first = table.expert_ns(shape, n)
        again = table.expert_ns(shape, n)
        assert first == again == table.fresh_ns(shape, n)
    assert table.hits >= 6 and len(table) == table.misses
    other = PimCostTable("samsung-hbm2-pim", order="expert")
    shape = SHAPES["qwen3-30b-a3b"]
    assert other.expert_ns(shape, 3) == other.fresh_ns(shape, 3) != table.expert_ns(shape, 3)


def test_refresh_phase_average_and_start_offset():
    spec = get_spec(B200)
    shape = SHAPES["gpt-oss-120b"]
    refi = spec.timing.nREFI * spec.tCK_ns
    avg = PimCostTable(spec, order="expert", phases=2)
    runs = [run_expert_ffn(spec, shape, 2, order="expert", start_ns=s) for s in (0, refi / 2)]
    assert avg.expert_ns(shape, 2) == pytest.approx(np.mean([r.total_ns for r in runs]))
    assert avg.expert_ns(shape, 2) == avg.fresh_ns(shape, 2)
    late = runs[1]
    assert late.expert_start_ns[0] == 0.0 and late.time_ns == late.expert_end_ns[0]
    assert late.pim.kernel_start_ns[0] == pytest.approx(refi / 2)
    with pytest.raises(ConfigError, match="phases"):
        PimCostTable(spec, phases=0)
    with pytest.raises(ConfigError, match="start_ns"):
        run_expert_ffn(spec, shape, 1, start_ns=-1.0)


# ---- attention -------------------------------------------------------------------------------

def test_attention_slices_per_layer_type():
    gpt = get_model("gpt-oss-120b")
    full = gpt.layer_types.index("full")
    slid = gpt.layer_types.index("sliding")
    s = attention_slices(gpt, full, [1000, 50])
    assert len(s) == 2 * 8 and {x.n_q for x in s} == {8} and {x.tokens for x in s} == {1000, 50}
    assert {x.tokens for x in attention_slices(gpt, slid, [1000, 50])} == {128, 50}
    ds = attention_slices("deepseek-v3", 0, [300])
    assert len(ds) == 1 and (ds[0].d_k, ds[0].d_v, ds[0].n_q) == (576, 512, 128)
    q35 = get_model("qwen3.5-397b-a17b")
    assert attention_slices(q35, q35.layer_types.index("gdn"), [100]) == []


@pytest.mark.parametrize("model,ltype", [("qwen3-30b-a3b", "full"), ("gpt-oss-120b", "sliding"),
                                         ("deepseek-v3", "mla")])
def test_attention_bounds_barrier_and_monotone(model, ltype):
    m = get_model(model)
    layer = m.layer_types.index(ltype)
    prev = 0.0
    for ctx in (64, 300, 2000):
        lens = np.array([ctx, ctx // 2 + 1, 17])
        r = run_attention(B200, m, layer, lens)
        per_vec = sum(s.n_q * s.tokens * (s.d_k + s.d_v) * 2
                      for s in attention_slices(m, layer, lens))
        assert r.time_ns >= internal_ns(B200, per_vec)
        assert r.time_ns >= prev - one_refresh_ns(B200)
        prev = max(prev, r.time_ns)
        # the value phase starts after every score is back plus the GPU softmax
        ends = r.pim.kernel_end_ns
        starts = r.pim.kernel_start_ns
        n = r.pim.kernel_ptr
        for q in range(0, r.pim.n_pcs, 37):
            k = n[q + 1] - n[q]
            if k:
                assert starts[n[q] + k // 2] >= r.score_ns + r.softmax_ns - 1.0
                assert ends[n[q]: n[q] + k // 2].max() <= r.score_ns


def test_sliding_window_caps_the_cache():
    gpt = get_model("gpt-oss-120b")
    layer = gpt.layer_types.index("sliding")
    a = run_attention(B200, gpt, layer, [128, 128])
    b = run_attention(B200, gpt, layer, [5000, 128])
    assert a.time_ns == b.time_ns and a.kv_bytes == b.kv_bytes


def test_gdn_stays_on_the_gpu():
    q35 = get_model("qwen3.5-397b-a17b")
    layer = q35.layer_types.index("gdn")
    r = run_attention(B200, q35, layer, [10, 100000])
    assert not r.on_pim and r.time_ns == 0 and r.pim is None
    assert r.gpu_ns == gdn_decode_gpu_ns(q35, layer, 2)
    state = 2 * q35.recurrent_state_bytes(layer)
    assert r.gpu_ns > 1e9 * 2 * state / 8.0e12  # read + write at most at spec bandwidth
    assert gdn_decode_gpu_ns(q35, layer, 8) > r.gpu_ns
    with pytest.raises(ConfigError, match="not 'gdn'"):
        gdn_decode_gpu_ns(q35, q35.layer_types.index("full"), 1)
    with pytest.raises(ConfigError, match="context_lens"):
        run_attention(B200, q35, 3, [0])


# ---- command logs ------------------------------------------------------------------------------

@pytest.mark.parametrize("name", [B200, "samsung-hbm2-pim"])
def test_kernel_streams_have_zero_checker_violations(name):
    spec = small(name)
    shape = FfnShape(512, 256)
    counts = np.array([3, 1, 0, 2, 1, 0, 0, 1])
    logs = [run_moe_tp(spec, shape, counts, order="token", log=True).pim.log,
            run_moe_ep(spec, shape, counts, order="expert", log=True).pim.log]
    m = get_model("qwen3-30b-a3b")
    logs.append(run_attention(spec, m, 0, [200, 33, 1000], log=True).pim.log)
    for log in logs:
        rep = checker.check_log(log, spec)
        assert rep.ok, rep.summary()
        assert len(log) > 1000


@pytest.mark.parametrize("name", [B200, "samsung-hbm2-pim"])
def test_analytic_estimate_is_close_to_the_engine(name):
    spec = get_spec(name)
    for rows, cols in ((4096, 4096), (1536, 2048), (2048, 768), (5760, 2880), (2048, 512)):
        for cg in (1, 4, 16):
            k = pim.gemv_kernel(spec, rows, cols, 2, col_groups=cg)
            est = pim.estimate_kernel_ns(spec, k)
            assert est == pytest.approx(dram.run_pim(spec, [k]).time_ns, rel=0.25)


def test_validation_section_is_current():
    """docs/validation.md's PIM section equals a fresh run of benchmarks/pim_report.py."""
    import re
    from pathlib import Path

    from conftest import benchmark_module

    root = Path(__file__).resolve().parents[1]
    doc = root / "docs" / "validation.md"
    if not doc.exists():
        pytest.skip("docs/validation.md absent")
    mod = benchmark_module("pim_report")
    m = re.search(r"<!-- pimk:begin.*?<!-- pimk:end -->", doc.read_text(), re.DOTALL)
    assert m, "PIM kernels section missing from docs/validation.md"
    assert m.group(0) == mod.section(), f"docs/validation.md PIM section is stale: {mod.CMD}"


def test_attention_layout_cache_and_row_placement_change_nothing():
    """The layouts shared between calls and the cheap row placement give the results of
    fresh layouts and dataclasses.replace."""
    from dataclasses import replace

    from sieve.dram.device import GemvKernel
    from sieve.pim import attention as A

    k = GemvKernel(2, 3, 4, 5, 6, 7, gap_ns=1.5, sync="group", group=2)
    assert A._at_row(k, 11) == replace(k, base_row=11)
    assert A._at_row(k, 11).base_row == 11 and k.base_row == 0
    lens = [300, 41, 1200]
    first = A.run_attention("b200-hbm3e-pim", "qwen3-30b-a3b", 0, lens)
    assert A._LAYOUTS
    again = A.run_attention("b200-hbm3e-pim", "qwen3-30b-a3b", 0, lens)
    A._LAYOUTS.clear()
    fresh = A.run_attention("b200-hbm3e-pim", "qwen3-30b-a3b", 0, lens)
    for r in (again, fresh):
        assert r.time_ns == first.time_ns and r.score_ns == first.score_ns
        assert r.pim.command_counts == first.pim.command_counts


def test_kernel_evolve_is_a_checked_replace():
    """GemvKernel.evolve equals dataclasses.replace on valid changes and refuses what the
    constructor refuses (ConfigError naming the field), and an unknown field (TypeError)."""
    from dataclasses import replace

    from sieve.dram.device import GemvKernel
    from sieve.dram.pim_device import _KERNEL_CHECKS

    assert set(_KERNEL_CHECKS) == set(GemvKernel.__dataclass_fields__)  # every field checked
    k = GemvKernel(2, 3, 4, 5, 6, 7, gap_ns=1.5, sync="group", group=2)
    for ch in ({"base_row": 9}, {"n_vectors": 5, "gap_ns": 0.0, "sync": "all"},
               {"vectors_per_pass": 4}, {"group": 0, "sync": False}, {}):
        e = k.evolve(**ch)
        assert e == replace(k, **ch) and e is not k
        assert hash(e) == hash(replace(k, **ch))
    assert k.base_row == 0 and k.sync == "group"
    for ch, msg in (({"n_vectors": 0}, "n_vectors and n_chunks"), ({"gap_ns": -1.0}, "gap_ns"),
                    ({"gap_ns": float("nan")}, "gap_ns"), ({"sync": "pc"}, "sync"),
                    ({"group": True}, "group"), ({"base_row": 2**41}, "base_row"),
                    ({"vectors_per_pass": 0}, "vectors_per_pass"), ({"n_res": 1.5}, "n_res")):
        with pytest.raises(ConfigError, match=msg):
            k.evolve(**ch)
        with pytest.raises(ConfigError, match=msg):
            replace(k, **ch)
    with pytest.raises(TypeError, match="no field 'rows'"):
        k.evolve(rows=3)
