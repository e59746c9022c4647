"""The engine's state by channel (issue 17 item 1: the state layout known in one language
only): ``Engine.state_by_channel`` / ``set_state_by_channel`` / ``history_horizon`` against
the flat ``get_state`` and an independent reading of the constraint table, and no Python module
slicing the flat state arrays itself."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from sieve.dram import PimDevice, engine
from sieve.dram.presets import get_spec
from sieve.pim import gemv_kernel

REPO = Path(__file__).resolve().parents[1]


def _busy_engine(spec_name: str = "b200-hbm3e-pim"):
    """A PIM device after a program with barriers, so every part of the state is non-trivial
    and channels differ (refresh phases, open rows, history)."""
    spec = get_spec(spec_name)
    dev = PimDevice(spec)
    dev.run([gemv_kernel(spec, 512, 1024, 2)], start_ns=0.0)
    eng = dev._engine
    st = eng.get_state()
    rng = np.random.default_rng(0)
    for k in ("ready", "pc_last", "ref_due"):  # make channels and PCs distinguishable
        st[k] = st[k] + rng.integers(0, 50, st[k].size)
    st["ch_last"] = st["ch_last"] + rng.integers(0, 50, st["ch_last"].size)
    eng.set_state(st)
    return eng


def test_by_channel_round_trip_and_partial_write():
    eng = _busy_engine()
    flat = eng.get_state()
    full = eng.state_by_channel()
    nch = eng.n_channels
    npc = eng.layout()["pcs_per_channel"]
    assert full["ch_last"].shape == (nch,) and full["ref_due"].shape == (nch, npc)
    assert len(full["ready"]) == len(full["hist"]) == 5
    assert full["ready"][0].shape[:2] == (nch, 1)
    assert all(r.shape[:2] == (nch, npc) for r in full["ready"][1:])
    # the levels are consecutive, channel-major: their by-channel arrays read in order are
    # the flat array (hist holds one unused entry when no level keeps a history)
    for k in ("ready", "hist"):
        cat = np.concatenate([a.ravel() for a in full[k]])
        assert np.array_equal(cat, flat[k][:cat.size]) and flat[k].size - cat.size in (0, 1)
    eng.set_state_by_channel(full)
    after = eng.get_state()
    for k in flat:
        assert np.array_equal(after[k], flat[k]), k
    # the first two channels from another state; the others keep theirs
    part = eng.state_by_channel(2)
    part["ch_last"] = part["ch_last"] + 7
    part["ready"] = [r + 7 for r in part["ready"]]
    part["ref_due"] = part["ref_due"] + 7
    eng.set_state_by_channel(part)
    now = eng.state_by_channel()
    assert np.array_equal(now["ch_last"][:2], full["ch_last"][:2] + 7)
    assert np.array_equal(now["ch_last"][2:], full["ch_last"][2:])
    for lv in range(5):
        assert np.array_equal(now["ready"][lv][:2], full["ready"][lv][:2] + 7)
        assert np.array_equal(now["ready"][lv][2:], full["ready"][lv][2:])
    assert np.array_equal(now["ref_due"][2:], full["ref_due"][2:])


def test_by_channel_views_follow_select_channels():
    """select_channels moves whole channels and pseudo-channels: seen by channel, channel c
    then holds what channel idx[c] (its PCs permuted) held."""
    eng = _busy_engine()
    before = eng.state_by_channel()
    nch = eng.n_channels
    npc = before["ref_due"].shape[1]
    rng = np.random.default_rng(1)
    idx = rng.integers(0, nch, nch)
    pcs = np.array([rng.permutation(npc) for _ in range(nch)])
    eng.select_channels(idx, pcs)
    after = eng.state_by_channel()
    for c in range(nch):
        src = idx[c]
        assert after["ch_last"][c] == before["ch_last"][src]
        assert np.array_equal(after["ready"][0][c], before["ready"][0][src])
        for lv in range(1, 5):
            assert np.array_equal(after["ready"][lv][c], before["ready"][lv][src][pcs[c]])
            assert np.array_equal(after["hist"][lv][c], before["hist"][lv][src][pcs[c]])
        for k in ("open_row", "ab_row", "sb_row", "pb_row", "n_open", "ref_due", "ref_rr",
                  "pc_last", "pc_lseq"):
            assert np.array_equal(after[k][c], before[k][src][pcs[c]]), k


@pytest.mark.parametrize("name", ["b200-hbm3e-pim", "hbm3-6400", "samsung-hbm2-pim"])
def test_history_horizon_from_the_constraint_table(name):
    """Per level and history slot: the longest latency of a windowed row reading it, read
    here from the spec's own arrays (DramSpec.to_arrays)."""
    spec = get_spec(name)
    arrays = spec.to_arrays()
    eng = engine.Engine(arrays, spec.org.total_channels, False)
    n_cmd = len(arrays["hist_slot"]) // 5
    ptr, lat, win = arrays["cons_ptr"], arrays["cons_lat"], arrays["cons_win"]
    got = eng.history_horizon()
    assert len(got) == 5
    for lv in range(5):
        want = np.zeros(int(arrays["n_slots"][lv]), dtype=np.int64)
        for p in range(n_cmd):
            slot = arrays["hist_slot"][lv * n_cmd + p]
            for r in range(ptr[lv * n_cmd + p], ptr[lv * n_cmd + p + 1]):
                if slot >= 0 and win[r] > 1:
                    want[slot] = max(want[slot], lat[r])
        assert np.array_equal(got[lv], want)
    assert any(h.size and h.max() > 0 for h in got)  # the presets have windowed rows (tFAW)


def test_by_channel_writes_are_checked():
    eng = _busy_engine()
    st = eng.state_by_channel(2)
    bad = dict(st, ref_due=st["ref_due"][:, :1])
    with pytest.raises(ValueError, match="ref_due must be an integer array of shape"):
        eng.set_state_by_channel(bad)
    with pytest.raises(ValueError, match="ready must list 5 levels"):
        eng.set_state_by_channel(dict(st, ready=st["ready"][:2]))
    with pytest.raises(ValueError, match="ref_rr out of range"):
        eng.set_state_by_channel(dict(st, ref_rr=st["ref_rr"] + 10_000))
    with pytest.raises(ValueError, match="n must be in"):
        eng.state_by_channel(eng.n_channels + 1)


def test_python_never_slices_the_flat_state():
    """The flat arrays' level offsets are the engine's alone: no module of the package reads
    them (layout() no longer gives them)."""
    eng = _busy_engine()
    assert "lvl_off" not in eng.layout() and "hist_off" not in eng.layout()
    hits = [str(p.relative_to(REPO)) for p in (REPO / "sieve").rglob("*.py")
            if re.search(r"lvl_off|hist_off", p.read_text())]
    assert hits == []
