"""A memoised table of engine times for single experts on PIM (exact by construction).

Every entry is the engine's time (:func:`sieve.pim.ffn.run_expert_ffn`) of one expert FFN with
``N`` tokens under TP on a **fresh** :class:`~sieve.dram.pim_device.PimDevice` (idle: every bank
closed, no timing history) started at a refresh phase: ``phases=1`` starts it at time 0, when
the first REFab of every PC is due ``tREFI`` later; ``phases=K`` is the mean of K such
simulations started at ``i * tREFI / K`` (i = 0..K-1), i.e. the expected time of the program
on an idle device over uniformly distributed refresh phases. The key (spec values, shape, N,
order, GPU step, phases) fixes both the device state and the programs, so an entry equals a
fresh simulation at the same phases bit for bit (tests/test_pim_kernels.py).

What an entry leaves out is the state a *running* device carries into the program: the open
rows, timing history and actual refresh phase left by the previous program of the step
(attention, the experts before). That is a few row activations and up to one refresh
(``tRFC`` + a row re-open, ~0.5 µs on b200-hbm3e-pim) per program; a t = 0 entry of a program
shorter than ``tREFI`` (3.9 µs) never meets a refresh, so ``phases=1`` is biased low by up to
``tRFC / tREFI`` (11.5 %), which ``phases=K`` removes on average. The table is therefore a
scheduler's estimate; exact step times come from running the programs one after another on
one PimDevice (which a :class:`~sieve.dram.memo.ProgramMemo` can memoise exactly, keyed by
the device state). docs/validation.md (*PIM kernels*) compares both conventions with a whole
layer simulated at once.
"""

from __future__ import annotations

from sieve.dram.presets import get_spec
from sieve.dram.spec import DramSpec
from sieve.errors import ConfigError, choices
from sieve.hw.presets import DEFAULT_GPU, GpuSpec, get_gpu
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
            spaced in ``tREFI`` (the expected time over refresh phases).
    """

    def __init__(self, spec: DramSpec | str, *, order: str = "token",
                 gpu: str | GpuSpec | None = None, gpu_fixed_ns: float | None = None,
                 phases: int = 1):
        if order not in ORDERS:
            raise ConfigError(f"PIM cost table: order {order!r} unknown (known: "
                              f"{choices(ORDERS)})")
        if isinstance(phases, bool) or not isinstance(phases, int) or phases < 1:
            raise ConfigError(f"PIM cost table: phases must be an integer >= 1, got "
                              f"{phases!r}")
        self.phases = phases
        self.spec = get_spec(spec)
        self.order = order
        self.gpu = get_gpu(DEFAULT_GPU if gpu is None else gpu)
        self.gpu_fixed_ns = gpu_fixed_ns
        self._key = spec_key(self.spec)
        self._table: dict[tuple, float] = {}
        self.hits = 0
        self.misses = 0

    def key(self, shape: FfnShape, n_tokens: int) -> tuple:
        """The table key: spec values, shape, tokens, order and GPU step."""
        return (self._key, shape.hidden, shape.intermediate, shape.gated, int(n_tokens),
                self.order, self.gpu.name, self.gpu.hbm_bw_gbs, self.gpu_fixed_ns,
                self.phases)

    def phase_starts_ns(self) -> list[float]:
        """The start times of the entry's simulations on a fresh device (ns)."""
        refi_ns = self.spec.timing.nREFI * self.spec.tCK_ns
        return [i * refi_ns / self.phases for i in range(self.phases)]

    def fresh_ns(self, shape: FfnShape, n_tokens: int) -> float:
        """A new simulation of the entry (no memo): the mean ``total_ns`` over the phases,
        each a fresh :class:`~sieve.dram.pim_device.PimDevice` started at that time."""
        total = 0.0
        for start in self.phase_starts_ns():
            r = run_expert_ffn(self.spec, shape, n_tokens, order=self.order, gpu=self.gpu,
                               gpu_fixed_ns=self.gpu_fixed_ns, start_ns=start)
            total += r.total_ns
        return total / self.phases

    def expert_ns(self, shape: FfnShape, n_tokens: int) -> float:
        """``total_ns`` of one expert with ``n_tokens`` tokens on an idle device (mean over the
        table's refresh phases)."""
        k = self.key(shape, n_tokens)
        if k in self._table:
            self.hits += 1
        else:
            self.misses += 1
            self._table[k] = self.fresh_ns(shape, n_tokens)
        return self._table[k]

    def __len__(self) -> int:
        return len(self._table)
