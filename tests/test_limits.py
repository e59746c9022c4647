"""One set of bounds (sieve.limits) for the CLI, sweep files and the library (issue 18): each is
refused in one line before any work, and the largest legal value is accepted."""

from __future__ import annotations

import pytest

from sieve import limits
from sieve.errors import ConfigError, SieveError
from sieve.system.run import RunConfig

BASE = dict(model="qwen3-30b-a3b", system="1xb200")


def test_run_bounds():
    RunConfig(**BASE, batch=limits.MAX_BATCH, steps=limits.MAX_STEPS, warmup=limits.MAX_STEPS)
    for field, v, name in (("batch", limits.MAX_BATCH + 1, "MAX_BATCH"),
                           ("steps", limits.MAX_STEPS + 1, "MAX_STEPS"),
                           ("warmup", 10 ** 9, "MAX_STEPS")):
        with pytest.raises(ConfigError, match=f"run: {field} {v} exceeds .*limits.{name}"):
            RunConfig(**BASE, **{field: v})


def test_step_options_are_checked_when_the_run_is_made():
    for kw, msg in (({"pim_order": "sideways"}, "pim_order 'sideways' unknown"),
                    ({"expert_dtype": "banana"}, "expert_dtype 'banana' unknown .known: "
                                                 "released, bf16, fp16, fp8"),
                    ({"scheduler_ns": float("inf")}, "scheduler_ns must be finite")):
        with pytest.raises(ConfigError, match=msg):
            RunConfig(**BASE, **kw)


def test_system_bound():
    from sieve.hw.system import get_system

    assert get_system("4xb200", {"n_gpus": limits.MAX_GPUS}).n_gpus == limits.MAX_GPUS
    with pytest.raises(ConfigError, match="n_gpus 1000000000 exceeds 4096 .sieve.limits"):
        get_system("4xb200", {"n_gpus": 10 ** 9})


def test_sweep_points_counted_before_any_is_built():
    from sieve.experiments.config import ExperimentConfig

    with pytest.raises(ConfigError, match="1000000 points exceed 100000"):
        ExperimentConfig.from_dict({"base": BASE, "grid": {
            "seed": list(range(1000)), "batch": list(range(1, 1001))}})
    blocks = ExperimentConfig.from_dict({"base": BASE, "grid": {"seed": [0, 1]}, "runs": [
        {"method": "sieve", "grid": {"batch": [1, 2, 4]}}, {"method": "noexp"}]})
    assert blocks.n_points() == len(blocks.points()) == 8


def test_cli_refuses_in_one_line_nothing_written(tmp_path, capsys):
    from sieve.cli import main

    sweep = tmp_path / "s.toml"
    sweep.write_text('[base]\nmodel = "qwen3-30b-a3b"\nsystem = "1xb200"\n[grid]\n'
                     "seed = [" + ",".join(map(str, range(400))) + "]\n"
                     "batch = [" + ",".join(map(str, range(1, 401))) + "]\n")
    for argv in (["sweep", str(sweep), "--dry-run", "--out", str(tmp_path / "o")],
                 ["sweep", str(sweep), "--out", str(tmp_path / "o")],
                 ["run", "--batch", "1000000000", "--out", str(tmp_path / "o")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "exceed" in err, err
        assert not (tmp_path / "o").exists()


def test_pim_fields_outside_any_design_are_refused():
    from sieve.dram.presets import get_spec

    for over, msg in (({"pim.pu_dtype": "fp3"}, r"pim.pu_dtype 'fp3': unknown .known: bf16, "
                                                r"fp16, fp32, fp8, int8"),
                      ({"pim.gbuf_bytes": 2 ** 62}, r"pim.gbuf_bytes must be in \[1, 16777216\]"),
                      ({"pim.pu_dtype": "fp8"}, "'fp8' has 1-byte operands but pim.dtype_bytes "
                                                "is 2"),
                      ({"pim.lanes": 10 ** 6}, r"pim.lanes must be in \[1, 1024\]")):
        with pytest.raises(ConfigError, match=msg):
            get_spec("b200-hbm3e-pim", over)
    assert get_spec("b200-hbm3e-pim", {"pim.pu_dtype": "fp16"}).pim.pu_dtype == "fp16"


def test_schedule_on_a_system_without_pim_is_refused_not_answered():
    """It used to print every expert 'on PIM' with T_PIM 0 (issue 18)."""
    from sieve.hw.system import get_system
    from sieve.model import get_model
    from sieve.sched.trace import schedule_synthetic

    m = get_model("qwen3-30b-a3b")
    nopim = get_system("1xb200", {"memory": "hbm3e-8000"})
    with pytest.raises(ConfigError, match="has no PIM units .memory 'hbm3e-8000'.*gpu-only"):
        schedule_synthetic(m, nopim, "sieve", 4)
    out = schedule_synthetic(m, nopim, "gpu-only", 4)
    assert out and not any(s.partition.on_pim.any() for s in out)


def test_engine_arguments_are_checked_not_coerced():
    """DramDevice(channels=2.7 | '3' | True | nan | inf | 2**63) used to be coerced or raise a
    raw ValueError/OverflowError; log='yes' was taken as true (issue 18)."""
    from sieve.dram import DramDevice, PimDevice

    for v in (float("nan"), float("inf"), 2 ** 63, 2.7, "3", True, 0, 17):
        with pytest.raises(ConfigError, match=r"DramDevice: channels must be .*in \[1, 16\]"):
            DramDevice("hbm3-6400", channels=v)
    with pytest.raises(ConfigError, match="DramDevice: log must be true or false, got 'yes'"):
        DramDevice("hbm3-6400", log="yes")
    with pytest.raises(ConfigError, match="PIM device: log must be true or false"):
        PimDevice("b200-hbm3e-pim", log=1)
    assert DramDevice("hbm3-6400", channels=16, log=True).channels == 16


def test_outputs_never_overwrite_inputs_or_follow_dangling_links(tmp_path, capsys):
    """`--log` equal to `--trace` overwrote the trace; a dangling-symlink `--out` created the
    link's target folders (issue 18). Both are refused in one line, nothing written."""
    import numpy as np

    from sieve.cli import main

    tr = tmp_path / "addrs.npy"
    np.save(tr, np.arange(0, 6400, 64, dtype=np.int64))
    before = tr.read_bytes()
    assert main(["dram", "--spec", "hbm3-6400", "--trace", str(tr), "--log",
                 str(tmp_path / "." / "addrs.npy")]) == 2
    assert "the log would overwrite its input" in capsys.readouterr().err
    assert tr.read_bytes() == before
    link = tmp_path / "out"
    target = tmp_path / "missing" / "x"
    link.symlink_to(target)
    assert main(["run", "--batch", "4", "--methods", "sieve", "--layers", "1", "--out",
                 str(link)]) == 2
    err = capsys.readouterr().err
    assert "a symbolic link to" in err and "does not exist" in err and err.count("\n") == 1
    assert not (tmp_path / "missing").exists()


def test_checker_refuses_ticks_that_would_overflow(tmp_path, capsys):
    """`sieve check` on clocks >= 2^62 ended in an OverflowError traceback (issue 18)."""
    import numpy as np

    from sieve.cli import main
    from sieve.dram.log import LOG_DTYPE

    csv = tmp_path / "c.csv"
    csv.write_text("clock,command,Channel,PseudoChannel,Sid,BankGroup,Bank,Row,Column,type,"
                   f"source\n1,ACT,0,0,0,0,0,0,-1,0,-1\n{2 ** 64},ACT,0,1,0,0,0,0,-1,0,-1\n")
    assert main(["check", str(csv), "--spec", "hbm3-6400"]) == 2
    err = capsys.readouterr().err
    assert "line 3: clock 18446744073709551616 beyond" in err and err.count("\n") == 1
    a = np.zeros(2, dtype=LOG_DTYPE)
    a["tick"] = [0, 2 ** 63 - 1]
    np.save(tmp_path / "l.npy", a)
    assert main(["check", str(tmp_path / "l.npy"), "--spec", "hbm3-6400"]) == 2
    assert "ticks outside [0, 4611686018427387904]" in capsys.readouterr().err


def test_a_trace_without_steps_is_refused_where_it_is_built():
    """A zero-step trace gave ZeroDivisionError / NaN batch tracebacks later (issue 18)."""
    import numpy as np

    from sieve.workload.trace import RoutingTrace, TraceMeta

    meta = TraceMeta("qwen3-30b-a3b", 128, 8, (0,))
    with pytest.raises(ConfigError, match="RoutingTrace: no step"):
        RoutingTrace(np.zeros((0, 1, 8), np.int16), np.array([0]), np.zeros(0, np.int64),
                     np.zeros(0, np.int8), meta)
    with pytest.raises(ConfigError, match="RoutingTrace: no token"):
        RoutingTrace(np.zeros((0, 1, 8), np.int16), np.array([0, 0]), np.zeros(0, np.int64),
                     np.zeros(0, np.int8), meta)


def test_refusals_come_before_any_run_and_leave_nothing(tmp_path, capsys):
    """A bad pim_order was refused inside the worker and an unwritable --cache after the whole
    sweep, both leaving out/runs/ behind; a mount point as --out only at the final rename
    (issue 18). Now each is one line before any run, and nothing is written."""
    import os

    from sieve.cli import main

    sweep = tmp_path / "s.toml"
    sweep.write_text('[base]\nmodel = "qwen3-30b-a3b"\nsystem = "1xb200"\nbatch = 2\n'
                     'layers = 1\nsteps = 1\nwarmup = 0\npim_order = "sideways"\n')
    out = tmp_path / "o"
    cases = [(["sweep", str(sweep), "--out", str(out), "--jobs", "1"],
              "base.pim_order: step: pim_order 'sideways' unknown"),
             (["run", "--batch", "2", "--layers", "1", "--methods", "sieve", "--cache",
               "/proc/sieve-test/cache.json", "--out", str(out)], "--cache")]
    if os.path.isdir("/dev/shm") and os.path.ismount("/dev/shm") and not os.listdir("/dev/shm"):
        cases.append((["run", "--batch", "2", "--out", "/dev/shm"], "is a mount point"))
    for argv, msg in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert msg in err and err.count("\n") == 1, err
        assert not out.exists()


def test_a_store_is_made_by_its_first_run():
    import tempfile
    from pathlib import Path

    from sieve.experiments.store import RunStore

    d = Path(tempfile.mkdtemp()) / "out"
    s = RunStore(d)
    assert s.ids() == [] and not d.exists()


def test_a_second_sieve_into_the_same_folder_is_refused(tmp_path, capsys):
    """Two sweeps into one --out ran with no lock, the last to finish winning the folder
    (issue 18). The holder here is another process holding the lock; the second sieve is
    refused in one line naming it, and the lock file is gone once it is released."""
    import subprocess
    import sys
    import time

    from sieve.cli import main

    out = tmp_path / "out"
    code = ("import sys, time\nfrom sieve.outputs import lock_out_dir\n"
            f"with lock_out_dir({str(out)!r}):\n    print('held', flush=True)\n"
            "    sys.stdin.readline()\n")
    holder = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["run", "--batch", "2", "--methods", "sieve", "--layers", "1", "--out",
                     str(out), "--jobs", "1"]) == 2
        err = capsys.readouterr().err
        assert f"another sieve (pid {holder.pid}) is writing this folder" in err
        assert err.count("\n") == 1 and not out.exists()
    finally:
        holder.communicate("\n", timeout=30)
    deadline = time.time() + 10
    while list(tmp_path.glob(".sieve-lock.*")) and time.time() < deadline:
        time.sleep(0.05)
    assert not list(tmp_path.glob(".sieve-lock.*"))


def test_lock_nests_and_stale_temporaries_are_removed(tmp_path):
    from sieve.outputs import lock_out_dir, write_run

    out = tmp_path / "res"
    stale = [tmp_path / ".res.0123abcd.tmp", tmp_path / ".res.89abcdef.old"]
    for d in stale:
        d.mkdir()
        (d / "half.csv").write_text("x")
    other = tmp_path / ".other.0123abcd.tmp"  # another folder's: left alone
    other.mkdir()
    with lock_out_dir(out):
        assert not any(d.exists() for d in stale) and other.exists()
        write_run(out, {"a.txt": "1"}, command="test")  # the writer takes it again
    assert (out / "a.txt").read_text() == "1"
    assert not list(tmp_path.glob(".sieve-lock.*"))


def test_a_planted_huge_manifest_is_not_read_whole(tmp_path):
    """sieve's own small JSON files in an --out folder (manifest, store marker) are read
    never past MAX_TEXT_FILE_BYTES: a planted 40 MiB manifest.json makes the folder a foreign
    one (refused), without being read whole."""
    from sieve.outputs import MANIFEST, _own_json, check_out_dir

    out = tmp_path / "out"
    out.mkdir()
    with open(out / MANIFEST, "wb") as fh:
        fh.truncate(40 << 20)
    assert _own_json(out / MANIFEST) is None
    with pytest.raises(SieveError, match="out"):
        check_out_dir(out)
