"""Build of the Cython extensions: the DRAM/PIM engine ``sieve._dram``, the LoadStore trace
reader ``sieve.dram._loadstore``, the address decode ``sieve.dram._mapping``, the command-log
CSV formatter ``sieve.dram._logcsv``, the checker's timing pass, state replay and CSV reader
``sieve.dram.checker._timing`` / ``._state`` / ``._csvlog``, the scheduler loop
``sieve.sched._greedy`` and the step schedule's look ahead ``sieve.system._look``.

All Cython compiler directives live here, in one dict.  ``SIEVE_CYTHON_DEBUG=1`` at build time
switches on bounds, wrap-around and initialisation checks (and -O0 -g), so an out-of-bounds
access in a cycle loop raises instead of silently corrupting results; experiments use the
default optimised build.
"""

import os

from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("SIEVE_CYTHON_DEBUG", "0") not in ("", "0", "false", "False")

directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": False,
    "initializedcheck": DEBUG,
    "nonecheck": False,  # would need the GIL inside the nogil cycle loops
    "cdivision": True,
    "embedsignature": True,
}

compile_args = ["-O0", "-g"] if DEBUG else ["-O3"]
macros = [("SIEVE_DEBUG_BUILD", "1" if DEBUG else "0")]
exts = [
    # the DRAM/PIM command engine (its only door is sieve/dram/engine.py)
    Extension("sieve._dram", ["sieve/_dram.pyx"], define_macros=macros,
              extra_compile_args=compile_args),
    # the LoadStore trace reader (its only importer is sieve/dram/memtrace.py)
    Extension("sieve.dram._loadstore", ["sieve/dram/_loadstore.pyx"], define_macros=macros,
              extra_compile_args=compile_args),
    # the address decode (its only importer is sieve/dram/mapping.py)
    Extension("sieve.dram._mapping", ["sieve/dram/_mapping.pyx"], define_macros=macros,
              extra_compile_args=compile_args),
    # the command-log CSV formatter (its only importer is sieve/dram/log.py)
    Extension("sieve.dram._logcsv", ["sieve/dram/_logcsv.pyx"], define_macros=macros,
              extra_compile_args=compile_args),
    # the checker's timing pass (its only importer is sieve/dram/checker/timing.py; it shares
    # nothing with the engine)
    Extension("sieve.dram.checker._timing", ["sieve/dram/checker/_timing.pyx"],
              define_macros=macros, extra_compile_args=compile_args),
    # the checker's CSV log fast path (its only importer is sieve/dram/checker/logfile.py)
    Extension("sieve.dram.checker._csvlog", ["sieve/dram/checker/_csvlog.pyx"],
              define_macros=macros, extra_compile_args=compile_args),
    # the checker's bank-state replay (its only importer is sieve/dram/checker/state.py)
    Extension("sieve.dram.checker._state", ["sieve/dram/checker/_state.pyx"],
              define_macros=macros, extra_compile_args=compile_args),
    # the Sieve scheduler's greedy loop (its only importer is sieve/sched/greedy.py)
    Extension("sieve.sched._greedy", ["sieve/sched/_greedy.pyx"], define_macros=macros,
              extra_compile_args=compile_args),
    # the step schedule's look ahead (its only importer is sieve/system/dag.py)
    Extension("sieve.system._look", ["sieve/system/_look.pyx"], define_macros=macros,
              extra_compile_args=compile_args),
]

# force=True: the directives above are not part of Cython's dependency tracking, so a switch
# between debug and optimised builds must regenerate the C file.
setup(ext_modules=cythonize(exts, compiler_directives=directives, force=True))
