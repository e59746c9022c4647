"""The ramulator2 request lifecycle, the MOP4CLXOR mapping and command logs against Ramulator 2.1.

Golden data (tests/data/ramulator21/, produced by Ramulator 2.1 itself; docs/validation.md
says how): two LoadStore traces with the command traces Ramulator's CmdTraceRecorder wrote for
them, and the fields its MOP4CLXOR mapper gave 1,088 addresses. The ramulator2 lifecycle must
reproduce those command streams command for command; the sieve lifecycle must not (it is a
different controller), which shows that the comparison can fail.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import numpy as np
import pytest

from sieve import dram
from sieve.dram import constraints as dram_constraints
from sieve.dram import spec as dram_spec
from sieve.dram.checker import check_log, read_command_log, read_csv_log
from sieve.dram.commands import COMMAND_INDEX, COMMANDS
from sieve.dram.log import RAMULATOR_NAMES, log_to_csv, log_to_npy
from sieve.dram.mapping import AddressMapper
from sieve.dram.memtrace import RequestTrace
from sieve.dram.presets import get_spec
from sieve.errors import ConfigError, TraceFormatError

DATA = Path(__file__).parent / "data" / "ramulator21"
R2 = dram.ControllerConfig(lifecycle="ramulator2")


def _unzip(name: str, tmp_path: Path) -> Path:
    out = tmp_path / name.removesuffix(".gz")
    out.write_bytes(gzip.decompress((DATA / name).read_bytes()))
    return out


def _key(name, pc, sid, bg, ba, row, col) -> tuple:
    """The fields both logs record for a command (Ramulator logs the whole request address
    with every command, sieve the fields the command uses)."""
    if name in ("PREab", "REFab"):
        return (name, pc)
    if name == "PREpb":
        return (name, pc, sid, bg, ba)
    if name == "ACT":
        return (name, pc, sid, bg, ba, row)
    return (name, pc, sid, bg, ba, row, col)


def _ramulator_stream(path: Path) -> list[tuple]:
    out = []
    for line in path.read_text().splitlines()[1:]:
        f = line.split(",")
        out.append((int(f[0]) - 1, *_key(f[1], *(int(x) for x in f[3:9]))))
    return out


def _sieve_stream(log: np.ndarray) -> list[tuple]:
    names = [RAMULATOR_NAMES.get(c.name, c.name) for c in COMMANDS]
    return [(int(r["tick"]), *_key(names[r["cmd"]], *(int(r[f]) for f in (
        "pc", "sid", "bg", "bank", "row", "col")))) for r in log]


def _without_wr_nccdr(spec):
    """The spec without sieve's WR->WR nCCDR row between SIDs (Ramulator 2.1's HBM3 table has
    none; docs/validation.md): built while the row is left out of the table."""
    saved = dram_spec.DRAM_CONSTRAINTS
    rows = tuple(r for r in saved if not (r.level == "sid" and r.sibling and "WR" in r.preceding))
    assert len(rows) == len(saved) - 1 and saved is dram_constraints.DRAM_CONSTRAINTS
    dram_spec.DRAM_CONSTRAINTS = rows
    try:
        sp = spec.override(name="hbm3-6400-no-wr-nccdr")
        sp.to_arrays()  # (kept by the spec object)
    finally:
        dram_spec.DRAM_CONSTRAINTS = saved
    return sp


# ---- command streams against Ramulator 2.1 ------------------------------------------------------

@pytest.mark.parametrize("trace,cmds,mapping,patch", [
    # 3,600 reads, sequential runs and random jumps over 1 GiB, 2 refreshes
    ("reads.trace.gz", "reads_RoBaRaCoCh.csv.ch0.gz", "RoBaRaCoCh", False),
    # 3,000 requests, 30 % writes over 300 lines: hits, conflicts, write drains, 110 reads
    # forwarded from queued writes and 57 writes coalesced, 2 refreshes
    ("mixed.trace.gz", "mixed_MOP4CLXOR.csv.ch0.gz", "MOP4CLXOR", True),
])
def test_ramulator2_lifecycle_reproduces_ramulator_commands(tmp_path, trace, cmds, mapping,
                                                            patch):
    tr = _unzip(trace, tmp_path)
    golden = _ramulator_stream(_unzip(cmds, tmp_path))
    spec = get_spec("hbm3-6400")
    if patch:
        spec = _without_wr_nccdr(spec)
    r = dram.simulate_requests(spec, tr, channels=1, mapping=mapping, request_bytes=32,
                               controller=R2, log=True)
    ours = _sieve_stream(r.log)
    assert len(ours) > len(golden)  # Ramulator stops at the last acceptance, sieve drains
    assert ours[:len(golden)] == golden
    # Ramulator's cycle count is its clock when the front end handed over the last request
    last_clock = golden[-1][0] + 1
    assert r.accept_cycles * 2 <= last_clock + 2 and r.accept_cycles * 2 >= golden[-1][0] - 64
    # the default lifecycle is a different controller: it diverges within a few commands
    s = dram.simulate_requests(spec, tr, channels=1, mapping=mapping, request_bytes=32,
                               log=True)
    first = next(i for i, (a, b) in enumerate(zip(golden, _sieve_stream(s.log))) if a != b)
    assert first < 10


def test_sieve_wr_nccdr_row_is_the_only_difference_on_writes(tmp_path):
    tr = _unzip("mixed.trace.gz", tmp_path)
    golden = _ramulator_stream(_unzip("mixed_MOP4CLXOR.csv.ch0.gz", tmp_path))
    r = dram.simulate_requests("hbm3-6400", tr, channels=1, mapping="MOP4CLXOR",
                               request_bytes=32, controller=R2, log=True)
    ours = _sieve_stream(r.log)
    assert ours[:len(golden)] != golden
    # and the checker finds exactly that row violated in Ramulator's raw trace
    raw = read_command_log(_unzip("mixed_MOP4CLXOR.csv.ch0.gz", tmp_path), get_spec("hbm3-6400"))
    rep = check_log(raw, "hbm3-6400")
    assert rep.by_family() == {"tCCD": rep.n_violations} and rep.n_violations > 0
    assert {v.constraint for v in rep.violations} == {
        "sid WR->WR nCCDR (6 ticks, other sid of the same pseudochannel)"}


def test_raw_ramulator_trace_passes_the_checker_and_reads_like_a_sieve_log(tmp_path):
    spec = get_spec("hbm3-6400")
    raw = read_command_log(_unzip("reads_RoBaRaCoCh.csv.ch0.gz", tmp_path), spec)
    rep = check_log(raw, spec)
    assert rep.ok and rep.n_commands == len(raw) > 7000
    # PREpb/PREab became PRE/PREA, the 1-based clock tick = clock - 1, refreshes kept
    names = {COMMANDS[c].name for c in np.unique(raw["cmd"])}
    assert {"ACT", "PRE", "RD", "REFab", "PREA"} <= names
    assert raw["tick"][0] == 0 and np.all(np.diff(raw["tick"]) >= 0)
    # row commands carry no column, PC commands no bank fields (normalised as sieve logs)
    assert np.all(raw["col"][raw["cmd"] == COMMAND_INDEX["ACT"]] == -1)
    assert np.all(raw["bank"][raw["cmd"] == COMMAND_INDEX["REFab"]] == -1)


# ---- the lifecycle's rules, one at a time -------------------------------------------------------

def _two_banks(spec):
    m = AddressMapper(spec, "RoBaRaCoCh", channels=1, request_bytes=32)
    return RequestTrace([m.encode(bg=0, ro=1), m.encode(pc=1, bg=1, ro=2)], [False, False])


def test_active_buffer_frees_the_queue_slot_at_act():
    spec = get_spec("hbm3-6400")
    tr = _two_banks(spec)
    act = spec.bus_ticks("ACT")  # 3 ticks: the row bus after an ACT
    ram = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                                 controller=dram.ControllerConfig(1, lifecycle="ramulator2"),
                                 log=True)
    acts = ram.log["tick"][ram.log["cmd"] == COMMAND_INDEX["ACT"]]
    # request 2 enters the freed slot one tick after ACT 1 (Ramulator's front end ticks before
    # its controller), then its ACT waits for the row bus and a rising edge
    assert acts.tolist() == [0, -(-act // 2) * 2]
    sv = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                                controller=dram.ControllerConfig(1), log=True)
    rd1 = sv.log["tick"][sv.log["cmd"] == COMMAND_INDEX["RD"]][0]
    acts = sv.log["tick"][sv.log["cmd"] == COMMAND_INDEX["ACT"]]
    assert acts[1] >= rd1  # the sieve lifecycle keeps the slot until the request's last burst


def test_front_end_injects_one_request_per_tick():
    spec = get_spec("hbm3-6400")
    tr = dram.synthetic_trace("rand", 20, stride_bytes=32, seed=3)
    one = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                                 controller=R2)
    assert one.accept_cycles == 19 // 2  # 20 requests, one per tick, queue never full
    many = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                                  controller=dram.ControllerConfig(lifecycle="ramulator2",
                                                                   inject_per_tick=4))
    assert many.accept_cycles == (1 + 19 // 4) // 2  # one at tick 0, then four per tick
    sv = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32)
    assert sv.accept_cycles == 0  # all at once
    limited = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh",
                                     request_bytes=32,
                                     controller=dram.ControllerConfig(inject_per_tick=1))
    assert limited.accept_cycles == 19 // 2  # the limit works in the sieve lifecycle too


def test_act_and_refresh_on_rising_edges_pre_on_both():
    spec = get_spec("hbm3-6400")
    tr = dram.synthetic_trace("rand", 20000, stride_bytes=32, seed=5)
    r = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                               controller=R2, log=True)
    t, c = r.log["tick"], r.log["cmd"]
    for name in ("ACT", "REFab", "RD"):
        assert np.all(t[c == COMMAND_INDEX[name]] % 2 == 0), name
    assert np.any(t[c == COMMAND_INDEX["PRE"]] % 2 == 1)
    s = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                               log=True)
    assert np.any(s.log["tick"][s.log["cmd"] == COMMAND_INDEX["ACT"]] % 2 == 1)
    assert check_log(r.log, spec).ok


def test_forwarding_and_coalescing():
    spec = get_spec("hbm3-6400")
    m = AddressMapper(spec, "RoBaRaCoCh", channels=1, request_bytes=32)
    a = m.encode(ro=3, co=5)
    # reads to eight other banks keep the controller in read mode, so the write to `a` stays
    # queued: the read of `a` is then served from it (one tick) and the second write to `a`
    # is absorbed into it
    others = [m.encode(pc=i % 2, bg=1 + i % 3, ba=i // 2 % 4, ro=7) for i in range(8)]
    tr = RequestTrace(others + [a, a, a], [False] * 8 + [True, False, True])
    r = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32,
                               controller=R2, log=True)
    lat_a = r.latency_ns[8]  # the ninth read
    assert lat_a == pytest.approx(spec.tick_ns)
    assert np.all(r.latency_ns[:8] > (spec.timing.nCL + spec.timing.nBL) * spec.tCK_ns)
    assert r.command_counts["WR"] == 1 and r.command_counts["RD"] == 8
    assert r.row_hits + r.row_misses + r.row_conflicts == 9  # the absorbed two have no class
    sv = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32)
    assert sv.command_counts["WR"] == 2 and sv.command_counts["RD"] == 9


def test_ramulator2_write_thresholds_are_strict():
    assert dram.ControllerConfig(32, lifecycle="ramulator2").write_thresholds() == (26, 6)
    assert dram.ControllerConfig(32).write_thresholds() == (25, 6)
    # 0.8 x 10 = 8 exactly: Ramulator enters above 8, leaves below 2
    assert dram.ControllerConfig(10, lifecycle="ramulator2").write_thresholds() == (9, 1)
    with pytest.raises(ConfigError, match="lifecycle 'ramulator3' unknown"):
        dram.ControllerConfig(lifecycle="ramulator3")
    for bad in (-1, True, 1.5, "1"):
        with pytest.raises(ConfigError, match="inject_per_tick"):
            dram.ControllerConfig(inject_per_tick=bad)
    assert dram.ControllerConfig(lifecycle="ramulator2").inject_per_tick == 1
    assert dram.ControllerConfig().inject_per_tick == 0


def test_ramulator2_lifecycle_logs_pass_the_checker_on_every_preset():
    for name in ("hbm3-6400", "hbm2-2000", "b200-hbm3e-pim"):
        tr = dram.synthetic_trace("rand", 6000, write_fraction=0.3, seed=4)
        for page in ("open", "closed"):
            r = dram.simulate_requests(name, tr, channels=2, controller=dram.ControllerConfig(
                lifecycle="ramulator2", page_policy=page, queue_size=8), log=True)
            assert check_log(r.log, name).ok, (name, page)
            assert r.requests == 6000 and r.pc_bursts.sum() >= r.requests * 2 - 2 * 6000


# ---- MOP4CLXOR ----------------------------------------------------------------------------------

def test_mop4clxor_decodes_as_ramulator_does():
    doc = json.loads((DATA / "mop4clxor_decode.json").read_text())
    spec = get_spec("hbm3-6400")
    addrs = np.array(doc["addresses"], dtype=np.int64)
    golden = {tuple(f) for f in doc["rd_fields"]}

    def fields(mapping):
        d = AddressMapper(spec, mapping, channels=1, request_bytes=32).decode(addrs)
        return {t for t in zip(d.pc.tolist(), d.sid.tolist(), d.bg.tolist(), d.ba.tolist(),
                               d.ro.tolist(), d.co.tolist())}

    ours = fields("MOP4CLXOR")
    assert len(ours) == len(addrs) == 1088 and ours <= golden
    assert len(fields("RoBaRaCoCh") & golden) < 50  # another mapping would not pass


def test_mop4clxor_by_hand():
    spec = get_spec("hbm3-6400")  # 2 PC, 2 SID, 4 BG, 4 banks, 8192 rows, 32 columns
    m = AddressMapper(spec, "mop4clxor", channels=2, request_bytes=32)
    assert m.name == "MOP4CLXOR"
    # bits above the 32 B offset, LSB first: ch(1) co(2) pc(1) sid(1) bg(2) ba(2) co(3) ro(13)
    a = (1 << 5) * 0b1           # ch = 1
    a |= (1 << 6) * 0b11         # co low = 3
    a |= (1 << 8) * 0b1          # pc raw 1
    a |= (1 << 9) * 0b0          # sid raw 0
    a |= (1 << 10) * 0b10        # bg raw 2
    a |= (1 << 12) * 0b01        # ba raw 1
    a |= (1 << 14) * 0b101       # co high = 5 -> co = 5 * 4 + 3 = 23 = 0b10111
    a |= (1 << 17) * 77          # row raw 77
    d = m.decode(np.array([a]))
    co = 23
    assert d.ch[0] == 1 and d.co[0] == co
    assert d.pc[0] == 1 ^ (co & 1)             # co bit 0
    assert d.sid[0] == 0 ^ ((co >> 1) & 1)     # co bit 1
    assert d.bg[0] == 2 ^ ((co >> 2) & 3)      # co bits 2-3
    assert d.ba[0] == 1 ^ ((co >> 4) & 3)      # co bits 4-5
    assert d.ro[0] == 77 ^ (co >> 6)           # co bits 6.. (none set)
    assert m.encode(ch=1, pc=int(d.pc[0]), sid=int(d.sid[0]), bg=int(d.bg[0]), ba=int(d.ba[0]),
                    ro=int(d.ro[0]), co=co) == a


def test_mop4clxor_round_trip_and_hbm2(rng):
    for name in ("hbm3-6400", "hbm2-2000"):  # hbm2: no SID bits, so sid takes no column bit
        spec = get_spec(name)
        m = AddressMapper(spec, "MOP4CLXOR", channels=4, request_bytes=32)
        addrs = rng.integers(0, 1 << m.address_bits, 500) & ~31
        d = m.decode(addrs)
        back = [m.encode(ch=int(d.ch[i]), pc=int(d.pc[i]), sid=int(d.sid[i]), bg=int(d.bg[i]),
                         ba=int(d.ba[i]), ro=int(d.ro[i]), co=int(d.co[i])) for i in range(500)]
        assert back == addrs.tolist()
        assert len(set(zip(d.ch, d.pc, d.sid, d.bg, d.ba, d.ro, d.co))) == len(set(addrs))
    with pytest.raises(ConfigError, match="MOP4CLXOR: requests must be one 32-byte burst"):
        AddressMapper(get_spec("hbm3-6400"), "MOP4CLXOR", channels=1, request_bytes=64)


def test_mop4clxor_spreads_a_stream_over_pcs_and_sids():
    spec = get_spec("hbm3-6400")
    tr = dram.synthetic_trace("seq", 40000, stride_bytes=32)
    mop = dram.simulate_requests(spec, tr, channels=1, mapping="MOP4CLXOR", request_bytes=32)
    rbr = dram.simulate_requests(spec, tr, channels=1, mapping="RoBaRaCoCh", request_bytes=32)
    assert mop.cycles < 0.7 * rbr.cycles  # (Ramulator 2.1: 23,305 vs 45,138 CK per 20,000)


# ---- command-log files --------------------------------------------------------------------------

def test_log_csv_and_npy_round_trip(tmp_path):
    spec = get_spec("hbm3-6400")
    tr = dram.synthetic_trace("rand", 4000, write_fraction=0.3, seed=9)
    r = dram.simulate_requests(spec, tr, channels=2, controller=R2, log=True)
    text = log_to_csv(r.log, r.log_type)
    lines = text.splitlines()
    assert lines[0] == ("clock,command,Channel,PseudoChannel,Sid,BankGroup,Bank,Row,Column,"
                        "type,source")
    first = r.log[0]
    assert lines[1].split(",")[:2] == [str(first["tick"] + 1), "ACT"]
    assert "PREpb" in text and ",PRE," not in text
    types = [int(x.split(",")[9]) for x in lines[1:]]
    assert types == r.log_type.tolist() and set(types) == {-1, 0, 1}
    (tmp_path / "l.csv").write_text(text)
    back = read_csv_log(tmp_path / "l.csv")
    want = r.log.copy()
    from sieve.dram.checker.logfile import normalise

    assert np.array_equal(back, normalise(want))
    (tmp_path / "l.npy").write_bytes(log_to_npy(r.log))
    assert np.array_equal(read_command_log(tmp_path / "l.npy", spec), r.log)
    assert check_log(back, spec).ok


@pytest.mark.parametrize("text,msg", [
    ("", "empty file"),
    ("clock,command,Channel\n1,ACT,0\n", "missing column(s) pseudochannel"),
    ("clock,command,Channel,PseudoChannel,Sid,BankGroup,Bank,Row,Column\n"
     "1,ACT,0,0,0,0,0,1\n", "line 2: 8 fields, the header has 9"),
    ("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column\n1,RFMab,0,0,-1,-1,-1,-1\n",
     "line 2: command 'RFMab' is not modelled by sieve"),
    ("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column\n1,NOP,0,0,0,0,0,0\n",
     "line 2: unknown command 'NOP'"),
    ("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column\n0,ACT,0,0,0,0,0,0\n",
     "line 2: clock 0 < 1"),
    ("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column\nx,ACT,0,0,0,0,0,0\n",
     "line 2: clock and address fields must be integers"),
    ("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column\n"
     "1,ACT,0,0,0,0,99999999999,0\n", "line 2: address field out of range"),
    ("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column\n", "no commands"),
    ("LD 0x40\n", "not a command log"),
    ("caf\xe9,x\n", "not a command log"),
])
def test_malformed_command_logs_get_one_error(tmp_path, text, msg):
    p = tmp_path / "bad.log"
    p.write_bytes(text.encode("latin-1"))
    with pytest.raises(TraceFormatError, match=re.escape(msg)):
        read_command_log(p, get_spec("hbm3-6400"))


def test_hbm2_csv_without_sid_column(tmp_path):
    p = tmp_path / "h.csv"
    p.write_text("clock,command,Channel,PseudoChannel,BankGroup,Bank,Row,Column,type,source\n"
                 "1,ACT,0,1,2,3,7,0,0,-1\n41,RD,0,1,2,3,7,4,0,-1\n")
    log = read_command_log(p, get_spec("hbm2-2000"))
    assert log["sid"].tolist() == [0, 0] and log["tick"].tolist() == [0, 40]
    assert log["col"].tolist() == [-1, 4]
