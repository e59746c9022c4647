"""The engine against the independent checker (sieve.dram.checker, written apart from the engine).

* Every log the engine produces - random request traces (hypothesis), long traces of more
  than 10^6 commands, PIM programs - has zero violations.
* The engine's earliest tick is tight: a random command driver issues each command at the
  engine's earliest tick, and moving any timing-bound command one tick (one CK for column
  commands) earlier makes the checker report a violation.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sieve import dram, pim
from sieve.dram import Address, DramDevice, checker
from sieve.dram.commands import COMMANDS
from sieve.dram.mapping import AddressMapper
from sieve.dram.memtrace import save_loadstore_trace, synthetic_trace
from sieve.dram.pimmode import reserved_rows
from sieve.dram.presets import get_spec

ALL = ["hbm3-6400", "hbm2-2000", "hbm3e-8000", "b200-hbm3e-pim", "samsung-hbm2-pim",
       "attacc-hbm3-pim", "duplex-logic-pim"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(ALL), pattern=st.sampled_from(["seq", "rand"]),
       writes=st.sampled_from([0.0, 0.1, 0.5, 1.0]), channels=st.sampled_from([1, 2, 4]),
       request_bytes=st.sampled_from([32, 64, 256]), queue=st.sampled_from([4, 32, 64]),
       page=st.sampled_from(["open", "closed"]), refresh=st.sampled_from(["allbank", "perbank"]),
       spaced=st.booleans(), seed=st.integers(0, 2**31 - 1))
def test_random_request_traces_have_zero_violations(name, pattern, writes, channels,
                                                    request_bytes, queue, page, refresh,
                                                    spaced, seed):
    spec = get_spec(name).override(refresh=refresh)
    tr = synthetic_trace(pattern, 4000, stride_bytes=request_bytes, write_fraction=writes,
                         seed=seed)
    if spaced:  # bursty arrivals with idle gaps (exercises refresh while idle)
        rng = np.random.default_rng(seed)
        tr = type(tr)(tr.addr, tr.is_write, np.cumsum(rng.integers(0, 40, len(tr))))
    reserved = reserved_rows(spec)
    if reserved:  # host traffic must stay out of the mode protocol's rows (refused there)
        rows = AddressMapper(spec, channels=channels, request_bytes=request_bytes).decode(
            tr.addr).ro
        keep = ~np.isin(rows, reserved)
        tr = type(tr)(tr.addr[keep], tr.is_write[keep],
                      None if tr.arrive_ck is None else tr.arrive_ck[keep])
    r = dram.simulate_requests(spec, tr, channels=channels, request_bytes=request_bytes,
                               queue_size=queue, page_policy=page, log=True)
    rep = checker.check_log(r.log, spec)
    assert rep.ok, rep.summary()


def test_host_traffic_to_the_mode_protocol_rows_is_refused(tmp_path):
    """On samsung-hbm2-pim an access to the ABMR/SBMR/register rows switches the device's mode
    (PIMSimulator); the request front end does not model that, so it refuses such requests in
    one line instead of simulating them as plain memory (the checker would see a GRF write in
    single-bank mode). Without the protocol the same trace runs."""
    from sieve.errors import ConfigError

    spec = get_spec("samsung-hbm2-pim")
    m = AddressMapper(spec, channels=1, request_bytes=32)
    addr = m.encode(pc=0, bg=1, ba=1, ro=0x3FFF, co=8)
    tr = type(synthetic_trace("seq", 1))(np.array([0, addr]), np.array([False, True]))
    with pytest.raises(ConfigError, match=r"request 1 \(address 0x[0-9a-f]+\) maps to row "
                                          r"0x3fff, which samsung-hbm2-pim's PIM mode"):
        dram.simulate_requests(spec, tr, channels=1, request_bytes=32)
    # the same from a trace file (the front end's numpy-free reading path)
    path = save_loadstore_trace(tr, tmp_path / "reserved.trace")
    with pytest.raises(ConfigError, match=r"request 1 \(address 0x[0-9a-f]+\) maps to row "
                                          r"0x3fff, which samsung-hbm2-pim's PIM mode"):
        dram.simulate_requests(spec, path, channels=1, request_bytes=32)
    plain = spec.override({"pim.modes": None, "pim.park": False, "pim.crf_bursts": 0})
    r = dram.simulate_requests(plain, tr, channels=1, request_bytes=32, log=True)
    assert r.requests == 2 and checker.check_log(r.log, plain).ok


def test_a_million_command_trace_has_zero_violations():
    tr = synthetic_trace("rand", 300_000, write_fraction=0.3, seed=11)
    r = dram.simulate_requests("hbm3-6400", tr, channels=2, log=True)
    assert len(r.log) > 1_000_000
    rep = checker.check_log(r.log, "hbm3-6400")
    assert rep.ok, rep.summary()
    assert rep.n_commands == len(r.log)


@pytest.mark.parametrize("name", ["duplex-logic-pim", "b200-logic-pim"])
def test_bundled_attention_has_zero_violations(name):
    """Decode attention on PUs that read bank bundles (ACTSB / MACSB / PRESB, a bundle's row
    switched while the other streams, refresh and the closed idle policy in between): the
    engine's log of a GQA-8 layer passes every rule of the checker."""
    spec = get_spec(name)
    dev = dram.PimDevice(spec, log=True, idle="closed")
    r = pim.run_attention(spec, "qwen3-30b-a3b", 0, [3000, 4096, 700, 5000] * 4, device=dev)
    counts = r.pim.command_counts
    assert counts["MACSB"] > 10 ** 5 and counts["ACTSB"] > 1000 and counts.get("MACAB", 0) == 0
    rep = checker.check_log(r.pim.log, spec)
    assert rep.ok, rep.summary()


def test_a_million_command_pim_program_has_zero_violations():
    spec = get_spec("samsung-hbm2-pim")
    k = pim.gemv_kernel(spec, 4096, 4096, 8)
    r = dram.run_pim(spec, [k, pim.gemv_kernel(spec, 1024, 4096, 2, gap_ns=200)],
                     symmetric=False, log=True)
    assert len(r.log) > 1_000_000
    rep = checker.check_log(r.log, spec)
    assert rep.ok, rep.summary()


# ---------------------------------------------------------------------------------------------
# Tightness: a random command driver
# ---------------------------------------------------------------------------------------------


def _drive(spec_name: str, n: int, seed: int):
    """Issue n random state-legal commands, each at the engine's earliest legal tick (or a bit
    later); returns the device, the records of (tick, raw earliest, order bound, column?)."""
    spec = get_spec(spec_name)
    o = spec.org
    rng = np.random.default_rng(seed)
    dev = DramDevice(spec, channels=2, log=True)
    tpc = spec.timing.ticks_per_ck
    now = [0, 0]
    recs = []
    pim_on = spec.pim is not None
    for _ in range(n):
        ch = int(rng.integers(2))
        pc = int(rng.integers(o.pseudochannels))
        a = Address(ch, pc, int(rng.integers(o.sids)), int(rng.integers(o.bankgroups)),
                    int(rng.integers(o.banks)), int(rng.integers(4)), int(rng.integers(o.columns)))
        flat = ((ch * o.pseudochannels + pc) * o.sids + a.sid) * o.bankgroups * o.banks \
            + a.bg * o.banks + a.bank
        openr = dev.open_rows(0)[flat]
        roll = rng.random()
        if pim_on and roll < 0.25 and spec.pim.bundles > 1:
            # bank bundles: the banks of the drawn SID
            pim_open = dev.open_rows(1 if spec.pim.dual_row_buffer else 0)
            bps = o.bankgroups * o.banks
            first = ((ch * o.pseudochannels + pc) * o.sids + a.sid) * bps
            rows = pim_open[first:first + bps]
            if np.all(rows == rows[0]) and rows[0] >= 0:
                cmd = rng.choice(["MACSB", "MACSB", "MACSB", "GWRITE", "RDRES", "PRESB"])
                a = a._replace(row=int(rows[0]))
            elif np.all(rows == -1) and (spec.pim.dual_row_buffer or
                                         np.all(dev.open_rows(0)[first:first + bps] == -1)):
                cmd = "ACTSB"
            else:
                cmd = "PRESB"
        elif pim_on and roll < 0.25 and spec.pim.bank_parity:
            # bank-parity rows: the even or odd banks of the PC, through bank 0 / 1 of BG 0
            par = int(rng.integers(2))
            first = (ch * o.pseudochannels + pc) * o.banks_per_pc + par
            rows = dev.open_rows(0)[first:first + o.banks_per_pc:2]
            a = Address(ch, pc, 0, 0, par, a.row, a.col)
            if np.all(rows == rows[0]) and rows[0] >= 0:
                cmd = rng.choice(["MACPB", "MACPB", "MACPB", "RDRES", "PREPB"])
                a = a._replace(row=int(rows[0]))
            elif np.all(rows == -1):
                cmd = "ACTPB"
            else:
                cmd = "PREPB"
        elif pim_on and roll < 0.25:
            pim_open = dev.open_rows(1 if spec.pim.dual_row_buffer else 0)
            first = (ch * o.pseudochannels + pc) * o.banks_per_pc
            rows = pim_open[first:first + o.banks_per_pc]
            if np.all(rows == rows[0]) and rows[0] >= 0:
                cmd = rng.choice(["MACAB", "MACAB", "GWRITE", "RDRES", "PREAB"])
                a = a._replace(row=int(rows[0]))
            elif np.all(rows == -1) and (spec.pim.dual_row_buffer or
                                         np.all(dev.open_rows(0)[first:first + o.banks_per_pc]
                                                == -1)):
                cmd = "ACTAB"
            else:
                cmd = "PREAB"
        elif roll < 0.03:
            cmd = "PREA"
        elif openr == -1:
            cmd = "ACT" if roll < 0.9 else ("REFpb" if not pim_on or spec.pim.dual_row_buffer
                                            else "ACT")
            if cmd == "REFpb" and pim_on and np.any(dev.open_rows(1)[flat] != -1):
                cmd = "ACT"
        else:
            a = a._replace(row=int(openr))
            cmd = rng.choice(["RD", "RD", "WR", "RDA", "WRA", "PRE"])
        if not dev.state_ok(cmd, a):
            continue
        raw = dev.earliest(cmd, a, aligned=False)
        t = max(dev.earliest(cmd, a), now[ch])
        if COMMANDS_BY_NAME[cmd].bus == 1:
            t = -(-t // tpc) * tpc  # column commands on a rising edge
        if rng.random() < 0.2:
            t += int(rng.integers(1, 6)) * (tpc if COMMANDS_BY_NAME[cmd].bus == 1 else 1)
        dev.issue(cmd, a, t)
        recs.append((t, raw, now[ch], COMMANDS_BY_NAME[cmd].bus == 1))
        now[ch] = t
    return spec, dev, recs


COMMANDS_BY_NAME = {c.name: c for c in COMMANDS}


@pytest.mark.parametrize("name,seed", [("hbm3-6400", 1), ("hbm2-2000", 2), ("hbm3e-8000", 3),
                                       ("b200-hbm3e-pim", 4), ("samsung-hbm2-pim", 5),
                                       ("attacc-hbm3-pim", 6), ("duplex-logic-pim", 7),
                                       ("b200-logic-pim", 8)])
def test_engine_earliest_tick_is_tight_against_the_checker(name, seed):
    spec, dev, recs = _drive(name, 4000, seed)
    log = dev.log()
    assert len(log) == len(recs) > 1000
    # probed commands, not PIM kernels: no mode protocol (rule 6 is tested in test_pim_modes)
    assert checker.check_log(log, spec, check_refresh=False, check_modes=False).ok
    tpc = spec.timing.ticks_per_ck
    rng = np.random.default_rng(seed)
    # commands held back by timing alone (not by issue order or by the rising-edge rule)
    bound = [i for i, (t, raw, prev, col) in enumerate(recs)
             if t == raw and raw > prev and (not col or raw % tpc == 0)]
    assert len(bound) > 200
    for i in rng.choice(bound, size=60, replace=False):
        t, raw, prev, col = recs[i]
        bad = log.copy()
        bad["tick"][i] = t - (tpc if col else 1)
        rep = checker.check_log(bad, spec, check_refresh=False)
        families = set(rep.by_family())
        assert families - {"alignment", "order"}, (i, COMMANDS[log["cmd"][i]].name, families)
