"""Configuration files of every kind that sieve reads (model config.json, system, DRAM/PIM spec,
workload profile and sweep files), made hostile: each is refused in one line naming the file
before anything is read past the bound (sieve.limits), through the library and the CLI (exit
2, no traceback, nothing written) - issue 18."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sieve.errors import ConfigError
from sieve.limits import MAX_INT_DIGITS, MAX_TEXT_FILE_BYTES


def _loaders():
    from sieve.dram.presets import get_spec
    from sieve.experiments.config import load_experiment
    from sieve.hw.system import get_system
    from sieve.model import get_model
    from sieve.workload.profiles import load_profile

    return {"model config": get_model, "system config file": get_system,
            "DRAM spec file": get_spec, "workload profile file": load_profile,
            "sweep file": load_experiment}


JSON_CASES = {
    "long integer": ('{"a": ' + "9" * 5000 + "}", f"integer literal of 5000 digits .at most "
                     f"{MAX_INT_DIGITS}"),
    "NaN": ('{"a": NaN}', "NaN is not a number sieve accepts"),
    "Infinity": ('{"a": -Infinity}', "-Infinity is not a number sieve accepts"),
    "overflowing float": ('{"a": 1e999}', "number 1e999 is not finite"),
    "deep nesting": ("[" * 200_000 + "]" * 200_000, "nested too deeply"),
    "syntax": ('{"a": ', "not valid JSON"),
}
TOML_CASES = {
    "long integer": ("a = " + "9" * 40, "a: integer of more than 30 digits"),
    "inf": ("[x]\nb = inf", "x.b: inf is not finite"),
    "nan in a list": ("c = [1.0, nan]", r"c\[1\]: nan is not finite"),
    "syntax": ("a = ", "not valid TOML"),
}


@pytest.mark.parametrize("case", sorted(JSON_CASES))
@pytest.mark.parametrize("what", ["model config", "system config file", "DRAM spec file",
                                  "workload profile file", "sweep file"])
def test_hostile_json_is_refused_naming_the_file(tmp_path, what, case):
    text, msg = JSON_CASES[case]
    p = tmp_path / "config.json"
    p.write_text(text)
    with pytest.raises(ConfigError, match=msg) as exc:
        _loaders()[what](p)
    assert str(p) in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("case", sorted(TOML_CASES))
@pytest.mark.parametrize("what", ["system config file", "DRAM spec file",
                                  "workload profile file", "sweep file"])
def test_hostile_toml_is_refused_naming_the_file(tmp_path, what, case):
    text, msg = TOML_CASES[case]
    p = tmp_path / "f.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=msg) as exc:
        _loaders()[what](p)
    assert str(p) in str(exc.value)


def test_a_file_past_the_size_bound_is_refused_without_reading_it_whole(tmp_path):
    from sieve.validate import read_text

    big = tmp_path / "big.json"
    with open(big, "wb") as fh:  # sparse: no disk used
        fh.truncate(10 * MAX_TEXT_FILE_BYTES)
    for what, load in _loaders().items():
        with pytest.raises(ConfigError, match=f"{what}.*larger than 32.0 MiB, the limit"):
            load(big)
    # a device that never ends (the issue's `--model /dev/zero`)
    if os.path.exists("/dev/zero"):
        with pytest.raises(ConfigError, match="larger than"):
            read_text("/dev/zero", "model config")
    with pytest.raises(ConfigError, match="is a folder"):
        read_text(tmp_path, "model config")
    ok = tmp_path / "ok.json"
    ok.write_text("{}")
    assert read_text(ok, "x", limit=2) == "{}"
    with pytest.raises(ConfigError, match="larger than 1 B"):
        read_text(ok, "x", limit=1)


def test_valid_files_still_load(tmp_path):
    """The hooks change nothing for real files: long-but-legal integers, exponents, TOML."""
    from sieve.validate import parse_document

    assert parse_document('{"a": 123456789012345678901234567890, "b": 1.5e3, "c": [true]}',
                          "x.json", "f") == {"a": 123456789012345678901234567890, "b": 1500.0,
                                             "c": [True]}
    assert parse_document("a = 1\n[b]\nc = 2.5", "x.toml", "f") == {"a": 1, "b": {"c": 2.5}}


CLI = [
    (["run", "--model", "{P}.json", "--out", "{OUT}"], "model config"),
    (["run", "--system", "{P}.json", "--out", "{OUT}"], "system config file"),
    (["run", "--pim", "{P}.json", "--out", "{OUT}"], "DRAM spec file"),
    (["run", "--workload", "{P}.json", "--out", "{OUT}"], "workload profile file"),
    (["sweep", "{P}.json", "--out", "{OUT}"], "sweep file"),
]


@pytest.mark.parametrize("argv,what", CLI)
@pytest.mark.parametrize("case", ["long integer", "NaN", "deep nesting"])
def test_cli_one_line_exit_2_nothing_written(tmp_path, capsys, argv, what, case):
    from sieve.cli import main

    p = tmp_path / "bad"
    Path(f"{p}.json").write_text(JSON_CASES[case][0])
    out = tmp_path / "out"
    args = [a.replace("{P}", str(p)).replace("{OUT}", str(out)) for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("sieve: error: ") and what in err
    assert "Traceback" not in err and not out.exists()


def test_the_user_guide_lists_every_limit():
    """docs/user-guide.md's table of bounds is the one generated from sieve.limits.LIMITS
    (``python -m sieve.limits --write docs/user-guide.md``), so the two cannot disagree."""
    from sieve import limits

    text = (Path(__file__).resolve().parents[1] / "docs" / "user-guide.md").read_text()
    names = [n for n in dir(limits) if n.startswith("MAX_")]
    assert sorted(lim.constant for lim in limits.LIMITS.values()) == sorted(names)
    for lim in limits.LIMITS.values():
        assert getattr(limits, lim.constant) == lim.value
    assert limits.table_markdown() in text
