"""The command line: output, exit codes, one-line errors."""

from __future__ import annotations

import json

import pytest

from sieve.cli import main


def test_specs_lists_presets_and_shows_one_with_units(capsys):
    assert main(["specs"]) == 0
    out = capsys.readouterr().out
    assert "hbm3-6400" in out and "* b200-hbm3e-pim" in out
    assert main(["specs", "hbm3-6400"]) == 0
    out = capsys.readouterr().out
    assert "nRCDRD" in out and "31 CK = 19.38 ns" in out and "sources:" in out


def test_dram_json_summary(capsys):
    assert main(["dram", "--spec", "hbm3-6400", "--pattern", "rand", "--requests", "3000",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    for key in ("cycles", "requests", "bandwidth_gbs", "latency_mean_ns", "latency_p99_ns",
                "row_hits", "row_misses", "row_conflicts", "command_counts"):
        assert key in d
    assert d["requests"] == 3000 and d["cycles"] > 0


def test_dram_trace_file_and_text_summary(tmp_path, capsys):
    p = tmp_path / "t.trace"
    p.write_text("".join(f"LD 0x{i * 64:x}\n" for i in range(500)) + "ST 0x100\n")
    assert main(["dram", "--trace", str(p), "--set", "nRCDRD=40"]) == 0
    out = capsys.readouterr().out
    assert "total_num_read_requests:  500" in out and "total_num_write_requests: 1" in out


# Bad input of every subcommand: tests/test_bad_input.py (one table for all of them).


def test_malformed_trace_file(tmp_path, capsys):
    p = tmp_path / "bad.trace"
    p.write_text("LD 0x40\nLD nope\n")
    assert main(["dram", "--trace", str(p)]) == 2
    err = capsys.readouterr().err
    assert "bad.trace' line 2: field 2 (address)" in err


def test_gemv(capsys):
    assert main(["gemv", "--spec", "samsung-hbm2-pim", "--rows", "1024", "--cols", "1024",
                 "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["cycle_accurate_over_roofline"] >= 1.0 and d["pcs"] == 64


def test_gemv_in_pimsimulators_layout(capsys):
    """--col-groups 1 --tile-rows 8 (PIMSimulator's layout): 8192 rows on 512 PIM blocks are
    two output tiles, each a pass over the input with its own mode switches."""
    argv = ["gemv", "--spec", "samsung-hbm2-pim", "--rows", "8192", "--cols", "4096",
            "--col-groups", "1", "--json"]
    assert main(argv) == 0
    one = json.loads(capsys.readouterr().out)
    assert main([*argv, "--tile-rows", "8"]) == 0
    two = json.loads(capsys.readouterr().out)
    assert (one["output_tiles"], two["output_tiles"]) == (1, 2)
    assert two["command_counts"]["MACPB"] == one["command_counts"]["MACPB"]
    assert two["command_counts"]["WR"] > one["command_counts"]["WR"]  # the input again
    assert two["time_ns"] > one["time_ns"]
    assert main([*argv, "--tile-rows", "0"]) == 2
    assert "--tile-rows: '0' is not an integer >= 1" in capsys.readouterr().err


def test_run_with_another_pim_design(tmp_path, capsys):
    """--pim puts another DRAM/PIM preset on the same GPUs; runs.csv names it; an unknown one
    is refused in one line before any work."""
    from sieve.report.tables import read_csv

    out = tmp_path / "o"
    assert main(["run", "--pim", "duplex-logic-pim", "--batch", "4", "--methods", "noexp",
                 "--layers", "1", "--steps", "1", "--warmup", "0", "--jobs", "1",
                 "--out", str(out)]) == 0
    rows = read_csv(out / "runs.csv")
    assert [r["memory"] for r in rows] == ["duplex-logic-pim"]
    capsys.readouterr()
    assert main(["run", "--pim", "nope-pim", "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "duplex-logic-pim" in err[0]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("argv,hint", (
    (["run", "--batchs", "4"], "did you mean --batch?"),
    (["run", "--method", "sieve"], "did you mean --methods?"),  # no abbreviations
    (["runn"], "did you mean 'run'?"),
    (["run", "--overlap", "tb"], "did you mean 'tbo'?"),
    (["specs", "b200-hbm3e-pin"], "did you mean 'b200-hbm3e-pim'?"),
    (["run", "--methods", "siev", "--out", "never"], "did you mean 'sieve'?"),
))
def test_unknown_names_and_flags_suggest_the_closest(argv, hint, capsys, tmp_path,
                                                     monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and hint in err[0]
    if argv[0] == "run" and argv[1].startswith("--") and "did you mean --" in hint:
        assert "(see sieve run --help)" in err[0]  # the subcommand's help, not the top level
    assert not (tmp_path / "never").exists()


@pytest.mark.parametrize("preset", [None, "3"])
def test_cli_pins_openblas_threads_unless_set(preset):
    """The CLI runs OpenBLAS single-threaded (an idle pool only costs CPU time) unless the user
    chose a thread count, before numpy is imported."""
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    # importing the CLI must not import numpy (the pin would come too late)
    code = ("import os, sys; from sieve.cli import main; assert 'numpy' not in sys.modules; "
            "main(['specs']); print(os.environ['OPENBLAS_NUM_THREADS'], file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stderr.strip().splitlines()[-1] == (preset or "1")


def test_the_parser_of_one_subcommand_parses_as_the_whole_parser():
    """main builds only the named subcommand's parser (build_parser(only=...)): the same
    namespace as the whole parser for every subcommand, COMMANDS is the whole parser's list,
    and usage errors of a subcommand read the same."""
    import argparse

    from sieve.cli import COMMANDS, build_parser

    whole = build_parser()
    sub = next(a for a in whole._actions if isinstance(a, argparse._SubParsersAction))
    assert tuple(sub.choices) == COMMANDS
    lines = [["specs"], ["dram", "--trace", "x.trace", "--lifecycle", "ramulator2", "--json"],
             ["check", "log.npy"], ["gemv", "--rows", "512", "--cols", "64"], ["run", "--paper"],
             ["trace", "info", "f.npz"], ["model", "qwen3-30b-a3b"], ["hardware"],
             ["plot", "out"], ["sweep", "s.toml"]]
    assert {w[0] for w in lines} <= set(COMMANDS)
    for words in lines:
        want = vars(whole.parse_args(words))
        assert vars(build_parser(words[0]).parse_args(words)) == want, words
    for c in COMMANDS:  # every subcommand's parser builds alone, with its defaults
        alone = build_parser(c)
        assert set(alone._subparsers_by_name) == {c}
        assert alone._subparsers_by_name[c].format_usage() == \
            whole._subparsers_by_name[c].format_usage()


@pytest.mark.parametrize("columns", [None, "50", "137", "junk", "-3", "0"])
def test_help_is_as_wide_as_argparse_makes_it(columns, monkeypatch):
    """sieve's parser computes the help width itself (shutil's import is a few ms of every
    start): the width argparse's own formatter takes, and the same help text."""
    import argparse
    import shutil

    from sieve import cli

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    assert cli._help_width() == shutil.get_terminal_size().columns - 2
    parser = cli.build_parser("dram")
    parsers = [parser, *parser._subparsers_by_name.values()]
    ours = [p.format_help() for p in parsers]
    monkeypatch.setattr(cli._Parser, "_get_formatter", argparse.ArgumentParser._get_formatter)
    assert [p.format_help() for p in parsers] == ours
    assert len(parsers) > 1 and "--lifecycle" in ours[-1]


def test_the_program_is_main_then_a_frozen_heap():
    """`sieve` (console script and ``python -m sieve``) is cli.run: main() on sys.argv, then
    the objects left frozen out of the collector for the process's end (docs/performance.md,
    *Command start-up*); main() itself, which tests and callers use, leaves the collector as
    it was."""
    import gc
    import subprocess
    import sys
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    scripts = tomllib.loads((root / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"sieve": "sieve.cli:run"}
    assert (root / "sieve" / "__main__.py").read_text().strip().endswith("SystemExit(run())")
    code = ("import gc, sys; from sieve.cli import run; sys.argv = ['sieve', 'specs']; "
            "c = run(); print(c, gc.get_freeze_count() > 0, file=sys.stderr)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stderr.split() == ["0", "True"] and "hbm3-6400" in out.stdout
    frozen = gc.get_freeze_count()
    assert main(["specs"]) == 0 and gc.get_freeze_count() == frozen
