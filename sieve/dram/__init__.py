"""DRAM/PIM memory systems, and the compiled engine ``sieve._dram`` behind one door.

Layer: bottom (imports only :mod:`sieve.errors` and :mod:`sieve.outputs`). Modules:

* :mod:`~sieve.dram.commands` - hierarchy levels and the command set (data);
* :mod:`~sieve.dram.constraints` - declarative timing rows and the latency evaluator;
* :mod:`~sieve.dram.spec` - frozen :class:`DramSpec` (organisation, timing, PIM units) and
  its conversion to the engine's flat arrays;
* :mod:`~sieve.dram.presets` - named presets with sources, spec files, :func:`get_spec`;
* :mod:`~sieve.dram.mapping`, :mod:`~sieve.dram.memtrace` - address mapping and request traces;
* :mod:`~sieve.dram.log` - the command-log record shared by the engine and the checker;
* :mod:`~sieve.dram.pimmode` - the PIM mode protocols (command sequences around kernels);
* :mod:`~sieve.dram.engine` - the door: the only module that imports ``sieve._dram``; the
  engine's status codes and the checks that its command order and log record match;
* :mod:`~sieve.dram.device` - :class:`DramDevice` (one command at a time) and
  :class:`Address`;
* :mod:`~sieve.dram.controller` - front end 1: :func:`simulate_requests` with
  :class:`ControllerConfig`, :class:`DramResult`;
* :mod:`~sieve.dram.pim_device` - front end 2: :class:`GemvKernel`, :class:`PimDevice` (PIM
  programs back to back on one device), :class:`PimResult`, :func:`run_pim`;
* :mod:`~sieve.dram.symmetry` - the channel classes of the PIM device's symmetric fast path;
* :mod:`~sieve.dram.memo` - :class:`ProgramMemo`, the exact memo of PIM programs;
* :mod:`sieve.dram.checker` - the independent timing checker (never imports the engine).

The engine-side names are loaded on first use, so specs, presets and the checker work without
touching the compiled engine; ``import sieve.dram.engine`` (and so of every module above it:
device, controller, pim_device, symmetry) raises :class:`~sieve.errors.NotBuiltError` with the
build command when the engine is missing.
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
    LOG_FIELDS,
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

#: The names that need the compiled engine, by the module that owns each (loaded on first use).
_ENGINE_NAMES = {
    "Address": "device",
    "BARRIER_SCOPES": "pim_device",
    "ControllerConfig": "controller",
    "DEBUG_BUILD": "engine",
    "DramDevice": "device",
    "DramResult": "controller",
    "GemvKernel": "pim_device",
    "IDLE_POLICIES": "pim_device",
    "PimDevice": "pim_device",
    "PimResult": "pim_device",
    "ProgramMemo": "memo",
    "STATUS_MESSAGES": "engine",
    "run_pim": "pim_device",
    "simulate_requests": "controller",
}


def __getattr__(name: str):
    if name == "LOG_DTYPE":  # a numpy dtype: built on first use (sieve.dram.log)
        from sieve.dram.log import log_dtype

        return log_dtype()
    if name in _ENGINE_NAMES:
        from sieve.dram import controller, device, engine, memo, pim_device

        rooms = {"controller": controller, "device": device, "engine": engine, "memo": memo,
                 "pim_device": pim_device}
        return getattr(rooms[_ENGINE_NAMES[name]], name)
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
    "LOG_FIELDS",
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
