"""sieve.lazy: a module imported on first use (the DRAM layer's numpy)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from sieve.lazy import LazyModule


def test_a_lazy_module_loads_on_first_attribute_and_then_is_the_module():
    code = ("import sys; from sieve.lazy import LazyModule; m = LazyModule('fractions'); "
            "before = 'fractions' in sys.modules; f = m.Fraction(1, 3); "
            "import fractions; "
            "print(before, 'fractions' in sys.modules, m.Fraction is fractions.Fraction, "
            "'Fraction' in vars(m), f == fractions.Fraction(1, 3))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["False", "True", "True", "True", "True"]


def test_a_lazy_module_is_read_only_and_says_what_it_stands_for():
    m = LazyModule("json")
    assert "json" in repr(m)
    with pytest.raises(AttributeError, match="read-only"):
        m.dumps = None
    assert m.dumps([1]) == "[1]"
    with pytest.raises(AttributeError):
        m.no_such_name  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        LazyModule("sieve_no_such_module").x  # noqa: B018


def test_the_dram_layer_imports_without_numpy():
    """Importing the DRAM layer and its request front end loads no numpy (it is loaded by the
    first call that needs it)."""
    code = ("import sys; import sieve.dram; from sieve.dram import controller, engine; "
            "import sieve.cli; print('numpy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
