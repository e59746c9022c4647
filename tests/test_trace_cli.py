"""Traces from the command line (issue 16, part 2): sieve trace import / info, a trace-driven
run takes its batch from the trace, a file given to the wrong reader is named for what it is."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from sieve.cli import main
from sieve.errors import TraceFormatError
from sieve.workload.sniff import sniff
from sieve.workload.trace import (
    DECODE,
    RoutingTrace,
    TraceMeta,
    load_counts,
    load_trace,
    mean_requests,
)

SHARED = Path(__file__).resolve().parents[2] / "shared" / "traces"
VLLM = SHARED / "qwen15_moe_vllm_moe_logger_gsm8k"
ALLENAI = SHARED / "allenai_olmoe_routing_analysis" / "olmoe" / "expert_counts" / "c4.json"


def _qwen3_trace(path: Path, steps=2, batch=6) -> Path:
    rng = np.random.default_rng(0)
    L, E, K = 48, 128, 8
    ids = np.stack([rng.choice(E, K, replace=False) for _ in range(steps * batch * L)])
    meta = TraceMeta(model="qwen3-30b-a3b", n_experts=E, top_k=K, layer_ids=range(L),
                     source="test")
    RoutingTrace(meta=meta, expert_ids=ids.reshape(steps * batch, L, K).astype(np.int16),
                 step_offsets=np.arange(0, steps * batch + 1, batch),
                 request_ids=np.tile(np.arange(batch), steps),
                 phase=np.full(steps * batch, DECODE, dtype=np.int8)).save(path)
    return path


def test_import_counts_and_info(tmp_path, capsys):
    csv = tmp_path / "c.csv"
    csv.write_text("layer,e0,e1,e2,e3\n0,10,2,4,0\n1,4,4,4,4\n")
    out = tmp_path / "c.npz"
    assert main(["trace", "import", "counts", str(csv), "--top-k", "2", "--out",
                 str(out)]) == 0
    ct = load_counts(out)
    assert ct.counts.tolist() == [[10, 2, 4, 0], [4, 4, 4, 4]] and ct.meta.top_k == 2
    assert sniff(out) == "sieve-counts"
    capsys.readouterr()
    assert main(["trace", "info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "count trace" in text and "experts: 4, top-2" in text and "layers: 2" in text
    # the top-k a count file cannot tell is required
    assert main(["trace", "import", "counts", str(csv), "--out", str(tmp_path / "x.npz")]) == 2
    assert "--top-k is required" in capsys.readouterr().err
    assert not (tmp_path / "x.npz").exists()
    # never over an input
    assert main(["trace", "import", "counts", str(out), "--top-k", "2", "--out",
                 str(out)]) == 2


@pytest.mark.skipif(not VLLM.is_dir(), reason="shared/traces not present")
def test_import_a_vllm_log_and_describe_it(tmp_path, capsys):
    out = tmp_path / "q15.npz"
    files = [str(VLLM / "moe_layer0.jsonl"), str(VLLM / "moe_layer8.jsonl")]
    assert main(["trace", "import", "vllm", *files, "--n-experts", "60", "--warmup-passes",
                 "3", "--out", str(out)]) == 0
    tr = load_trace(out)
    assert tr.n_experts == 60 and tr.top_k == 4 and tr.meta.layer_ids == (0, 8)
    capsys.readouterr()
    assert main(["trace", "info", str(out)]) == 0
    text = capsys.readouterr().out
    assert "routing trace (token level)" in text and f"steps: {tr.n_steps}" in text
    # the raw log: named, with the command that imports it
    assert main(["trace", "info", files[0]]) == 0
    assert "vLLM router log" in capsys.readouterr().out


@pytest.mark.skipif(not ALLENAI.is_file(), reason="shared/traces not present")
def test_wrong_reader_names_the_file(tmp_path, capsys):
    with pytest.raises(TraceFormatError, match="OLMoE routing-analysis count file.*import it"):
        load_trace(ALLENAI)
    out = tmp_path / "c4.npz"
    assert main(["trace", "import", "allenai", str(ALLENAI), "--out", str(out)]) == 0
    with pytest.raises(TraceFormatError, match="count trace.*cannot route steps"):
        load_trace(out)
    capsys.readouterr()
    assert main(["run", "--trace", str(out), "--out", str(tmp_path / "r")]) == 2
    assert "cannot route steps" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_sniff_json_kinds(tmp_path):
    f = tmp_path / "a.json"
    f.write_text(json.dumps({"logical_count": [[1, 2]]}))
    assert sniff(f) == "sglang-json"
    f.write_text(json.dumps({"counts": [[1, 2]], "layers": [0]}))
    assert sniff(f) == "count-json"
    f.write_text(json.dumps({"expert_popularity": [[1, 2]]}))
    assert sniff(f) == "fiddler-json"
    f.write_text('{"type": "route", "layer": 0}\n')
    assert sniff(f) == "vllm-log"
    f.write_bytes(b"\x00\x01\x02")
    assert sniff(f) == "unknown"
    assert sniff(tmp_path / "missing") == "unknown"


def test_a_trace_run_takes_its_batch_from_the_trace(tmp_path, capsys):
    tr = _qwen3_trace(tmp_path / "t.npz")
    assert mean_requests(load_trace(tr)) == 6
    out = tmp_path / "r"
    assert main(["run", "--model", "qwen3-30b-a3b", "--trace", str(tr), "--methods",
                 "noexp", "--layers", "1", "--warmup", "0", "--jobs", "1", "--out",
                 str(out)]) == 0
    rows = (out / "runs.csv").read_text().splitlines()
    assert len(rows) == 2  # one point: the trace's batch, not 4, 16 and 64
    capsys.readouterr()
    assert main(["run", "--model", "qwen3-30b-a3b", "--trace", str(tr), "--batch", "4,16",
                 "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "conflicts with --trace" in err[0] and "6 requests" in err[0]
    assert main(["run", "--model", "gpt-oss-120b", "--trace", str(tr), "--out",
                 str(tmp_path / "y")]) == 2
    assert "routes 128 experts top-8" in capsys.readouterr().err
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()
