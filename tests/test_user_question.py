"""docs/user-guide.md, "Your own question": the walk-through's commands run as written (paths
resolved against the project root and shared/; skipped when shared/traces is absent), and the
run's output says what the page says it says."""

from __future__ import annotations

import csv
import glob
import re
import shlex
from pathlib import Path

import pytest

from sieve.cli import main

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
LOG = SHARED / "traces" / "qwen15_moe_vllm_moe_logger_gsm8k"


def _commands() -> list[list[str]]:
    text = (ROOT / "docs" / "user-guide.md").read_text(encoding="utf-8")
    sec = text.split("## Your own question", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", sec, re.S).group(1)
    cmds = []
    for line in block.replace("\\\n", " ").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            cmds.append(shlex.split(line))
    return cmds


def _resolve(arg: str) -> list[str]:
    for prefix, base in (("../shared/", SHARED), ("tests/", ROOT / "tests"),
                         ("examples/", ROOT / "examples")):
        if arg.startswith(prefix):
            path = str(base / arg[len(prefix):])
            return sorted(glob.glob(path)) if "*" in path else [path]
    return [arg]


@pytest.mark.skipif(not LOG.is_dir(), reason="shared/traces (the real vLLM log) not present")
def test_the_walk_through_runs_as_written(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    cmds = _commands()
    assert [c[:2] for c in cmds] == [["sieve", "model"], ["sieve", "trace"],
                                     ["sieve", "trace"], ["sieve", "run"]]
    outs = []
    for c in cmds:
        argv = [x for a in c[1:] for x in _resolve(a)]
        assert main(argv + (["--jobs", "1"] if c[1] == "run" else [])) == 0, c
        outs.append(capsys.readouterr().out)
    model, _, info, run = outs
    assert "family qwen2_moe" in model and "14.316B total, 2.689B active" in model
    assert "1 shared of width 5632 (gated)" in model
    assert "steps: 128" in info and "decode 2886, prefill 1406" in info
    assert "# qwen2_moe: routed by its trace file" in run
    assert "# 2xb200: PIM preset duplex-logic-pim, execution mode sequential" in run
    assert re.search(r"qwen2_moe 2xb200 \(duplex-logic-pim\), hh-rlhf \(routing: qwen15.npz\), "
                     r"B=25.0: best \S+ \d+ tok/s/GPU", run)
    rows = list(csv.DictReader((tmp_path / "my-answer" / "runs.csv").open()))
    assert len(rows) == 7 and {float(r["batch"]) for r in rows} == {25.0}
    assert {r["router"] for r in rows} == {"trace"} and all(r["x_gpu_only"] for r in rows)
