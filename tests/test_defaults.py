"""Defaults live in one place: no hardware preset name is written as a literal outside the
preset tables (the rule and the scan: tests/preset_literals.py).

The tests of the test build a small fake package and show that the scan reports a literal
default, ignores docstrings and the preset tables, and reports a stale allowlist entry.
"""

from __future__ import annotations

from pathlib import Path

from preset_literals import TABLES, preset_names, scan

ROOT = Path(__file__).resolve().parents[1] / "sieve"

#: Literals tolerated for now: {(file, preset name): occurrences}. Every entry says why and who
#: removes it; the scan fails on any literal beyond these counts and on an entry that no longer
#: matches, so the list can only shrink.
ALLOWED: dict[tuple[str, str], int] = {
    # Data, not a default: the GPU the dense GEMM / MoE tables were measured on
    # (costmodels.MEASURED_GPU; hardware.md §3.2-3.3 are B200 rows). Permanent.
    ("sieve/calibration/costmodels.py", "b200"): 1,
}


def test_no_preset_name_literal_outside_the_tables():
    assert scan(ROOT, preset_names(), ALLOWED) == []


def test_the_tables_exist_and_hold_the_defaults():
    repo = ROOT.parent
    for rel in TABLES:
        assert (repo / rel).is_file(), rel
    from sieve.dram.presets import DEFAULT_SPEC, PRESETS
    from sieve.hw.presets import DEFAULT_GPU, GPUS
    from sieve.hw.system import DEFAULT_SYSTEM, SYSTEMS

    assert DEFAULT_SPEC in PRESETS and DEFAULT_GPU in GPUS and DEFAULT_SYSTEM in SYSTEMS
    # the default system is made of the default GPU with its own stacks
    s = SYSTEMS[DEFAULT_SYSTEM]
    assert s.gpu.name == DEFAULT_GPU and s.memory.name == DEFAULT_SPEC


# ---- the test of the test ---------------------------------------------------------------------

def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "sieve"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return root


def test_scan_reports_a_literal_default(tmp_path):
    root = _tree(tmp_path, {"hw/gpu.py": 'def t(n, gpu="b200"):\n    return n\n',
                            "report/x.py": 'SYSTEM = {"name": "8xB200"}\n'})
    problems = scan(root, preset_names())
    assert len(problems) == 2
    assert "'b200' written as a literal at sieve/hw/gpu.py:1" in problems[0]
    assert "'8xB200' written as a literal at sieve/report/x.py:1" in problems[1]


def test_scan_ignores_docstrings_comments_and_the_tables(tmp_path):
    root = _tree(tmp_path, {
        "hw/gpu.py": '"""Example: gemm_time_ns(..., gpu=get_gpu("b200"))."""\n'
                     'def f():\n    """``"8xb200"`` in prose."""\n    return 1  # "b200"\n',
        "hw/presets.py": 'DEFAULT_GPU = "b200"\n',
        "dram/presets.py": 'DEFAULT_SPEC = "b200-hbm3e-pim"\n',
    })
    assert scan(root, preset_names()) == []


def test_scan_counts_against_the_allowlist_and_reports_stale_entries(tmp_path):
    root = _tree(tmp_path, {"pim/ffn.py": 'def a(gpu="b200"):\n    pass\n'
                                          'def b(gpu="b200"):\n    pass\n'})
    names = preset_names()
    assert scan(root, names, {("sieve/pim/ffn.py", "b200"): 2}) == []
    over = scan(root, names, {("sieve/pim/ffn.py", "b200"): 1})  # a new literal
    assert len(over) == 1 and "sieve/pim/ffn.py:1, sieve/pim/ffn.py:3" in over[0]
    stale = scan(root, names, {("sieve/pim/ffn.py", "b200"): 3, ("sieve/pim/host.py", "b200"): 1})
    assert len(stale) == 2 and all("shrink or remove" in p for p in stale)
