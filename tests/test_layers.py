"""The package keeps its shape: layers import only downwards, and no module imports cycle back.

The rules are in tests/layering.py; the tests of the test build small fake packages with a
deliberate upward import, a cycle, and a run-time import of calibration code, and show that
the checker reports each.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from layering import check

ROOT = Path(__file__).resolve().parents[1] / "sieve"


def test_sieve_has_no_upward_import_and_no_cycle():
    assert check(ROOT) == []


def _tree(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "sieve"
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    for d in [root, *[p for p in root.rglob("*") if p.is_dir()]]:
        (d / "__init__.py").touch()
    return root


def test_checker_reports_an_upward_import(tmp_path):
    root = _tree(tmp_path, {"dram/spec.py": "from sieve.pim.layout import x\n",
                            "pim/layout.py": "x = 1\n"})
    problems = check(root)
    assert len(problems) == 1 and "sieve.dram.spec (dram) imports sieve.pim.layout" in problems[0]


def test_checker_reports_a_lazy_upward_import(tmp_path):
    root = _tree(tmp_path, {"hw/gpu.py": "def f():\n    from sieve.sched import greedy\n",
                            "sched/greedy.py": ""})
    assert any("sieve.hw.gpu (hw) imports sieve.sched.greedy" in p for p in check(root))


def test_checker_reports_a_cycle_inside_one_layer(tmp_path):
    root = _tree(tmp_path, {"workload/a.py": "from sieve.workload import b\n",
                            "workload/b.py": "import sieve.workload.a\n"})
    assert check(root) == ["import cycle: sieve.workload.a -> sieve.workload.b -> "
                           "sieve.workload.a"]


def test_checker_reports_run_time_use_of_calibration(tmp_path):
    root = _tree(tmp_path, {"pim/costs.py": "from sieve.calibration.fit import t\n",
                            "calibration/fit.py": "t = 1\n"})
    assert any("(calibration)" in p for p in check(root))


def test_checker_reports_a_package_with_no_layer(tmp_path):
    root = _tree(tmp_path, {"gadgets/x.py": ""})
    assert sorted(check(root)) == [
        "sieve.gadgets.x: package 'gadgets' has no layer (add it to ALLOWED)",
        "sieve.gadgets: package 'gadgets' has no layer (add it to ALLOWED)"]


def test_checker_reports_a_second_door_into_the_engine(tmp_path):
    root = _tree(tmp_path, {"_dram.pyx": "", "dram/engine.py": "from sieve import _dram\n",
                            "dram/device.py": "import sieve._dram\n"})
    assert check(root) == ["sieve/dram/device.py:1: sieve.dram.device imports sieve._dram, "
                           "which only its door sieve.dram.engine may import"]


def test_checker_follows_relative_imports(tmp_path):
    root = _tree(tmp_path, {"model/moe.py": "from ..report import plots\n",
                            "report/plots.py": ""})
    assert any("sieve.model.moe (model) imports sieve.report.plots" in p for p in check(root))


@pytest.mark.parametrize("module", ["sieve.dram", "sieve.dram.checker", "sieve.dram.presets"])
def test_specs_and_checker_do_not_load_the_compiled_engine(module):
    code = f"import sys, {module}; print('sieve._dram' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"


def test_report_reads_tables_and_runs_nothing():
    """sieve.report draws and writes what experiments collected: it may name the tables'
    types (sieve.experiments.evaluation, points, store) but never the executor or a worker."""
    import ast

    root = Path(__file__).resolve().parents[1] / "sieve" / "report"
    banned = ("sieve.experiments.executor", "sieve.experiments.worker",
              "sieve.system.run.simulate_run")
    for f in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            assert not any(n in banned for n in names), (f.name, names)
