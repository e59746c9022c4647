"""docs/validation.md's serving section equals a fresh run of benchmarks/validate_serving.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_serving_validation_section_is_current():
    mod = benchmark_module("validate_serving")
    doc = (ROOT / "docs" / "validation.md").read_text()
    m = re.search(r"<!-- serving:begin.*?<!-- serving:end -->", doc, re.DOTALL)
    assert m, "serving section missing from docs/validation.md"
    assert m.group(0) == mod.section(), f"stale: run {mod.CMD}"
