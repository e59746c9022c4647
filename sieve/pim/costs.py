"""A memoised table of engine times for single experts on PIM (exact by construction).

Every entry is the engine's time (:func:`sieve.pim.ffn.run_expert_ffn`) of one expert FFN with
``N`` tokens under TP, **started at time 0**, i.e. with the refresh counters at their reset
phase (the first REFab of every PC due at ``nREFI``). The engine is deterministic and the
descriptors depend only on (spec, shape, N, order, GPU step), so a cached entry equals a fresh
simulation bit for bit (tests/test_pim_kernels.py checks sampled entries).

What the convention leaves out: inside a layer an expert starts at some ``t0 > 0`` and meets
refresh at another phase, so its time can differ by up to about one refresh (``tRFC`` plus a
row re-activation; 450 ns + ~40 ns on b200-hbm3e-pim). Programs shorter than ``tREFI``
(3.9 µs) started at time 0 never meet a refresh, so t = 0 entries are biased *low* by up to
``tRFC / tREFI`` (11.5 %). ``phases=K`` removes that bias explicitly: an entry is the mean of
K exact simulations started at ``i * tREFI / K`` after the refresh reset (i = 0..K-1), i.e.
the expected time over refresh phases. docs/validation.md (*PIM kernels*) compares both
conventions with a whole layer simulated at once (:func:`sieve.pim.ffn.run_moe_tp`).
"""

from __future__ import annotations

from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, choices
from sieve.pim.ffn import ORDERS, FfnShape, run_expert_ffn
from sieve.pim.layout import spec_key

__all__ = ["PimCostTable"]


class PimCostTable:
    """Memoised ``total_ns`` (PIM time + GPU tail) of one expert with ``N`` tokens.

    Args:
        spec: PIM spec.
        order: GEMV order (:data:`sieve.pim.ffn.ORDERS`; "layer" is "expert" for one expert).
        gpu, gpu_fixed_ns: GPU step of the activation (:mod:`sieve.pim.host`).
        phases: 1 = start at time 0 (refresh reset); K > 1 = mean over K start phases evenly
            spaced in ``tREFI``.
    """

    def __init__(self, spec: DramSpec | str = "b200-hbm3e-pim", *, order: str = "token",
                 gpu: str = "b200", gpu_fixed_ns: float | None = None, phases: int = 1):
        if order not in ORDERS:
            raise ConfigError(f"PIM cost table: order {order!r} unknown (known: "
                              f"{choices(ORDERS)})")
        if isinstance(phases, bool) or not isinstance(phases, int) or phases < 1:
            raise ConfigError(f"PIM cost table: phases must be an integer >= 1, got "
                              f"{phases!r}")
        self.phases = phases
        self.spec = get_spec(spec)
        self.order = order
        self.gpu = gpu
        self.gpu_fixed_ns = gpu_fixed_ns
        self._key = spec_key(self.spec)
        self._table: dict[tuple, float] = {}
        self.hits = 0
        self.misses = 0

    def key(self, shape: FfnShape, n_tokens: int) -> tuple:
        """The table key: spec values, shape, tokens, order and GPU step."""
        return (self._key, shape.hidden, shape.intermediate, shape.gated, int(n_tokens),
                self.order, self.gpu, self.gpu_fixed_ns, self.phases)

    def fresh_ns(self, shape: FfnShape, n_tokens: int) -> float:
        """A new simulation of the entry (no memo)."""
        t = self.spec.timing
        refi_ns = t.nREFI * self.spec.tCK_ns
        total = 0.0
        for i in range(self.phases):
            r = run_expert_ffn(self.spec, shape, n_tokens, order=self.order, gpu=self.gpu,
                               gpu_fixed_ns=self.gpu_fixed_ns,
                               start_ns=i * refi_ns / self.phases)
            total += r.total_ns
        return total / self.phases

    def expert_ns(self, shape: FfnShape, n_tokens: int) -> float:
        """``total_ns`` of one expert with ``n_tokens`` tokens, started at time 0."""
        k = self.key(shape, n_tokens)
        if k in self._table:
            self.hits += 1
        else:
            self.misses += 1
            self._table[k] = self.fresh_ns(shape, n_tokens)
        return self._table[k]

    def __len__(self) -> int:
        return len(self._table)
