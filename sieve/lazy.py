"""Modules imported on first use.

``from sieve.lazy import numpy as np`` binds a stand-in that imports numpy the first time one of
its attributes is read and from then on answers from numpy's own namespace (copied into the
stand-in, so a later ``np.zeros`` is a plain attribute read). The DRAM layer's modules use it so
that ``sieve dram --trace FILE`` reads the trace, runs the engine and reports without importing
numpy at all: numpy's import is about 0.1 s, some 6 % of the CPU time of a 2 M-request run
(docs/performance.md, *`sieve dram` without numpy*). Anything that does need numpy imports it
as usual.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["LazyModule", "numpy"]


class LazyModule:
    """Stands in for the module ``name`` until one of its attributes is read."""

    def __init__(self, name: str):
        self.__dict__["_lazy_name"] = name

    def _load(self) -> ModuleType:
        mod = importlib.import_module(self.__dict__["_lazy_name"])
        self.__dict__.update(mod.__dict__)
        return mod

    def __getattr__(self, attr: str):
        # only reached for names not in the stand-in's namespace: before the first load, or a
        # name the module itself provides through a module-level __getattr__ (numpy.random)
        return getattr(self._load(), attr)

    def __setattr__(self, attr: str, value) -> None:
        raise AttributeError(f"{self.__dict__['_lazy_name']}: a lazily imported module is "
                             "read-only here")

    def __repr__(self) -> str:
        return f"<lazily imported module {self.__dict__['_lazy_name']!r}>"


#: numpy, imported on first use.
numpy = LazyModule("numpy")
