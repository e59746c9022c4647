"""docs/validation.md's Schedulers section equals a fresh run of benchmarks/sched_report.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_scheduler_validation_section_is_current():
    doc = ROOT / "docs" / "validation.md"
    mod = benchmark_module("sched_report")
    m = re.search(r"<!-- sched:begin.*?<!-- sched:end -->", doc.read_text(), re.DOTALL)
    assert m, "Schedulers section missing from docs/validation.md"
    assert m.group(0) == mod.section(figure=None), f"stale: run {mod.CMD}"
