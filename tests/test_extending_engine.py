"""docs/extending-the-engine.md, followed as far as a test can without compiling.

The guide names the policy functions, the registry and the files and symbols a new controller
policy or PIM command touches; these tests read the sources' text to check that every one of
them exists (and that the guide lists every policy function there is), run every registered
lifecycle under both page policies through a small trace whose command log the checker must
accept, and check that every command of the command table has its engine id and timing rows.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sieve.dram import ControllerConfig, simulate_requests
from sieve.dram.checker import check_log
from sieve.dram.commands import BUNDLE_COMMANDS, COMMANDS, PARITY_COMMANDS, PIM_COMMANDS
from sieve.dram.constraints import (
    DRAM_CONSTRAINTS,
    PARITY_CONSTRAINTS,
    PIM_CONSTRAINTS,
    SHARED_BUFFER_CONSTRAINTS,
)
from sieve.dram.engine import LIFECYCLES
from sieve.dram.memtrace import synthetic_trace
from sieve.dram.presets import get_spec

ROOT = Path(__file__).resolve().parents[1]
GUIDE = (ROOT / "docs" / "extending-the-engine.md").read_text()
REQUESTS = (ROOT / "sieve" / "_dram_requests.pxi").read_text()
PXD = (ROOT / "sieve" / "_dram.pxd").read_text()
PYX = (ROOT / "sieve" / "_dram.pyx").read_text()
PIM = (ROOT / "sieve" / "_dram_pim.pxi").read_text()
ENGINE_PY = (ROOT / "sieve" / "dram" / "engine.py").read_text()

POLICY = re.compile(r"^cdef (?:inline )?\w+ (_(?:rs|ref|rp)_\w+)\(", re.M)


def _section(title: str) -> str:
    start = GUIDE.index(f"## {title}")
    end = GUIDE.find("\n## ", start + 1)
    return GUIDE[start:end if end != -1 else None]


def _enum(name: str, text: str) -> int:
    m = re.search(rf"^\s+{name} = (\d+)\s*$", text, re.M)
    assert m, f"{name} not declared"
    return int(m.group(1))


def _marker(lifecycle: str) -> str:
    return "Lc" + lifecycle[0].upper() + lifecycle[1:]


def _run_body() -> str:
    start = REQUESTS.index("    cdef int _run(self):")
    return REQUESTS[start:REQUESTS.index("\ndef ", start)]


# ---- add a controller policy ---------------------------------------------------------------
def test_guide_names_every_policy_function_and_each_exists():
    defined = set(POLICY.findall(REQUESTS))
    named = set(re.findall(r"`(_(?:rs|ref|rp)_\w+)`", _section("Add a controller policy")))
    assert defined, "no policy functions found in _dram_requests.pxi"
    assert named - defined == set(), "the guide names policy functions that do not exist"
    assert defined - named == set(), "policy functions the guide does not list"
    # each is specialised on a policy axis (takes the marker pointer)
    for name in defined:
        sig = re.search(rf"^cdef (?:inline )?\w+ {name}\(([^)]*)\)", REQUESTS, re.M).group(1)
        assert "Lifecycle* lc" in sig, name


def test_markers_fused_types_and_loop_exist():
    for axis, markers in (("Lifecycle", [_marker(n) for n in LIFECYCLES]),
                          ("RowPolicy", ["OpenPage", "ClosedPage"])):
        m = re.search(rf"^ctypedef fused {axis}:\n((?:    \w+\n)+)", REQUESTS, re.M)
        assert m, f"fused type {axis} not declared"
        assert m.group(1).split() == markers
        for mk in markers:
            assert re.search(rf"^cdef struct {mk}:", REQUESTS, re.M), mk
            assert f"`{mk}`" in GUIDE
    assert re.search(r"^cdef int _request_loop\(RequestRun run, Lifecycle\* lc, RowPolicy\* rp\)",
                     REQUESTS, re.M)
    # the loop reads no lifecycle or page flag: the policy functions do
    start = REQUESTS.index("cdef int _request_loop(")
    loop = REQUESTS[start:REQUESTS.index("cdef class RequestRun")]
    for flag in ("run.ramulator2", "run.lifecycle", "run.closed_page", "run.ref_lead"):
        assert flag not in loop, flag


def test_registry_entries_match_the_dispatch():
    m = re.search(r"^LIFECYCLES = \(([^)]*)\)", REQUESTS, re.M)
    assert m and tuple(re.findall(r'"(\w+)"', m.group(1))) == LIFECYCLES
    body = _run_body()
    for code, name in enumerate(LIFECYCLES):
        assert _enum(f"LC_{name.upper()}", REQUESTS) == code
        for page in ("OpenPage", "ClosedPage"):
            assert f"_request_loop(self, <{_marker(name)}*>NULL, <{page}*>NULL)" in body, \
                (name, page)
    for name in ("LIFECYCLES", "RequestRun._run", "ControllerConfig", "__post_init__"):
        assert name in GUIDE
    assert "def __post_init__" in (ROOT / "sieve" / "dram" / "controller.py").read_text()
    cli = re.search(r'"--lifecycle", choices=\(([^)]*)\)', (ROOT / "sieve" / "cli.py").read_text())
    assert cli and tuple(re.findall(r'"(\w+)"', cli.group(1))) == LIFECYCLES


@pytest.mark.parametrize("lifecycle", LIFECYCLES)
@pytest.mark.parametrize("page", ["open", "closed"])
def test_every_registered_lifecycle_runs_and_its_log_checks(lifecycle, page):
    spec = get_spec("hbm3-6400")
    trace = synthetic_trace("rand", 6000, stride_bytes=32, write_fraction=0.3, seed=5)
    cfg = ControllerConfig(queue_size=16, page_policy=page, lifecycle=lifecycle)
    res = simulate_requests(spec, trace, channels=2, request_bytes=32, controller=cfg, log=True)
    assert res.log is not None
    columns = sum(res.command_counts.get(n, 0) for n in ("RD", "WR", "RDA", "WRA"))
    assert 5000 <= columns <= 6000  # one burst per request (ramulator2 forwards a few)
    assert res.refreshes > 0 and len(res.log_type) == len(res.log)
    rep = check_log(res.log, spec)
    assert rep.ok, rep.violations[:3]


# ---- add a PIM command ---------------------------------------------------------------------
def test_guide_files_exist():
    for path in set(re.findall(r"`((?:sieve|tests|docs)/[\w/.-]+\.(?:py|pyx|pxd|pxi|md))`", GUIDE)):
        assert (ROOT / path).is_file(), path


def test_every_command_has_its_engine_id_and_order():
    for i, c in enumerate(COMMANDS):
        assert _enum(f"C_{c.name.upper()}", PXD) == i, c.name
        assert f'"{c.name}"' in ENGINE_PY  # _ENGINE_ORDER
    assert _enum("N_COMMANDS", PXD) == len(COMMANDS)
    assert "_ENGINE_ORDER" in ENGINE_PY and "_ENGINE_ORDER" in GUIDE


def test_every_kind_has_its_engine_case():
    from sieve.dram import commands
    kinds = {getattr(commands, k): k for k in dir(commands) if k.startswith("KIND_")}
    for c in COMMANDS:
        name = kinds[c.kind]
        assert _enum("K_" + name[len("KIND_"):], PXD) == c.kind, name
    for sym in ("cdef inline int _state(self", "cdef void _apply_state(self"):
        assert sym in PYX, sym
    for sym in ("_next(self", "_issue(self", "_issue_step(self"):
        assert f"cdef inline int {sym}" in PIM or f"cdef int {sym}" in PIM, sym


def test_every_command_is_known_to_the_checker_timing_rows():
    rows = DRAM_CONSTRAINTS + PIM_CONSTRAINTS + SHARED_BUFFER_CONSTRAINTS + PARITY_CONSTRAINTS
    named = {n for r in rows for n in r.preceding + r.following}
    for c in COMMANDS:
        assert c.name in named, f"{c.name}: no timing row"
    pim_named = {n for r in PIM_CONSTRAINTS + PARITY_CONSTRAINTS
                 for n in r.preceding + r.following}
    for name in PIM_COMMANDS:
        assert name in pim_named, f"{name}: no row in PIM_CONSTRAINTS / PARITY_CONSTRAINTS"
    assert set(BUNDLE_COMMANDS) <= set(PIM_COMMANDS)
    assert set(PARITY_COMMANDS) <= set(PIM_COMMANDS)
    # every row of PARITY_CONSTRAINTS names a parity command (they apply only to such specs)
    for r in PARITY_CONSTRAINTS:
        assert set(r.preceding + r.following) & set(PARITY_COMMANDS), r
    for sym in ("PIM_COMMANDS", "BUNDLE_COMMANDS", "PARITY_COMMANDS", "PIM_CONSTRAINTS",
                "SHARED_BUFFER_CONSTRAINTS", "PARITY_CONSTRAINTS", "resolved_constraints",
                "N_COMMANDS"):
        assert sym in GUIDE, sym


def test_the_issue_internals_the_guide_names_exist():
    # (the guide says where a command's timing rows go inside the engine)
    for sym in ("`Engine.flat`", "`Engine._fold_slow`", "`Engine._issue`"):
        assert sym in GUIDE, sym
    assert "cdef inline void _fold_slow(self" in PXD and "cdef FlatRow* flat" in PXD
    assert "self.flat_ptr[cmd]" in PYX  # _issue's one loop over the plain rows
