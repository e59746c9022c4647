"""The independent timing checker for DRAM/PIM command logs (docs/checker.md).

Pure Python/numpy, written apart from the engine: it never imports :mod:`sieve.dram.engine`
(or a module that uses it) or ``sieve._dram``. :mod:`~sieve.dram.checker.api` owns validation
and the report; the rules live in :mod:`~sieve.dram.checker.timing`,
:mod:`~sieve.dram.checker.state` and :mod:`~sieve.dram.checker.rules`;
:mod:`~sieve.dram.checker.ramulator` reads Ramulator 2.0 command traces and
:mod:`~sieve.dram.checker.logfile` every log file format (sieve's ``.npy`` and CSV, Ramulator
2.1's CSV trace, Ramulator 2.0's trace).
"""

from sieve.dram.checker.api import (  # noqa: F401
    LOG_DTYPE,
    CheckReport,
    Violation,
    check_log,
    check_log_file,
    constraint_family,
    constraint_text,
    make_log,
    read_ramulator_cmd_trace,
)
from sieve.dram.checker.logfile import (  # noqa: F401
    LOG_FORMATS,
    iter_command_log,
    read_command_log,
    read_csv_log,
)

__all__ = [
    "CheckReport",
    "LOG_DTYPE",
    "Violation",
    "check_log",
    "check_log_file",
    "constraint_family",
    "constraint_text",
    "make_log",
    "LOG_FORMATS",
    "iter_command_log",
    "read_command_log",
    "read_csv_log",
    "read_ramulator_cmd_trace",
]
