"""RoutingTrace format, importers (tiny fixtures and the real files in ../shared) and statistics."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest
from conftest import shared_trace

from sieve.errors import ConfigError, TraceFormatError
from sieve.workload.importers import (
    read_allenai_counts,
    read_allenai_crosslayer,
    read_count_matrix,
    read_fiddler_popularity,
    read_vllm_router_log,
)
from sieve.workload.stats import (
    bin_counts,
    iid_coverage,
    load_skew,
    nmi_from_joint,
    step_stats,
    temporal_overlap,
    top1_joint,
)
from sieve.workload.trace import (
    DECODE,
    FORMAT_VERSION,
    PREFILL,
    RoutingTrace,
    TraceMeta,
    contiguous_placement,
    gpu_counts,
    gpu_loads,
    iter_trace_chunks,
    load_trace,
)

QWEN = "qwen15_moe_vllm_moe_logger_gsm8k"


def random_trace(rng, n_steps=7, n_layers=3, E=16, k=4, gates=True) -> RoutingTrace:
    sizes = rng.integers(0, 9, size=n_steps)
    n = int(sizes.sum())
    ids = np.argsort(rng.random((n, n_layers, E)), axis=2)[:, :, :k].astype(np.int16)
    return RoutingTrace(
        expert_ids=ids,
        step_offsets=np.concatenate([[0], np.cumsum(sizes)]),
        request_ids=rng.integers(-1, 5, size=n),
        phase=rng.integers(0, 2, size=n).astype(np.int8),
        gate_weights=rng.random((n, n_layers, k)).astype(np.float32) if gates else None,
        meta=TraceMeta("toy", E, k, (1, 4, 9), source="test", seed=3, extra={"a": [1, 2]}),
    )


def assert_same(a: RoutingTrace, b: RoutingTrace) -> None:
    for name in ("expert_ids", "step_offsets", "request_ids", "phase"):
        np.testing.assert_array_equal(np.asarray(getattr(a, name)), np.asarray(getattr(b, name)))
    if a.gate_weights is None:
        assert b.gate_weights is None
    else:
        np.testing.assert_array_equal(np.asarray(a.gate_weights), np.asarray(b.gate_weights))
    assert a.meta == b.meta


# -- format ------------------------------------------------------------------------------------


def test_npz_round_trip_keeps_arrays_and_metadata(tmp_path, rng):
    t = random_trace(rng)
    t.save(tmp_path / "t.npz")
    assert_same(t, load_trace(tmp_path / "t.npz"))
    u = random_trace(rng, gates=False)
    u.save(tmp_path / "u.npz")
    assert load_trace(tmp_path / "u.npz").gate_weights is None


def test_mmap_and_chunked_reads_equal_the_full_load(tmp_path, rng):
    t = random_trace(rng, n_steps=11)
    t.save(tmp_path / "t.npz")
    m = load_trace(tmp_path / "t.npz", mmap=True)
    assert isinstance(m.expert_ids, np.memmap)
    assert_same(t, m)
    chunks = list(iter_trace_chunks(tmp_path / "t.npz", steps_per_chunk=3))
    assert [c.n_steps for c in chunks] == [3, 3, 3, 2]
    for s0, c in zip(range(0, 11, 3), chunks):
        for s in range(c.n_steps):
            np.testing.assert_array_equal(c.counts(s), t.counts(s0 + s))
    np.testing.assert_array_equal(np.concatenate([c.expert_ids for c in chunks]), t.expert_ids)


def _rewrite_header(src, dst, **changes):
    with np.load(src) as z:
        arrays = {k: z[k] for k in z.files}
    header = json.loads(bytes(arrays["header"]).decode())
    header.update(changes)
    arrays["header"] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(dst, **arrays)


def test_newer_format_version_and_foreign_files_are_refused(tmp_path, rng):
    random_trace(rng).save(tmp_path / "t.npz")
    _rewrite_header(tmp_path / "t.npz", tmp_path / "v.npz", version=FORMAT_VERSION + 1)
    with pytest.raises(TraceFormatError, match=r"v\.npz.*'header\.version'"):
        load_trace(tmp_path / "v.npz")
    _rewrite_header(tmp_path / "t.npz", tmp_path / "f.npz", format="other")
    with pytest.raises(TraceFormatError, match="header.format"):
        load_trace(tmp_path / "f.npz")
    np.savez(tmp_path / "x.npz", a=np.zeros(3))
    with pytest.raises(TraceFormatError, match="'header' missing"):
        load_trace(tmp_path / "x.npz")
    with zipfile.ZipFile(tmp_path / "t.npz") as z, zipfile.ZipFile(tmp_path / "m.npz", "w") as o:
        for name in z.namelist():
            if name != "phase.npy":
                o.writestr(name, z.read(name))
    with pytest.raises(TraceFormatError, match="'phase' missing"):
        load_trace(tmp_path / "m.npz")


def test_trace_validation_rejects_bad_arrays(rng):
    t = random_trace(rng)
    bad = t.expert_ids.copy()
    bad[0, 0, 0] = 16
    with pytest.raises(ConfigError, match=r"\[0, 16\)"):
        RoutingTrace(bad, t.step_offsets, t.request_ids, t.phase, t.meta)
    bad = t.expert_ids.copy()
    bad[0, 0, 1] = bad[0, 0, 0]
    with pytest.raises(ConfigError, match="repeats"):
        RoutingTrace(bad, t.step_offsets, t.request_ids, t.phase, t.meta)
    with pytest.raises(ConfigError, match="step_offsets"):
        RoutingTrace(t.expert_ids, t.step_offsets[:-1], t.request_ids, t.phase, t.meta)


def test_counts_equal_a_per_token_loop_and_gpu_split_conserves_them(rng):
    t = random_trace(rng, n_steps=4)
    for s in range(t.n_steps):
        ref = np.zeros((t.n_layers, t.n_experts), dtype=int)
        for row in range(*t.step_offsets[s : s + 2]):
            for j in range(t.n_layers):
                ref[j, t.expert_ids[row, j]] += 1
        np.testing.assert_array_equal(t.counts(s), ref)
        assert t.counts(s).sum() == t.tokens_per_step()[s] * t.n_layers * t.top_k
        dec = t.counts(s, phase=DECODE) + t.counts(s, phase=PREFILL)
        np.testing.assert_array_equal(dec, ref)
    c = t.counts(1)
    place = contiguous_placement(16, 4)
    loads = gpu_loads(c, place, 4)
    np.testing.assert_array_equal(loads.sum(axis=1), c.sum(axis=1))
    np.testing.assert_array_equal(gpu_counts(c, place, 2), c[:, 8:12])
    with pytest.raises(ConfigError, match="evenly"):
        contiguous_placement(16, 3)


# -- vLLM router log ---------------------------------------------------------------------------


def _route(layer, i, ids, req="r1"):
    return {
        "type": "route",
        "req_id": req,
        "token_idx": i,
        "layer": layer,
        "topk_ids": ids,
        "topk_weights": [0.4, 0.3][: len(ids)],
    }


def _write_log(path, layer, passes, meta=True, req_of=None):
    lines = (
        [{"type": "meta", "model_id": "toy/moe", "layers_logged": [layer], "top_k": 2}]
        if meta
        else []
    )
    for p, rows in enumerate(passes):
        for i, ids in enumerate(rows):
            req = req_of(p, i) if req_of else "r1"
            lines.append(_route(layer, i, ids, req))
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def _toy_passes(shift=0):
    warm = [[1, 2]] * 6  # profiling dummy run: one repeated route
    prefill = [[(i + shift) % 8, (i + shift + 1) % 8] for i in range(5)]
    dec = [[[(s + i + shift) % 8, (s + i + shift + 3) % 8] for i in range(2)] for s in range(3)]
    return [warm, prefill, *dec]


def test_vllm_log_drops_warmup_splits_phases_and_aligns_layers(tmp_path):
    f0 = _write_log(tmp_path / "l0.jsonl", 0, _toy_passes())
    f5 = _write_log(tmp_path / "l5.jsonl", 5, _toy_passes(1))
    t = read_vllm_router_log([f5, f0], n_experts=8)
    assert t.meta.layer_ids == (0, 5) and t.meta.model == "toy/moe" and t.top_k == 2
    assert t.meta.extra["warmup_passes_dropped"] == 1
    assert t.tokens_per_step().tolist() == [5, 2, 2, 2]
    assert t.phase.tolist() == [PREFILL] * 5 + [DECODE] * 6
    assert (t.request_ids == -1).all()  # the log's req_id is constant: unknown identity
    assert t.expert_ids[0].tolist() == [[0, 1], [1, 2]]
    np.testing.assert_allclose(t.gate_weights[0, 0], [0.4, 0.3])


def test_vllm_log_uses_request_ids_when_present(tmp_path):
    passes = [[[0, 1], [2, 3], [4, 5]], [[1, 2], [3, 4], [5, 6]], [[0, 7], [1, 6]]]
    reqs = {
        (0, 0): "a",
        (0, 1): "a",
        (0, 2): "b",
        (1, 0): "a",
        (1, 1): "b",
        (1, 2): "c",
        (2, 0): "a",
        (2, 1): "c",
    }
    f = _write_log(tmp_path / "l.jsonl", 3, passes, req_of=lambda p, i: reqs[p, i])
    t = read_vllm_router_log(f, n_experts=8, warmup_passes=0)
    assert t.request_ids.tolist() == [0, 0, 1, 0, 1, 2, 0, 2]
    # a: prompt of 2 rows, then decode; b: 1-row prompt, then decode; c: 1-row prompt, decode
    assert t.phase.tolist() == [0, 0, 0, 1, 1, 0, 1, 1]
    assert temporal_overlap(t).shape == (1,)


@pytest.mark.parametrize(
    "line, field",
    [
        ("{not json", "invalid JSON"),
        ('{"type": "route", "token_idx": 0, "layer": 0}', "'topk_ids': missing"),
        ('{"type": "route", "token_idx": 0, "layer": 0, "topk_ids": [1]}', "'topk_ids'.*2 entries"),
        (
            '{"type": "route", "token_idx": 0, "layer": 0, "topk_ids": [1, 1]}',
            "'topk_ids'.*repeated",
        ),
        (
            '{"type": "route", "token_idx": 0, "layer": 0, "topk_ids": [1, 9]}',
            "'topk_ids'.*>= n_experts",
        ),
        ('{"type": "route", "token_idx": 5, "layer": 0, "topk_ids": [1, 2]}', "'token_idx'"),
        ('{"type": "route", "token_idx": 0, "layer": "x", "topk_ids": [1, 2]}', "'layer'"),
        (
            '{"type": "route", "token_idx": 0, "layer": 0, "topk_ids": [1, 2], '
            '"topk_weights": [1]}',
            "'topk_weights'",
        ),
        ('{"type": "bogus"}', "'type'"),
    ],
)
def test_vllm_log_errors_name_file_line_and_field(tmp_path, line, field):
    good = json.dumps(_route(0, 0, [3, 4]))
    f = tmp_path / "bad.jsonl"
    f.write_text(json.dumps({"type": "meta", "top_k": 2}) + "\n" + good + "\n" + line + "\n")
    with pytest.raises(TraceFormatError, match=rf"bad\.jsonl:3:.*{field}"):
        read_vllm_router_log(f, n_experts=8, warmup_passes=0)


def test_vllm_logs_with_different_pass_structure_are_refused(tmp_path):
    f0 = _write_log(tmp_path / "a.jsonl", 0, _toy_passes())
    f1 = _write_log(tmp_path / "b.jsonl", 1, _toy_passes()[:-1])
    with pytest.raises(TraceFormatError, match=r"b\.jsonl.*pass structure"):
        read_vllm_router_log([f0, f1])


def test_real_qwen15_log_structure_matches_provenance():
    files = sorted(shared_trace(QWEN).glob("moe_layer*.jsonl"))
    t = read_vllm_router_log(files, n_experts=60, warmup_passes=3)
    # PROVENANCE.md: 131 passes; 3 warm-up; one 1406-row prefill; 127 decode passes, 2886 rows
    assert t.meta.layer_ids == (0, 8, 12, 18, 23) and t.top_k == 4
    assert t.n_steps == 128 and int((t.phase == PREFILL).sum()) == 1406
    assert int((t.phase == DECODE).sum()) == 2886 and t.tokens_per_step()[1:].max() == 25
    auto = read_vllm_router_log(files[:1], n_experts=60)  # "auto" drops the 2 constant passes
    assert auto.meta.extra["warmup_passes_dropped"] == 2
    st = step_stats(t)
    full = st["n_tokens"] == 25
    ratio = st["coverage"][full].mean() / iid_coverage(60, 4, 25)
    assert 0.85 < ratio < 0.97  # models-and-traces.md §C.2: ~0.93 of iid (0.91-0.92 here)
    ov = temporal_overlap(t, by="slot", max_steps=82)
    assert ov.min() > 0.3 and ov.max() < 0.6  # §C.3: 0.33-0.53 of 4 experts


# -- count files -------------------------------------------------------------------------------


def test_count_matrix_formats(tmp_path):
    c = np.array([[3, 0, 5, 2], [1, 1, 4, 4]])
    (tmp_path / "c.csv").write_text("layer,e0,e1,e2,e3\n3,3,0,5,2\n7,1,1,4,4\n")
    t = read_count_matrix(tmp_path / "c.csv", top_k=2)
    np.testing.assert_array_equal(t.counts, c)
    assert t.meta.layer_ids == (3, 7) and t.n_tokens == 5
    (tmp_path / "c.json").write_text(json.dumps({"counts": c.tolist(), "layers": [1, 2]}))
    assert read_count_matrix(tmp_path / "c.json", top_k=2).meta.layer_ids == (1, 2)
    np.savez(tmp_path / "c.npz", counts=c)
    np.testing.assert_array_equal(read_count_matrix(tmp_path / "c.npz", top_k=2).counts, c)
    np.testing.assert_allclose(t.shares().sum(axis=1), 1.0)


def test_count_matrix_errors(tmp_path):
    (tmp_path / "c.csv").write_text("layer,e0,e1\n0,3,1\n1,x,2\n")
    with pytest.raises(TraceFormatError, match=r"c\.csv:3: field 'e0'"):
        read_count_matrix(tmp_path / "c.csv", top_k=1)
    (tmp_path / "d.csv").write_text("1,2\n3,-1\n")
    with pytest.raises(TraceFormatError, match=r"d\.csv:2: field 'column 2'"):
        read_count_matrix(tmp_path / "d.csv", top_k=1)
    (tmp_path / "c.json").write_text(json.dumps({"counts": [[1, 2], [3]]}))
    with pytest.raises(TraceFormatError, match=r"counts\[1\]"):
        read_count_matrix(tmp_path / "c.json", top_k=1)
    (tmp_path / "c.txt").write_text("")
    with pytest.raises(TraceFormatError, match="extension"):
        read_count_matrix(tmp_path / "c.txt", top_k=1)


def test_sglang_expert_distribution_file(tmp_path):
    # SGLang's --init-expert-location / EPLB statistics format: {"logical_count": [layer][expert]}
    # over every decoder layer, counts written as floats, dense layers all zero (here 0 and 1,
    # as DeepSeek-V3's first dense layers). Numbers made up for the test.
    moe = [[6.0, 2.0, 0.0, 4.0], [3.0, 3.0, 3.0, 3.0], [12.0, 0.0, 0.0, 0.0]]
    p = tmp_path / "decode_in10out10.json"
    p.write_text(json.dumps({"logical_count": [[0.0] * 4, [0.0] * 4, *moe]}))
    t = read_count_matrix(p, top_k=2, model="toy-v3")
    np.testing.assert_array_equal(t.counts, np.array(moe, dtype=np.int64))
    assert t.counts.dtype == np.int64
    assert t.meta.layer_ids == (2, 3, 4) and t.n_tokens == 6 and t.meta.n_experts == 4
    assert t.meta.extra["dropped_zero_layers"] == [0, 1]
    assert "all-zero layers 0-1 dropped" in t.meta.source
    # SGLang's buffered dump: one matrix per recorded step, summed
    p3 = tmp_path / "steps.json"
    p3.write_text(json.dumps({"logical_count": [[[0, 0], [1, 3]], [[0, 0], [2, 0]]],
                              "rank": 0}))
    t3 = read_count_matrix(p3, top_k=1)
    assert t3.counts.tolist() == [[3, 3]] and t3.meta.layer_ids == (1,)
    # no dense layer: nothing dropped
    p4 = tmp_path / "plain.json"
    p4.write_text(json.dumps({"logical_count": moe}))
    t4 = read_count_matrix(p4, top_k=2)
    assert t4.meta.layer_ids == (0, 1, 2) and t4.meta.extra["dropped_zero_layers"] == []


@pytest.mark.parametrize("value, msg", [
    ([[0.0, 0.0], [0.0, 0.0]], "every layer is all zero"),
    ([[1.5, 2.0]], r"logical_count\[0\]\[0\]': expected a whole count >= 0, got 1.5"),
    ([[1.0, -2.0]], r"logical_count\[0\]\[1\]'"),
    ([[1.0, 2.0], [3.0]], "expected nested lists of counts of one shape"),
    ([1.0, 2.0], "got shape \\(2,\\)"),
    ("x", "logical_count"),
    ([[float("nan"), 1.0]], "NaN is not a number sieve accepts"),  # refused by the parser
])
def test_sglang_file_errors(tmp_path, value, msg):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"logical_count": value}))
    with pytest.raises(TraceFormatError, match=msg):
        read_count_matrix(p, top_k=2)


def test_count_files_are_never_unpickled(tmp_path):
    p = tmp_path / "expert_distribution_recorder.pt"
    p.write_bytes(b"\x80\x04pickle")
    with pytest.raises(TraceFormatError, match="pickles, which sieve never loads"):
        read_count_matrix(p, top_k=8)
    q = tmp_path / "obj.npz"
    np.savez(q, counts=np.array([[1, 2]], dtype=object))
    with pytest.raises(TraceFormatError, match="holds Python objects"):
        read_count_matrix(q, top_k=1)
    r = tmp_path / "one.npz"
    np.save(tmp_path / "one.npy", np.ones(2))
    (tmp_path / "one.npy").rename(r)
    with pytest.raises(TraceFormatError, match="a single .npy array"):
        read_count_matrix(r, top_k=1)
    (tmp_path / "latin.json").write_bytes('{"counts": [[1]], "x": "caf\xe9"}'.encode("latin-1"))
    with pytest.raises(TraceFormatError, match="not UTF-8 text"):
        read_count_matrix(tmp_path / "latin.json", top_k=1)


def _allenai(counts, k=2, n=None, E=4):
    return {
        "model": "toy",
        "num_experts": E,
        "domain": "c4",
        "layers": [0, 7],
        "top_k_used": k,
        "counts": counts,
        "num_tokens": n if n is not None else sum(counts[0]) // k,
    }


def test_allenai_and_fiddler_json_fixtures(tmp_path):
    (tmp_path / "a.json").write_text(json.dumps(_allenai([[2, 2, 4, 0], [1, 3, 3, 1]])))
    t = read_allenai_counts(tmp_path / "a.json")
    assert t.n_tokens == 4 and t.meta.layer_ids == (0, 7) and t.meta.top_k == 2
    (tmp_path / "b.json").write_text(json.dumps(_allenai([[2, 2, 4, 0], [1, 3, 3, 2]], n=4)))
    with pytest.raises(TraceFormatError, match=r"b\.json: field 'counts\[1\]'.*num_tokens"):
        read_allenai_counts(tmp_path / "b.json")
    (tmp_path / "f.json").write_text(
        json.dumps({"total_input_tokens": 3, "expert_popularity": [[1, 3], [2, 2]]})
    )
    assert read_fiddler_popularity(tmp_path / "f.json").n_tokens == 2
    (tmp_path / "g.json").write_text(json.dumps({"expert_popularity": [[1, 3], [2, 1]]}))
    with pytest.raises(TraceFormatError, match="'expert_popularity'"):
        read_fiddler_popularity(tmp_path / "g.json")
    x = {
        "num_experts": 2,
        "top_k_used": 1,
        "layer_pairs": [[0, 7]],
        "pair_counts": [[[5, 0], [0, 5]]],
    }
    (tmp_path / "x.json").write_text(json.dumps(x))
    tr = read_allenai_crosslayer(tmp_path / "x.json")
    assert tr.pairs == ((0, 7),) and nmi_from_joint(tr.matrices[0]) == pytest.approx(1.0)
    (tmp_path / "y.json").write_text(json.dumps({**x, "top_k_used": 2}))
    with pytest.raises(TraceFormatError, match="'top_k_used'"):
        read_allenai_crosslayer(tmp_path / "y.json")


def test_real_allenai_and_fiddler_files():
    root = shared_trace("allenai_olmoe_routing_analysis")
    t = read_allenai_counts(root / "olmoe/expert_counts/c4.json")
    assert t.counts.shape == (3, 64) and t.n_tokens == 208896 and t.meta.top_k == 8
    sk = load_skew(t.counts)
    assert ((sk["max_over_mean"] > 2.4) & (sk["max_over_mean"] < 3.1)).all()  # §C.1: C4 2.5-3.0
    m = read_allenai_crosslayer(root / "mistral/expert_counts_crosslayer_top1/c4.json")
    nmi = [nmi_from_joint(x) for x in m.matrices]
    assert 0.02 <= min(nmi) and max(nmi) <= 0.09  # §C.3: Mixtral 0.02-0.09
    f = read_fiddler_popularity(
        shared_trace(
            "fiddler_mixtral_8x7b_expert_popularity",
            "mixtral_8x7b_original",
            "expert_popularity_machine_learning.json",
        )
    )
    assert f.counts.shape == (32, 8) and (f.counts.sum(axis=1) == 2 * f.n_tokens).all()


# -- statistics --------------------------------------------------------------------------------


def test_statistics_on_known_inputs():
    assert bin_counts(np.array([0, 1, 2, 3, 4, 5, 9, 1])).tolist() == [2, 1, 2, 2]
    sk = load_skew(np.array([[1, 1, 1, 1], [4, 0, 0, 0]]))
    np.testing.assert_allclose(sk["max_over_mean"], [1, 4])
    np.testing.assert_allclose(sk["norm_entropy"], [1, 0])
    assert iid_coverage(8, 2, 1) == pytest.approx(0.25)
    assert nmi_from_joint(np.outer([1, 2, 3], [4, 5, 6])) == pytest.approx(0.0, abs=1e-12)
    t = RoutingTrace(
        np.array([[[0, 1], [2, 3]], [[0, 2], [2, 1]]], dtype=np.int16),
        np.array([0, 1, 2]),
        np.array([0, 0]),
        np.array([1, 1], dtype=np.int8),
        TraceMeta("toy", 4, 2, (0, 1)),
    )
    np.testing.assert_allclose(temporal_overlap(t), [1.0, 1.0])
    assert top1_joint(t, 0, 1)[0, 2] == 2
