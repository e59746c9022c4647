"""The exact memo of PIM programs (:class:`ProgramMemo`) and the device-state normalisation it
keys on.

:func:`_normalise` reduces the engine state of the simulated channels to what decides their
future, relative to a program's start (ready times clipped at each channel's last command,
history too old to bind dropped as :data:`_NO_HIST`, the round-robin order of the PCs);
:func:`_denormalise` writes such a state back. A :class:`~sieve.dram.pim_device.PimDevice`
given ``memo=`` asks the memo before simulating a program and replays a hit bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from sieve.errors import ConfigError

__all__ = ["ProgramMemo"]


_NO_HIST = np.iinfo(np.int64).min  # normalised history entry that can no longer bind


def _normalise(state: dict, base: int, max_lat: int) -> dict:
    """The state of the channels in ``state`` (``Engine.state_by_channel(sim)``) relative to
    tick ``base``, reduced to what decides their future: no command of channel c can issue
    before its last one (X_c), so ready times below X_c are X_c, history ticks too old to bind
    any windowed row are dropped, a PC's last tick below X_c is X_c, and the command-bus round
    robin depends only on the order of the PCs' last issues (their ranks)."""
    x = state["ch_last"]
    out = {"ch_last": x - base}
    xc = x[:, None, None]
    out["ready"] = [np.maximum(r, xc) - base for r in state["ready"]]
    out["hist"] = [np.where((h < 0) | (h + max_lat <= x[:, None, None, None, None]), _NO_HIST,
                            h - base) for h in state["hist"] if h.size]
    for k in ("open_row", "ab_row", "sb_row", "pb_row", "n_open", "ref_rr"):
        out[k] = state[k]
    out["ref_due"] = state["ref_due"] - base
    out["pc_last"] = np.maximum(state["pc_last"], x[:, None]) - base
    out["pc_rank"] = np.array([np.unique(r, return_inverse=True)[1] for r in state["pc_lseq"]])
    return out


def _denormalise(norm: dict, state: dict, base: int) -> None:
    """Write a normalised state (:func:`_normalise`) into ``state``
    (``Engine.state_by_channel(sim)``) at ``base`` (the inverse of :func:`_normalise` up to
    values that cannot influence the future). ``pc_lseq`` and ``seq`` are the caller's."""
    state["ready"] = [r + base for r in norm["ready"]]
    hist = iter(norm["hist"])  # the levels that keep a history, in order
    for lv, h0 in enumerate(state["hist"]):
        if h0.size:
            h = next(hist)
            state["hist"][lv] = np.where(h == _NO_HIST, -1, h + base)
    for k in ("open_row", "ab_row", "sb_row", "pb_row", "n_open", "ref_rr"):
        state[k] = norm[k]
    state["ref_due"] = norm["ref_due"] + base
    state["pc_last"] = norm["pc_last"] + base
    state["ch_last"] = norm["ch_last"] + base


class ProgramMemo:
    """An exact memo of PIM programs for :class:`~sieve.dram.pim_device.PimDevice` (pass
    ``memo=`` to devices).

    Key: the spec, the program (kernel descriptors, streams, barrier sets, how many channels
    are simulated) and the device state of the simulated channels **relative to the
    program's start tick** (aligned down to a whole CK, with the offset in the key), reduced
    to what decides the future (:func:`_normalise`: ready times clipped at each channel's
    last command, history too old to bind dropped, the round-robin order of the PCs), with
    the refresh due times and open rows exact. Value: the run's outputs and its final state
    in the same relative form, and its log. A hit replays them at the new start: the result
    and the device's state are those a fresh simulation would give, bit for bit
    (tests/test_pim_engine.py). The key is a 256-bit BLAKE2 digest of these arrays.

    Hits need the same refresh phase relative to the start, to the tick: in a decode step
    they occur when a program repeats on a device in the same relative state (e.g. an idle
    device and equal phases); otherwise every run is a miss, which costs one normalisation
    of the state (a few ms for a full 128-channel b200 state, far less for symmetric runs,
    which key one channel).

    Args:
        max_entries: keep at most this many entries (the oldest are dropped); None: no limit.
    """

    def __init__(self, max_entries: int | None = None):
        if max_entries is not None and (isinstance(max_entries, bool) or not isinstance(
                max_entries, int) or max_entries < 1):
            raise ConfigError(f"ProgramMemo: max_entries must be an integer >= 1 or None, got "
                              f"{max_entries!r}")
        self.max_entries = max_entries
        self._table: dict[bytes, tuple] = {}
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._table)

    def clear(self) -> None:
        self._table.clear()

    # ``dev`` below is the PimDevice running the program (typed Any: sieve.dram.pim_device
    # imports this module, so this one does not import it)
    def _key(self, dev: Any, program: tuple, start: int, sim: int):
        import hashlib

        eng = dev._engine
        align = eng.layout()["align"]
        base = start - start % align
        norm = _normalise(eng.state_by_channel(sim), base, eng.max_latency)
        h = hashlib.blake2b(digest_size=32)
        h.update(repr((dev._spec_id(), sim, start - base, dev.logging, dev.idle)).encode())
        for a in program[:4]:
            h.update(np.ascontiguousarray(a).tobytes())
            h.update(b"|")
        h.update(repr(program[4]).encode())
        for k in sorted(norm):
            v = norm[k]
            for a in (v if isinstance(v, list) else [v]):
                h.update(np.ascontiguousarray(a).tobytes())
                h.update(b"|")
        return h.digest(), base, norm

    def _get(self, key: bytes):
        entry = self._table.get(key)
        if entry is None:
            self.misses += 1
        else:
            self.hits += 1
        return entry

    def _put(self, key: bytes, dev: Any, out: tuple, base: int, norm: dict, sim: int,
             seq0: int) -> None:
        eng = dev._engine
        final = eng.state_by_channel(sim)
        fnorm = _normalise(final, base, eng.max_latency)
        lseq = final["pc_lseq"]
        fnorm["lseq_rel"] = np.where(lseq > seq0, lseq - seq0, 0)
        k_start, k_end, busy, finish, n_ref, end, log, delta, n_cmds, chc, ovh = out
        rel = (np.where(k_start >= 0, k_start - base, -1), np.where(k_end >= 0, k_end - base, -1),
               busy.copy(), finish - base, n_ref.copy(), end - base)
        if log is not None:
            log = log.copy()
            log["tick"] -= base
            log["seq"] -= seq0
        if self.max_entries is not None and len(self._table) >= self.max_entries:
            self._table.pop(next(iter(self._table)))
        self._table[key] = (rel, fnorm, log, delta.copy(), n_cmds, chc.copy(), ovh.copy())

    def _replay(self, dev: Any, entry: tuple, base: int, sim: int, seq0: int) -> tuple:
        (ks, ke, busy, finish, n_ref, end), fnorm, log, delta, n_cmds, chc, ovh = entry
        eng = dev._engine
        state = eng.state_by_channel(sim)
        _denormalise(fnorm, state, base)
        lseq = state["pc_lseq"]
        state["pc_lseq"] = np.where(fnorm["lseq_rel"] > 0, seq0 + fnorm["lseq_rel"], lseq)
        state["seq"] = seq0 + n_cmds
        eng.set_state_by_channel(state)
        eng.add_counts(delta, 0)
        if log is not None:
            log = log.copy()
            log["tick"] += base
            log["seq"] += seq0
        return (np.where(ks >= 0, ks + base, -1), np.where(ke >= 0, ke + base, -1),
                busy.copy(), finish + base, n_ref.copy(), end + base, log, delta, n_cmds,
                chc.copy(), ovh.copy())
