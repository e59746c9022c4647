"""Experiments at scale (issue 11): sweep configs and run ids, the resumable store, the local
and Dask executors, the cache file, stage timers and the profiling harness.

The runs are tiny (Qwen3-30B-A3B on one B200, one sampled layer, one step): what is tested is
the machinery around them, and that results do not depend on it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from sieve.cli import main
from sieve.errors import ConfigError, OutputError
from sieve.experiments.config import (
    RUN_ID_FORMAT,
    ExperimentConfig,
    code_digest,
    load_experiment,
    main_experiment,
    paper_experiment,
    run_id,
)
from sieve.experiments.executor import execute
from sieve.experiments.points import Point, paper_points, sweep_points
from sieve.experiments.store import RunStore
from sieve.system.run import RunConfig, simulate_run

REPO = Path(__file__).resolve().parents[1]
BASE = {"model": "qwen3-30b-a3b", "system": "1xb200", "steps": 1, "warmup": 0, "layers": 1}
SWEEP = {
    "name": "tiny",
    "base": BASE,
    "grid": {"method": ["noexp", "sieve"], "batch": [2, 4]},
    "runs": [{"workload": "hh-rlhf"}, {"workload": "math-500", "grid": {"seed": [0, 1]}}],
    "record": {"timeline": [{"method": "sieve", "batch": 4, "workload": "hh-rlhf"}],
               "channels": [{"method": "sieve", "batch": 2, "seed": 1}]},
}


def _toml(d: dict) -> str:
    """A minimal TOML writer for the sweep dicts of these tests."""

    def val(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(val(x) for x in v) + "]"
        return repr(v)

    lines = [f"name = {val(d['name'])}"] if "name" in d else []
    for table in ("base", "grid"):
        if d.get(table):
            lines.append(f"[{table}]")
            lines += [f"{k} = {val(v)}" for k, v in d[table].items()]
    for r in d.get("runs", []):
        lines.append("[[runs]]")
        lines += [f"{k} = {val(v)}" for k, v in r.items() if k != "grid"]
        if "grid" in r:
            lines.append("[runs.grid]")
            lines += [f"{k} = {val(v)}" for k, v in r["grid"].items()]
    for key, rules in d.get("record", {}).items():
        for m in rules:
            lines.append(f"[[record.{key}]]")
            lines += [f"{k} = {val(v)}" for k, v in m.items()]
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Config round trip and stable ids
# --------------------------------------------------------------------------------------------


def test_experiment_round_trips_through_json_and_toml(tmp_path):
    exp = ExperimentConfig.from_dict(SWEEP)
    again = ExperimentConfig.from_dict(json.loads(json.dumps(exp.to_dict())))
    assert again == exp and hash(again) == hash(exp)
    (tmp_path / "s.toml").write_text(_toml(SWEEP))
    (tmp_path / "s.json").write_text(json.dumps(SWEEP))
    assert load_experiment(tmp_path / "s.toml") == exp == load_experiment(tmp_path / "s.json")
    assert exp.experiment_id() == again.experiment_id()


def test_points_follow_the_declared_order_and_precedence():
    pts = ExperimentConfig.from_dict(SWEEP).points()
    # runs[0]: method x batch; runs[1]: method x batch x seed (last axis fastest)
    assert len(pts) == 4 + 8
    assert [(p.config.method, p.config.batch) for p in pts[:4]] == [
        ("noexp", 2), ("noexp", 4), ("sieve", 2), ("sieve", 4)]
    assert [(p.config.method, p.config.batch, p.config.seed) for p in pts[4:7]] == [
        ("noexp", 2, 0), ("noexp", 2, 1), ("noexp", 4, 0)]
    assert {p.config.workload for p in pts[:4]} == {"hh-rlhf"}
    assert {p.config.workload for p in pts[4:]} == {"math-500"}
    assert [i for i, p in enumerate(pts) if p.timeline] == [3]
    assert [(p.config.batch, p.config.seed) for p in pts if p.channels] == [(2, 1)]
    # a grid axis overrides the base; a run's field overrides the base
    e = ExperimentConfig.from_dict({"base": {**BASE, "batch": 9, "seed": 5},
                                    "grid": {"batch": [1]}, "runs": [{"seed": 6}]})
    assert [(p.config.batch, p.config.seed) for p in e.points()] == [(1, 6)]


def test_run_ids_are_stable_and_change_with_every_input(tmp_path):
    cfg = RunConfig(method="sieve", batch=4, **BASE)
    rid = run_id(cfg)
    # pinned: the recipe (RUN_ID_FORMAT) is part of the contract; change it only with the
    # format version, which changes every id
    assert RUN_ID_FORMAT == "sieve-run-id/1"
    assert rid == "5a13d74325a5b62c70ad23ae"  # RunConfig gained "router" (issue 16)
    # the documented recipe, recomputed here
    import hashlib

    doc = {"format": RUN_ID_FORMAT, "run": cfg.to_dict(), "timeline": False, "channels": False,
           "files": {}}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"))
    assert rid == hashlib.sha256(text.encode()).hexdigest()[:24]
    # the same in another process, and for the same point of any sweep
    out = subprocess.run([sys.executable, "-c", "from sieve.system.run import RunConfig; "
                          "from sieve.experiments.config import run_id; print(run_id(RunConfig("
                          "method='sieve', batch=4, model='qwen3-30b-a3b', system='1xb200', "
                          "steps=1, warmup=0, layers=1)))"], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert out.stdout.strip() == rid
    pts = ExperimentConfig.from_dict(SWEEP).points()
    assert run_id(pts[3].config) == run_id(RunConfig(**{**BASE, "method": "sieve",
                                                       "batch": 4}))
    # every field and the record flags change it
    changed = [RunConfig(**{**BASE, "method": "sieve", "batch": 4, k: v}) for k, v in (
        ("batch", 5), ("seed", 1), ("method", "noexp"), ("workload", "math-500"),
        ("layers", 2), ("steps", 2), ("system_overrides", {"memory.nCCDAB": 6}),
        ("overlap", "tbo"), ("router", "mixtral-8x7b"))]
    ids = {run_id(c) for c in changed} | {rid, run_id(Point(cfg, timeline=True))}
    assert len(ids) == len(changed) + 2
    # a file's content (not only its name) is part of the id
    prof = tmp_path / "p.json"
    prof.write_text(json.dumps({"name": "mine", "prompt": {"kind": "fixed", "tokens": 100},
                                "output": {"kind": "fixed", "tokens": 50}}))
    a = run_id(RunConfig(**{**BASE, "workload": str(prof)}))
    prof.write_text(json.dumps({"name": "mine", "prompt": {"kind": "fixed", "tokens": 101},
                                "output": {"kind": "fixed", "tokens": 50}}))
    from sieve.experiments import config as c

    c._resolved_files.cache_clear()
    assert run_id(RunConfig(**{**BASE, "workload": str(prof)})) != a


def test_the_run_and_paper_experiments_are_the_point_lists():
    from sieve.sched.methods import METHODS_MAIN

    kw = {"steps": 1, "warmup": 1, "layers": 4, "workload": "hh-rlhf", "seed": 0,
          "microbatches": 1, "trace": None}
    assert paper_experiment(list(METHODS_MAIN), **kw).points() == paper_points(
        list(METHODS_MAIN), **kw)
    assert main_experiment("gpt-oss-120b", "4xb200", list(METHODS_MAIN), [4, 16, 64],
                           **kw).points() == sweep_points(
        "gpt-oss-120b", "4xb200", list(METHODS_MAIN), [4, 16, 64], timeline_method="sieve",
        channel_batch=64, **kw)


def test_bad_declarations_name_the_field():
    for d, msg in (
            ({"base": BASE, "grid": {"batch": [1, True]}}, "grid.batch[1]"),
            ({"base": BASE, "runs": [{"model": 3}]}, "runs[0].model: model must be a non-empty"),
            ({"base": BASE, "grid": {"method": ["sieve"]}, "runs": [{}, {}]},
             "the same run as point 0"),
            ({"base": {**BASE, "parallel": "dp"}}, "base.parallel: step: parallel 'dp'"),
            ({"base": BASE, "record": {"timeline": 3}}, "record.timeline must be"),
    ):
        with pytest.raises(ConfigError, match=r"sweep: .*" + msg.replace("[", r"\[").replace(
                "]", r"\]")):
            ExperimentConfig.from_dict(d)


# --------------------------------------------------------------------------------------------
# Executor: the same rows whatever runs them; the store and the memo change nothing
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep_file(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("sweep")
    p = d / "tiny.toml"
    p.write_text(_toml(SWEEP))
    return p


@pytest.fixture(scope="module")
def reference(sweep_file, tmp_path_factory) -> Path:
    """The sweep run in this process (--jobs 1), uninterrupted."""
    out = tmp_path_factory.mktemp("ref") / "out"
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "1"]) == 0
    return out


def _same_results(a: Path, b: Path) -> None:
    for name in ("runs.csv", "config.json", "timeline.csv", "pim_channels.csv"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_local_processes_give_the_in_process_results(sweep_file, reference, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "2"]) == 0
    _same_results(out, reference)
    err = capsys.readouterr().err
    assert "12 to simulate" in err and "[12/12] finished" in err
    # a second start reuses every run and writes the same tables
    before = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    assert main(["sweep", str(sweep_file), "--out", str(out), "--jobs", "2"]) == 0
    assert "12 already finished (reused), 0 to simulate" in capsys.readouterr().err
    _same_results(out, reference)
    after = {p.name: p.stat().st_mtime_ns for p in (out / "runs").glob("*.json")}
    assert before == after  # run files untouched (carried into the new folder by links)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["stores"] == ["runs"] and "runs.csv" in manifest["files"]


def test_step_input_memo_and_store_do_not_change_rows():
    from sieve.experiments.cache import StepInputs

    memo = StepInputs()
    for m in ("noexp", "sieve"):
        cfg = RunConfig(method=m, batch=3, **BASE)
        assert simulate_run(cfg, inputs=memo).row == simulate_run(cfg).row
    assert memo.hits == 1 and memo.misses == 1


def test_a_damaged_or_foreign_run_file_is_simulated_again(tmp_path):
    pts = [Point(RunConfig(method="noexp", batch=b, **BASE)) for b in (1, 2)]
    store = RunStore(tmp_path / "o")
    first = execute(pts, jobs=1, store=store, progress=False)
    rows = [r.result.row for r in first.records]
    f0, f1 = store.file(first.records[0].id), store.file(first.records[1].id)
    f0.write_text("{not json")
    doc = json.loads(f1.read_text())
    doc["sieve"]["code"] = "0" * 64  # written by other code
    f1.write_text(json.dumps(doc))
    again = execute(pts, jobs=1, store=store, progress=False)
    assert again.reused == 0 and again.simulated == 2
    assert [r.result.row for r in again.records] == rows
    assert execute(pts, jobs=1, store=store, progress=False).reused == 2
    # a file sieve did not write makes the folder refuse to be used (never deleted)
    (store.path / "notes.txt").write_text("mine")
    with pytest.raises(OutputError, match="runs/notes.txt"):
        RunStore(tmp_path / "o")


def test_sigterm_then_resume_gives_the_uninterrupted_csv(sweep_file, reference, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "sieve", "sweep", str(sweep_file), "--out", str(out),
           "--jobs", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list((out / "runs").glob("*.json"))) >= 3:  # store.json, cache? and a run
            break
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "interrupted (SIGTERM)" in err and "Traceback" not in err
    assert not (out / "runs.csv").exists() and not (out / "manifest.json").exists()
    done = [p for p in (out / "runs").glob("*.json") if p.name not in ("store.json",
                                                                        "cache.json")]
    assert 1 <= len(done) < 12
    for p in done:
        json.loads(p.read_text())  # whole files only
    assert not [p for p in (out / "runs").iterdir() if p.name.endswith(".tmp")]
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"{len(done)} already finished (reused), {12 - len(done)} to simulate" in r.stderr
    _same_results(out, reference)


def test_dask_local_cluster_gives_the_local_results(sweep_file, reference, tmp_path):
    pytest.importorskip("distributed")
    from distributed import LocalCluster

    env_path = os.environ.get("PYTHONPATH", "")
    os.environ["PYTHONPATH"] = str(REPO) + (os.pathsep + env_path if env_path else "")
    try:
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                          dashboard_address=None, silence_logs=40) as cluster:
            out = tmp_path / "out"
            assert main(["sweep", str(sweep_file), "--out", str(out), "--scheduler",
                         cluster.scheduler_address]) == 0
    finally:
        os.environ["PYTHONPATH"] = env_path
    _same_results(out, reference)
    workers = {json.loads(p.read_text())["worker"] for p in (out / "runs").glob("*.json")
               if p.name not in ("store.json", "cache.json")}
    assert len(workers) >= 1 and all(":" in w for w in workers)


def test_dask_missing_or_unreachable_is_one_clear_error(monkeypatch):
    from sieve.experiments import executor

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(ConfigError, match=r"needs dask.distributed.*\.\[dask\]"):
        executor._run_dask("tcp://127.0.0.1:1", [0], {}, None, None, None, [])


# --------------------------------------------------------------------------------------------
# The cache file
# --------------------------------------------------------------------------------------------


def test_cache_file_round_trip_and_refusals(tmp_path):
    from sieve.experiments.cache import export_entries, read_cache, write_cache
    from sieve.pim.layout import gemv_layout

    gemv_layout("b200-hbm3e-pim", 256, 512, n_pcs=16)  # one "auto" choice in the memo
    entries = export_entries()
    assert entries
    p = tmp_path / "cache.json"
    write_cache(p, entries)
    got, note = read_cache(p)
    assert note == "" and sorted(map(tuple, got)) == sorted(map(tuple, entries))
    doc = json.loads(p.read_text())
    assert doc["format"] == "sieve-cache" and doc["sieve"]["code"] == code_digest()
    doc["sieve"]["code"] = "f" * 64
    p.write_text(json.dumps(doc))
    got, note = read_cache(p)
    assert got == [] and "other sieve code" in note
    doc["sieve"]["code"] = code_digest()
    doc["gemv_col_groups"][0][-1] = 0  # a damaged choice
    p.write_text(json.dumps(doc))
    assert read_cache(p)[1].endswith("(not used, replaced at the end)")
    (tmp_path / "mine.json").write_text('{"a": 1}')
    with pytest.raises(ConfigError, match="not a sieve cache file"):
        read_cache(tmp_path / "mine.json")
    assert read_cache(tmp_path / "absent.json") == ([], "")


def test_a_sweep_saves_the_cache_and_the_next_loads_it(sweep_file, tmp_path, capsys):
    cache = tmp_path / "c.json"
    one = {**SWEEP, "runs": [], "grid": {"method": ["sieve"], "batch": [2]}, "record": {}}
    f = tmp_path / "one.json"
    f.write_text(json.dumps(one))
    assert main(["sweep", str(f), "--out", str(tmp_path / "a"), "--jobs", "1", "--cache",
                 str(cache)]) == 0
    assert json.loads(cache.read_text())["gemv_col_groups"]
    assert main(["sweep", str(f), "--out", str(tmp_path / "b"), "--jobs", "1", "--cache",
                 str(cache)]) == 0
    assert "note" not in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Stage timers and the profiling harness
# --------------------------------------------------------------------------------------------


def test_stage_timers_are_exclusive_and_off_by_default():
    from sieve import stages

    with stages.stage("pim"):
        pass
    assert not stages.enabled()
    with stages.collect(events=True) as t:
        with stages.stage("dag"):
            time.sleep(0.02)
            with stages.stage("pim"):
                time.sleep(0.03)
        stages.count("pim_commands", 5)
    assert t.seconds["pim"] >= 0.03 and 0.02 <= t.seconds["dag"] < 0.03 + 0.02
    assert t.calls == {"dag": 1, "pim": 1} and t.counts == {"pim_commands": 5}
    assert [e[0] for e in t.events] == ["pim", "dag"] and t.events[0][3] == 1
    assert sum(t.seconds.values()) == pytest.approx(t.wall_s)


def test_sieve_profile_reports_stages_and_writes_viewer_files(tmp_path, capsys):
    import marshal
    import pstats

    run = tmp_path / "run.json"
    run.write_text(json.dumps({**BASE, "method": "sieve", "batch": 4}))
    out = tmp_path / "prof"
    assert main(["profile", str(run), "--out", str(out), "--top", "5"]) == 0
    text = capsys.readouterr().out
    for s in ("trace", "dag", "scheduling", "pim", "list_scheduling", "io"):
        assert f"\n{s} " in text, s
    assert "M commands simulated" in text and "cProfile top functions" in text
    st = pstats.Stats(str(out / "profile.pstats"))
    assert any(f[2] == "simulate_run" for f in st.stats)
    assert marshal.loads((out / "profile.pstats").read_bytes())
    sp = json.loads((out / "profile.speedscope.json").read_text())
    ev = sp["profiles"][0]["events"]
    depth, last = 0, 0.0
    for e in ev:
        depth += 1 if e["type"] == "O" else -1
        assert depth >= 0 and e["at"] >= last
        last = e["at"]
    assert depth == 0 and {f["name"] for f in sp["shared"]["frames"]} >= {"pim", "dag"}
    rows = (out / "stages.csv").read_text().splitlines()
    assert rows[0] == "stage,seconds,share,calls,what" and len(rows) > 5
    assert (out / "runs.csv").is_file()


def test_the_user_guide_sweep_example_loads(tmp_path):
    import re

    text = (REPO / "docs" / "user-guide.md").read_text(encoding="utf-8")
    blocks = [b for b in re.findall(r"^```toml\n(.*?)^```", text, re.M | re.S) if "[grid]" in b]
    assert blocks
    for i, b in enumerate(blocks):
        p = tmp_path / f"s{i}.toml"
        p.write_text(b)
        pts = load_experiment(p).check(str(p))
        assert len(pts) == 18 + 36  # as its comment says
        assert sum(p.timeline for p in pts) == 6  # sieve at B=16: 2 seeds x (1 + 2 mb)
