"""DRAM/PIM memory systems and the only door into the compiled engine ``sieve._dram``.

Layer: bottom (imports only :mod:`sieve.errors` and :mod:`sieve.outputs`). Modules:

* :mod:`~sieve.dram.commands` - hierarchy levels and the command set (data);
* :mod:`~sieve.dram.constraints` - declarative timing rows and the latency evaluator;
* :mod:`~sieve.dram.spec` - frozen :class:`DramSpec` (organisation, timing, PIM units) and
  its conversion to the engine's flat arrays;
* :mod:`~sieve.dram.presets` - named presets with sources, spec files, :func:`get_spec`;
* :mod:`~sieve.dram.mapping`, :mod:`~sieve.dram.memtrace` - address mapping and request traces;
* :mod:`~sieve.dram.log` - the command-log record shared by the engine and the checker;
* :mod:`~sieve.dram.device` - the door into ``sieve._dram``: :class:`DramDevice`,
  :func:`simulate_requests` (with :class:`ControllerConfig`), :class:`PimDevice` (PIM
  programs back to back on one device, :class:`ProgramMemo`) and :func:`run_pim`;
* :mod:`sieve.dram.checker` - the independent timing checker (never imports the engine).

The device names are loaded on first use, so specs, presets and the checker work without
touching the compiled engine; ``import sieve.dram.device`` raises
:class:`~sieve.errors.NotBuiltError` with the build command when the engine is missing.
"""

from sieve.dram.commands import (  # noqa: F401
    BUFFER_NORMAL,
    BUFFER_PIM,
    BUS_COL,
    BUS_ROW,
    COMMAND_INDEX,
    COMMANDS,
    LEVEL_INDEX,
    LEVELS,
    PIM_COMMANDS,
    CommandDef,
)
from sieve.dram.constraints import (  # noqa: F401
    DRAM_CONSTRAINTS,
    PIM_CONSTRAINTS,
    SHARED_BUFFER_CONSTRAINTS,
    ResolvedConstraint,
    TimingConstraint,
    evaluate_latency,
)
from sieve.dram.log import (  # noqa: F401
    LOG_DTYPE,
)
from sieve.dram.mapping import (  # noqa: F401
    MAPPINGS,
    AddressMapper,
    DecodedAddresses,
)
from sieve.dram.memtrace import (  # noqa: F401
    RequestTrace,
    load_loadstore_trace,
    save_loadstore_trace,
    synthetic_trace,
)
from sieve.dram.presets import (  # noqa: F401
    DEFAULT_SPEC,
    PRESETS,
    get_spec,
    load_spec,
)
from sieve.dram.spec import (  # noqa: F401
    DramOrg,
    DramSpec,
    DramTiming,
    PimConfig,
    ns_to_ck,
)

_DEVICE_NAMES = frozenset({
    "Address",
    "BARRIER_SCOPES",
    "ControllerConfig",
    "DEBUG_BUILD",
    "DramDevice",
    "DramResult",
    "GemvKernel",
    "IDLE_POLICIES",
    "PimDevice",
    "PimResult",
    "ProgramMemo",
    "STATUS_MESSAGES",
    "run_pim",
    "simulate_requests",
})


def __getattr__(name: str):
    if name in _DEVICE_NAMES:
        from sieve.dram import device

        return getattr(device, name)
    raise AttributeError(f"module 'sieve.dram' has no attribute {name!r}")


__all__ = [
    "Address",
    "AddressMapper",
    "BUFFER_NORMAL",
    "BUFFER_PIM",
    "BUS_COL",
    "BUS_ROW",
    "BARRIER_SCOPES",
    "COMMANDS",
    "COMMAND_INDEX",
    "CommandDef",
    "ControllerConfig",
    "DEBUG_BUILD",
    "DEFAULT_SPEC",
    "DRAM_CONSTRAINTS",
    "DecodedAddresses",
    "DramDevice",
    "DramOrg",
    "DramResult",
    "DramSpec",
    "DramTiming",
    "GemvKernel",
    "IDLE_POLICIES",
    "LEVELS",
    "LEVEL_INDEX",
    "LOG_DTYPE",
    "MAPPINGS",
    "PIM_COMMANDS",
    "PIM_CONSTRAINTS",
    "PRESETS",
    "PimConfig",
    "PimDevice",
    "PimResult",
    "ProgramMemo",
    "RequestTrace",
    "ResolvedConstraint",
    "SHARED_BUFFER_CONSTRAINTS",
    "STATUS_MESSAGES",
    "TimingConstraint",
    "evaluate_latency",
    "get_spec",
    "load_loadstore_trace",
    "load_spec",
    "ns_to_ck",
    "run_pim",
    "save_loadstore_trace",
    "simulate_requests",
    "synthetic_trace",
]
