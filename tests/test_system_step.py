"""The step simulator (sieve.system): hand-checkable steps, invariants, determinism, options."""

from __future__ import annotations

import numpy as np
import pytest

from sieve import hw
from sieve.dram.device import PimDevice
from sieve.errors import ConfigError
from sieve.hw.cost import GroupedExperts, MemoryStream
from sieve.hw.layer_ops import expert_shape, mixer_gemms, router_op, weight_bytes
from sieve.model.moe import MoeModel, get_model
from sieve.model.parts import GqaAttention
from sieve.pim.attention import run_attention
from sieve.system.run import RunConfig, simulate_run
from sieve.system.step import (
    ROUTE_ENTRY_BYTES,
    StepBatch,
    StepOptions,
    SystemState,
    simulate_step,
)
from sieve.workload.trace import DECODE

TINY = MoeModel(
    name="tiny", family="qwen3_moe", n_layers=1, hidden_size=256, vocab_size=1024,
    layer_types=("full",), attention=GqaAttention(4, 2, 64), n_experts=2, top_k=1,
    moe_intermediate_size=128, moe_layer_ids=(0,), source="test model")


def _batch(model, routes, contexts):
    n = len(routes)
    ids = np.array(routes, dtype=np.int64).reshape(n, 1, -1)
    return StepBatch(np.full(n, DECODE), np.array(contexts), np.ones(n, dtype=np.int64), ids,
                     (0,))


def test_gpu_only_step_is_the_sum_of_its_kernels():
    """One GPU, one layer, two experts, no PIM: every task follows the previous one, so the
    step is the sum of the calibrated kernel times (closed form from the cost model)."""
    system = hw.get_system("1xb200")
    state = SystemState(TINY, system, StepOptions(method="gpu-only"))
    res = simulate_step(state, _batch(TINY, [[0], [1], [1]], [100, 200, 300]))
    e = state.precise
    pre, post = mixer_gemms(TINY, 0, 3)
    from sieve.hw.layer_ops import gpu_decode_attention, lm_head_op, sampler_op

    # the decoder layer's small kernels, by hand: RMSNorm reads x and the residual, writes x
    # (BF16) and reads its weights; RoPE reads/writes q and k, writes k and v to the cache
    norm = MemoryStream(3 * 256 * 2.0 * 3 + 256 * 2.0)
    rope = MemoryStream(3 * ((4 + 2) * 64 * 2.0 * 2 + 2 * 2 * 64 * 2))
    expect = (e.gpu_ns([norm]) + e.gpu_ns(list(pre)) + e.gpu_ns([rope])
              + e.gpu_ns([gpu_decode_attention(TINY, 0, np.array([101, 201, 301]), "bf16")])
              + e.gpu_ns(list(post)) + e.gpu_ns([norm]) + e.gpu_ns([router_op(TINY, 3)])
              + e.gpu_ns([MemoryStream(3 * 1 * 8.0)])  # metadata
              + e.gpu_ns([GroupedExperts([1, 2], expert_shape(TINY))])
              + e.gpu_ns([MemoryStream(3 * 1 * 256 * 2.0 * 2)])  # permute + weighted sum
              + e.gpu_ns([lm_head_op(TINY, 3)])
              + e.gpu_ns([MemoryStream(3 * 1024 * 4.0 * 2)]))  # sampling, fp32 logits
    assert e.gpu_ns([sampler_op(TINY, 3)]) == e.gpu_ns([MemoryStream(3 * 1024 * 4.0 * 2)])
    assert res.step_ns == pytest.approx(expect, rel=1e-12)
    assert res.makespan_ns == pytest.approx(expect, rel=1e-12)
    assert res.busy_ns.get("pim0", 0.0) == 0.0
    # every HBM weight load of a kernel comes right before its compute, so the GPU and HBM
    # lanes together cover the step without gaps
    assert res.busy_ns["gpu0"] + res.busy_ns["hbm0"] == pytest.approx(expect, rel=1e-12)
    assert ROUTE_ENTRY_BYTES == 8


def test_allexp_step_runs_attention_and_experts_on_the_device():
    """With PIM, attention and the experts are engine programs on the GPU's device: the step's
    PIM task durations equal the engine run on an identical device started at the same time."""
    system = hw.get_system("1xb200")
    state = SystemState(TINY, system, StepOptions(method="allexp", pim_order="layer"))
    res = simulate_step(state, _batch(TINY, [[0], [1], [1]], [100, 200, 300]))
    attn = [t for t in res.tasks if t["name"] == "attn"]
    assert len(attn) == 1
    dev = PimDevice(system.memory)
    ref = run_attention(system.memory, TINY, 0, np.array([101, 201, 301]),
                        gpu=system.gpu, calib=system.gpu_calibration, kv_bytes=2, device=dev,
                        start_ns=attn[0]["start_ns"])
    assert attn[0]["end_ns"] == pytest.approx(ref.pim.end_ns + ref.tail_ns, abs=1e-9)
    assert ref.pim.start_ns - attn[0]["start_ns"] < system.memory.tick_ns  # next tick
    pim = [t for t in res.tasks if t["name"] == "experts_pim"]
    assert len(pim) == 1 and pim[0]["start_ns"] >= attn[0]["end_ns"]
    assert res.partitions[0]["experts_pim"] == 2


@pytest.fixture(scope="module")
def small_run():
    cfg = RunConfig(model="qwen3-30b-a3b", system="4xb200", method="sieve", batch=8,
                    steps=1, warmup=0, layers=2, system_overrides={"n_gpus": 2})
    return simulate_run(cfg, keep_steps=True)


def test_step_invariants(small_run):
    step = small_run.steps[0]
    for lane, busy in step.busy_ns.items():
        assert busy <= step.makespan_ns * (1 + 1e-12), lane
    path = step.critical_path
    assert sum(t["end_ns"] - t["start_ns"] for t in path) == pytest.approx(step.makespan_ns)
    for a, b in zip(path, path[1:]):
        assert b["start_ns"] == pytest.approx(a["end_ns"])
    by_lane: dict = {}
    for t in step.tasks:
        if t["kind"] in ("gpu", "hbm", "pim"):
            by_lane.setdefault((t["kind"], t["gpu"]), []).append(t)
    for ts in by_lane.values():
        ts.sort(key=lambda t: t["start_ns"])
        for a, b in zip(ts, ts[1:]):
            assert b["start_ns"] >= a["end_ns"] - 1e-6
    assert step.layers_simulated == 2 and step.n_layers == 48
    assert step.step_ns > step.layers_ns  # scaled by 48 / 2


def test_runs_are_deterministic(small_run):
    again = simulate_run(small_run.config)
    assert again.row == small_run.row


def test_two_micro_batches_and_tensor_parallelism_run():
    base = dict(model="gpt-oss-120b", system="4xb200", batch=8, steps=1, warmup=0, layers=2)
    mb = simulate_run(RunConfig(method="sieve", microbatches=2, **base)).row
    tp = simulate_run(RunConfig(method="gpu-only", parallel="tp", **base)).row
    assert mb["microbatches"] == 2 and tp["parallel"] == "tp"
    assert tp["pim_busy_frac"] == 0.0 and tp["link_busy_frac"] > 0


def test_bad_options_are_refused():
    with pytest.raises(ConfigError, match="parallel 'dp'"):
        StepOptions(parallel="dp")
    with pytest.raises(ConfigError, match="microbatches must be 1 or 2"):
        StepOptions(microbatches=3)
    with pytest.raises(ConfigError, match="scheduler 'x'"):
        StepOptions(method="x")
    with pytest.raises(ConfigError, match="batch must be an integer >= 1"):
        RunConfig(model="qwen3-30b-a3b", system="1xb200", batch=0)
    with pytest.raises(ConfigError, match="split evenly"):
        simulate_run(RunConfig(model="qwen3-30b-a3b", system="4xb200", batch=4,
                               system_overrides={"n_gpus": 3}))
    with pytest.raises(ConfigError, match="expert ids must lie"):
        simulate_step(SystemState(TINY, hw.get_system("1xb200"), StepOptions()),
                      _batch(TINY, [[5]], [10]))


def test_weight_bytes_of_operations():
    sh = expert_shape(get_model("qwen3-30b-a3b"))
    assert weight_bytes(GroupedExperts([0, 3, 1], sh), hw.get_dtype("bf16")) == 2 * sh.weights * 2
