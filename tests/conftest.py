"""Shared fixtures and paths for the test suite."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

REPO = Path(__file__).resolve().parents[1]
#: shared/ sits next to the project root; real traces and references live there when present.
SHARED = Path(os.environ.get("SIEVE_SHARED", REPO.parent / "shared"))
TRACES = SHARED / "traces"


def shared_trace(*parts: str) -> Path:
    """Path of a file under shared/traces; skips the test cleanly when it is absent."""
    path = TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared trace data not present: {path}")
    return path


def benchmark_module(name: str):
    """The script benchmarks/<name>.py loaded as a module (the benchmarks are not a
    package), for the tests that check what a script generates or computes."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, REPO / "benchmarks" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def rng():
    import numpy as np

    return np.random.default_rng(12345)
