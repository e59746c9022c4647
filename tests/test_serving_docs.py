"""docs/validation.md's serving section equals a fresh run of benchmarks/validate_serving.py."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_serving_validation_section_is_current():
    spec = importlib.util.spec_from_file_location("validate_serving",
                                                  ROOT / "benchmarks" / "validate_serving.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    doc = (ROOT / "docs" / "validation.md").read_text()
    m = re.search(r"<!-- serving:begin.*?<!-- serving:end -->", doc, re.DOTALL)
    assert m, "serving section missing from docs/validation.md"
    assert m.group(0) == mod.section(), f"stale: run {mod.CMD}"
