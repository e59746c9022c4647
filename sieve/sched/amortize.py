"""Skipping a layer's decision when deciding has not paid for itself (``sieve-cp``).

A dynamic method pays its decision time on the critical path (seed §5: the Sieve scheduler
"runs on the critical path", about 20 us per DeepSeek-R1 layer on a B200; sieve charges
:meth:`sieve.system.step.StepOptions.decision_ns`). A static split pays nothing. Where the best
split saves less than the decision costs - a few experts with one or two tokens each, Qwen3-30B
on one B200 at B <= 4 - every decision loses to the static all-on-PIM split it starts from
(docs/system.md §5), however good the decision is.

``sieve-cp`` therefore remembers, per GPU and layer, what its last decision saved by its own
estimate (``Partition.est_gain_ns``: the estimate of its starting split, all on PIM, minus that
of the split it chose) against what the decision cost. When the saving was smaller than the
cost, it skips the next decisions of that layer and runs its starting split without deciding,
at no decision time; after the skips it decides again. Each decision that still does not pay
doubles the skips (1, 2, 4, ... up to :data:`MAX_SKIP`); one that pays resets them. Two things
keep a skip from hiding a decision that would pay:

* the layer's load: a skip is taken only while the layer brings no more token-expert pairs to
  this GPU than at the decision that did not pay (known when the step builds the layer, from
  the routing's counts); a larger load is decided (the gate "layer"; sieve-cp's gate pools
  this bound over the GPUs, below). Under expert parallelism a GPU's share of a
  layer swings from one expert with one token (nothing to gain) to a dozen tokens (several us
  to gain) between steps;
* the estimate itself: before the runtime cost table has observed any PIM time the method's
  saving is the roofline's, not evidence, and ``sieve-cp`` reports none (no skips follow).

The load gate (``gate``, :data:`GATES`): "layer" is the rule above (``sieve-cp-layergate``,
sieve-cp's gate before the thirty-fourth session); "none" takes a scheduled skip at any load
(``sieve-cp-nogate``, the ablation); "pooled", sieve-cp's, also takes it at a load up to the
largest at which a decision of the same layer did not pay on any GPU whose memo shares the
``pool`` (the step gives every GPU's memo one pool), below every load at which one of that
layer paid on any of them. On one GPU the two gates have given the same result at every point
measured. Under expert parallelism the combine waits for every GPU, so a layer saves its
decision time only where all of its GPUs skip, and each GPU's own gate, met by about half of
the loads when the shares swing from step to step, lets almost no layer skip on every GPU
(docs/schedulers.md, *The load gate under expert parallelism*). A pooled verdict needs each
GPU to know the others' verdicts on the layer: two loads per layer and GPU, which sieve takes
as riding on the all-gather of the token counts the decisions already wait for (seed §6.1),
at no charge.

A layer whose decisions were all made on no evidence (the first layer a run simulates: its
only decision came before any PIM time was observed) borrows, once, the GPU's latest verdict
made on evidence: if that decision did not pay and this layer's load is no larger than its,
the layer skips one decision; the next one is its own.

In the steady state of a layer where deciding never pays, one decision in ``MAX_SKIP + 1`` is
paid.

What a skip runs: the method's starting split, or every activated expert on the GPU where the
decision that did not pay chose that split (``record(..., split="gpu")``; the step records it
for methods with ``skip_gpu`` only - ``sieve-cp``, not ``sieve-cp-pimskip`` - whose look counts
that split as saving nothing over a split a skip can run, :func:`sieve.sched.cp.sieve_cp`). A
borrowed verdict borrows its split too. Such a method's memo keys a layer's decisions per
micro-batch under two-batch overlap where the two micro-batches are like (the step's
``_memo_key``): a skip replays the split its own micro-batch's decision chose, in that
micro-batch's place in the overlap.

The rule compares two numbers the method already has (its own estimates and the charged
decision time): no threshold is fitted. The one constant, :data:`MAX_SKIP`, bounds how long a
change of load goes unseen. ``sieve-cp-always`` (the registry) decides every time, for the
comparison. This module holds the bookkeeping only; the step simulator
(:mod:`sieve.system.step`) consults it when it builds a layer's decision task.
"""

from __future__ import annotations

import math
from collections.abc import Hashable

from sieve.errors import ConfigError

__all__ = ["GATES", "MAX_SKIP", "DecisionMemo"]

#: Most decisions of one layer skipped in a row (⚠ our choice, no source: 8 skipped decisions
#: are 8 steps of decode, a few ms, before a grown load is seen; in the steady state where
#: deciding never pays, 1 decision in 9 is still paid).
MAX_SKIP = 8

#: The load gate of a scheduled skip (:class:`DecisionMemo`): "layer" (no larger than at the
#: layer's decision that did not pay), "none" (no gate), "pooled" (also up to
#: :meth:`DecisionMemo.load_bound` over the decisions of every memo sharing the pool).
GATES = ("layer", "none", "pooled")


class DecisionMemo:
    """Per-layer skip state of one GPU's scheduler (module docstring). Keys are any hashable
    layer id; unknown keys decide."""

    __slots__ = ("max_skip", "gate", "pool", "_state", "_load", "_informed", "_borrowed",
                 "_last", "_split")

    def __init__(self, max_skip: int = MAX_SKIP, gate: str = "layer",
                 pool: dict | None = None):
        if isinstance(max_skip, bool) or not isinstance(max_skip, int) or max_skip < 0:
            raise ConfigError(f"decision memo: max_skip must be an integer >= 0, got "
                              f"{max_skip!r}")
        if gate not in GATES:
            raise ConfigError(f"decision memo: gate {gate!r} unknown (known: "
                              f"{', '.join(GATES)})")
        self.max_skip = max_skip
        self.gate = gate
        # "pooled": (layer key, paid) -> loads, shared by the memos of the GPUs given it
        self.pool = {} if pool is None else pool
        self._state: dict[Hashable, list[int]] = {}  # key -> [skips left, last backoff]
        self._load: dict[Hashable, float] = {}  # key -> load of the decision that did not pay
        self._informed: set = set()  # keys with a decision made on evidence
        self._borrowed: set = set()  # keys that took the GPU's verdict once
        # the GPU's latest decision on evidence: (did not pay, its load, what its skips run)
        self._last: tuple[bool, float | None, str] | None = None
        self._split: dict[Hashable, str] = {}  # key -> what its skips run ("pim" / "gpu")

    def skip(self, key: Hashable, load: float | None = None) -> bool:
        """Whether this decision of layer ``key`` is skipped (consumes one skip). ``load``:
        the layer's load now (its token-expert pairs on this GPU); a load larger than at the
        decision that did not pay is decided. A layer with no decision on evidence skips once
        on the GPU's latest verdict on evidence (module docstring)."""
        s = self._state.get(key)
        if (self.max_skip and key not in self._informed and key not in self._borrowed
                and self._last is not None and self._last[0]):
            then = self._last[1]
            if load is None or then is None or load <= then:
                self._borrowed.add(key)
                self._split[key] = self._last[2]
                return True
        if s is None or s[0] == 0:
            return False
        then = self._load.get(key)
        if (self.gate != "none" and load is not None and then is not None and load > then
                and not (self.gate == "pooled" and load <= self.load_bound(key))):
            return False
        s[0] -= 1
        return True

    def load_bound(self, key: Hashable) -> float:
        """The largest load at which a decision of layer ``key`` in the pool (any GPU sharing
        it) did not pay, below every load at which one of that layer paid (-inf: none)."""
        cap = min(self.pool.get((key, True), ()), default=math.inf)
        return max((x for x in self.pool.get((key, False), ()) if x < cap), default=-math.inf)

    def split(self, key: Hashable) -> str:
        """What a skipped decision of layer ``key`` runs: "pim" (the method's starting split)
        or "gpu" (every activated expert on the GPU)."""
        return self._split.get(key, "pim")

    def record(self, key: Hashable, gain_ns: float | None, cost_ns: float,
               load: float | None = None, split: str = "pim") -> None:
        """A decision of layer ``key`` was made: its estimated saving over the split a skip
        would run (None: the method has no estimate yet), its decision time (ns), the layer's
        load and that split (``split``: "pim", the starting split, or "gpu", all on the
        GPU). A saving below the cost schedules skips (doubling up to ``max_skip``) that run
        ``split``; otherwise the layer decides every time again."""
        if split not in ("pim", "gpu"):
            raise ConfigError(f"decision memo: split must be 'pim' or 'gpu', got {split!r}")
        s = self._state.setdefault(key, [0, 0])
        if gain_ns is not None:
            self._informed.add(key)
            self._last = (bool(gain_ns < cost_ns), None if load is None else float(load),
                          split)
            if load is not None and self.gate == "pooled":
                self.pool.setdefault((key, not gain_ns < cost_ns), set()).add(float(load))
        if gain_ns is None or not gain_ns < cost_ns:  # pays (or no estimate): decide again
            s[0] = s[1] = 0
            self._load.pop(key, None)
            return
        self._split[key] = split
        s[1] = min(max(1, 2 * s[1]), self.max_skip)
        s[0] = s[1]
        if load is None:
            self._load.pop(key, None)
        else:
            self._load[key] = float(load)

    def skips_left(self, key: Hashable) -> int:
        """Decisions of layer ``key`` that will still be skipped."""
        s = self._state.get(key)
        return 0 if s is None else s[0]
