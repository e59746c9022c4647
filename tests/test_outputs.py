"""Result writing (sieve.outputs): a run folder appears whole or not at all, never mixes two
runs, respects the umask, refuses folders it did not write; figures are byte-reproducible."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest

from sieve.errors import ConfigError, OutputError
from sieve.outputs import (
    MANIFEST,
    atomic_write,
    check_out_dir,
    open_run,
    write_run,
    write_section,
    write_text,
)


def _mode(p) -> int:
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077])
def test_files_and_folders_follow_the_umask(tmp_path, umask, mask):
    umask(mask)
    paths = write_run(tmp_path / "a" / "run", {"t.csv": "x\n", "f.png": b"\x89PNG"},
                      command="test")
    for p in paths:
        assert _mode(p) == 0o666 & ~mask, oct(_mode(p))
    assert _mode(tmp_path / "a" / "run") == 0o777 & ~mask
    assert _mode(tmp_path / "a") == 0o777 & ~mask
    write_text(tmp_path / "one.txt", "hi")
    assert _mode(tmp_path / "one.txt") == 0o666 & ~mask


def test_manifest_lists_every_file_with_its_hash(tmp_path):
    out = tmp_path / "run"
    paths = write_run(out, {"b.csv": "1,2\n", "a.pdf": b"%PDF"}, command="characterize")
    assert [p.name for p in paths] == ["b.csv", "a.pdf", MANIFEST]
    m = json.loads((out / MANIFEST).read_text())
    assert m["format"] == "sieve-run" and m["command"] == "characterize"
    assert m["files"] == {
        "a.pdf": {"bytes": 4, "sha256": hashlib.sha256(b"%PDF").hexdigest()},
        "b.csv": {"bytes": 4, "sha256": hashlib.sha256(b"1,2\n").hexdigest()},
    }


def test_a_new_run_replaces_the_previous_one_whole(tmp_path):
    out = tmp_path / "run"
    write_run(out, {"seed3.csv": "3", "fig.png": b"3"}, command="t")
    write_run(out, {"seed4.csv": "4"}, command="t")
    assert sorted(os.listdir(out)) == [MANIFEST, "seed4.csv"]  # no stale seed-3 figure
    assert sorted(os.listdir(tmp_path)) == ["run"]  # no temporary or old folder left


@pytest.mark.parametrize("exc", [ConfigError("late error"), KeyboardInterrupt(),
                                 OSError(28, "No space left on device")])
def test_a_failure_part_way_leaves_the_previous_run_untouched(tmp_path, exc):
    out = tmp_path / "run"
    write_run(out, {"a.csv": "old", "b.png": b"old"}, command="t")
    before = {p: (out / p).read_bytes() for p in os.listdir(out)}
    with pytest.raises(type(exc)):
        with open_run(out, "t") as run:
            run.write("a.csv", "new")
            raise exc
    assert {p: (out / p).read_bytes() for p in os.listdir(out)} == before
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_a_failed_write_becomes_one_output_error_and_nothing_appears(tmp_path, monkeypatch):
    out = tmp_path / "new" / "run"
    real = os.fsync
    calls = []

    def full_disk(fd):
        calls.append(fd)
        if len(calls) == 2:
            raise OSError(28, "No space left on device")
        return real(fd)

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OutputError, match="b.png': cannot write \\(No space left on device\\)"):
        write_run(out, {"a.csv": "1", "b.png": b"2"}, command="t")
    assert not (tmp_path / "new").exists()  # the parent it created is removed too


def test_a_failed_swap_restores_the_previous_run(tmp_path, monkeypatch):
    out = tmp_path / "run"
    write_run(out, {"a.csv": "old"}, command="t")
    real = os.rename
    calls = []

    def flaky(src, dst):
        calls.append((src, dst))
        if len(calls) == 2:  # moving the new folder in fails
            raise OSError(18, "Invalid cross-device link")
        return real(src, dst)

    monkeypatch.setattr(os, "rename", flaky)
    with pytest.raises(OutputError, match="cannot write"):
        write_run(out, {"a.csv": "new"}, command="t")
    assert (out / "a.csv").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["run"]


def test_out_dir_checks(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="--out: empty folder name"):
        check_out_dir("")
    with pytest.raises(ConfigError, match="is the current folder or one above it"):
        check_out_dir(".")
    with pytest.raises(ConfigError, match="is the current folder or one above it"):
        check_out_dir("..")
    with pytest.raises(OutputError, match="exists and is not a folder"):
        check_out_dir("file")
    with pytest.raises(OutputError, match="is not a folder"):
        check_out_dir("file/sub")
    with pytest.raises(OutputError, match=r"holds files sieve did not write \(notes.txt\)"):
        write_run("mine", {"a.csv": "1"}, command="t")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"
    write_run("empty", {"a.csv": "1"}, command="t")  # an empty folder is fine
    with pytest.raises(ConfigError, match="not a plain file name"):
        write_run("x", {"../escape.csv": "1"}, command="t")
    with pytest.raises(ConfigError, match="not a plain file name"):
        write_run("x", {MANIFEST: "1"}, command="t")
    assert not (tmp_path / "x").exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_unwritable_folder_is_refused_before_any_work(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="cannot write in .* \\(permission denied\\)"):
            check_out_dir(ro / "out")
    finally:
        ro.chmod(0o755)


def test_atomic_write_replaces_one_file_and_cleans_up(tmp_path):
    p = tmp_path / "f.json"
    p.write_text("old")
    with pytest.raises(RuntimeError):
        with atomic_write(p) as fh:
            fh.write("half")
            raise RuntimeError("boom")
    assert p.read_text() == "old" and sorted(os.listdir(tmp_path)) == ["f.json"]
    with pytest.raises(OutputError, match="is a folder"):
        write_text(tmp_path, "x")


# --------------------------------------------------------------------------------------------
# Byte-reproducible figures
# --------------------------------------------------------------------------------------------

_RENDER = """
import hashlib, sys
from sieve.report import plots
rows = [{"model": "m", "batch_size": b, "statistic": "act_ratio", "value": v, "p05": v - .01,
         "p95": v + .01, "n_steps": 2, "seed": 0} for b, v in ((1, .1), (4, .3), (16, .6))]
fig = plots.plot_act_ratio(rows)
for fmt in ("png", "pdf", "svg"):
    print(fmt, hashlib.sha256(plots.render(fig, fmt)).hexdigest())
"""


def test_figures_are_byte_reproducible_across_processes():
    env = dict(os.environ, MPLBACKEND="Agg")
    outs = []
    for seed in ("1", "2"):
        env["PYTHONHASHSEED"] = seed
        r = subprocess.run([sys.executable, "-c", _RENDER], capture_output=True, text=True,
                           env=env, check=True)
        outs.append(r.stdout)
    assert outs[0] == outs[1] and outs[0].count("\n") == 3


def test_pdf_has_no_creation_date():
    from sieve.report import plots

    rows = [{"model": "m", "batch_size": 1, "statistic": "act_ratio", "value": 0.1,
             "p05": 0.1, "p95": 0.1, "n_steps": 1, "seed": 0}]
    fig = plots.plot_act_ratio(rows)
    try:
        pdf = plots.render(fig, "pdf")
        assert b"CreationDate" not in pdf and pdf.startswith(b"%PDF")
        with pytest.raises(ConfigError, match="figure format 'jpg': unknown"):
            plots.render(fig, "jpg")
    finally:
        plots.close(fig)


@pytest.mark.slow
def test_characterize_twice_gives_identical_files(tmp_path):
    from sieve.cli import main

    args = ["characterize", "--models", "gpt-oss-20b", "--batch", "1,4", "--steps", "2"]
    assert main([*args, "--out", str(tmp_path / "a")]) == 0
    assert main([*args, "--out", str(tmp_path / "b")]) == 0
    for name in os.listdir(tmp_path / "a"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux procfs")
def test_unwritable_filesystem_gives_one_output_error():
    with pytest.raises(OutputError, match="'/proc/sieve-test/run': cannot write") as exc:
        write_run("/proc/sieve-test/run", {"a.csv": "1"}, command="t")
    assert "\n" not in str(exc.value)


def test_a_symlinked_run_folder_is_replaced_where_it_is(tmp_path):
    real = tmp_path / "data" / "run"
    write_run(real, {"a.csv": "old"}, command="t")
    link = tmp_path / "results"
    link.symlink_to(real)
    write_run(link, {"a.csv": "new"}, command="t")
    assert link.is_symlink() and (real / "a.csv").read_text() == "new"
    assert sorted(os.listdir(tmp_path / "data")) == ["run"]


def test_write_section_replaces_only_the_marked_part_or_appends_it(tmp_path):
    doc = tmp_path / "v.md"
    new = "<!-- x:begin -->\nnew\n<!-- x:end -->"
    write_section(doc, "<!-- x:begin", "<!-- x:end -->", new, heading="X", new_file="# V\n")
    assert doc.read_text() == "# V\n\n## X\n\n" + new + "\n"
    doc.write_text("head\n<!-- x:begin (generated) -->\nold\n<!-- x:end -->\ntail\n")
    write_section(doc, "<!-- x:begin", "<!-- x:end -->", new, heading="X")
    assert doc.read_text() == "head\n" + new + "\ntail\n"
    # a marker-like text in the replacement is not read as a regex group reference
    write_section(doc, "<!-- x:begin", "<!-- x:end -->", new.replace("new", r"\1 \g<0>"))
    assert r"\1 \g<0>" in doc.read_text()
