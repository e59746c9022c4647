"""The exhaustive optimum of seed Equation 1 on small instances (an ablation and a yardstick).

``S* = argmin_S max(T_comm, T_GPU(E - S), T_PIM(S))`` over all ``2^|E|`` subsets of the activated
experts, under the same estimator as the greedy (the seed: "an exhaustive search across all
2^|E| combinations is computationally infeasible" for real layers, hence the greedy). Vectorised
over subsets; limited to :data:`MAX_EXPERTS` activated experts and to the affine (roofline) GPU
estimate. docs/schedulers.md reports how far the greedy is from it over random instances.
"""

from __future__ import annotations

import numpy as np

from sieve.errors import ConfigError
from sieve.sched.estimator import Estimator
from sieve.sched.greedy import split_estimates
from sieve.sched.partition import LayerLoad, Partition

__all__ = ["MAX_EXPERTS", "optimal", "optimal_on_pim"]

#: Largest number of activated experts searched exhaustively (2^16 subsets, ~1 MB per array).
MAX_EXPERTS = 16


def optimal_on_pim(load: LayerLoad, est: Estimator, *, attention_aware: bool = True,
                   comm_aware: bool = True) -> tuple[np.ndarray, float]:
    """(on_pim mask of the best subset, its T_total). Ties go to the subset with fewer experts
    on PIM, then to the lowest bitmask (deterministic)."""
    counts = load.counts
    active = np.flatnonzero(counts)
    k = active.size
    if k > MAX_EXPERTS:
        raise ConfigError(f"optimal partition: {k} activated experts exceed the exhaustive "
                          f"limit of {MAX_EXPERTS} (2^{MAX_EXPERTS} subsets)")
    aff = est.gpu_affine(load.gpu_fixed)
    if aff is None:
        raise ConfigError("optimal partition: needs the roofline GPU estimate "
                          "(sieve.hw.estimates.RooflineCostModel)")
    busy = load.pim_busy_ns if attention_aware else 0.0
    comm = load.comm_ns if comm_aware else 0.0
    n = counts[active].astype(np.float64)
    p = est.pim_expert_ns(counts[active])
    masks = np.arange(1 << k, dtype=np.int64)
    bits = ((masks[:, None] >> np.arange(k)) & 1).astype(np.float64)  # 1 = on PIM
    gpu = 1.0 - bits
    nb = aff.base_bytes + gpu @ (aff.w + aff.a * n)
    nf = aff.base_flops + gpu @ (aff.f * n)
    t_gpu = np.maximum(nb / aff.bytes_per_ns, nf / aff.flops_per_ns)
    t_pim = busy + bits @ p + est.pim_fixed_ns("tp") * (bits.sum(axis=1) > 0)
    total = np.maximum(comm, np.maximum(t_gpu, t_pim))
    n_pim = bits.sum(axis=1)
    best = np.lexsort((masks, n_pim, total))[0]
    on_pim = np.zeros(counts.size, dtype=bool)
    on_pim[active] = bits[best].astype(bool)
    return on_pim, float(total[best])


def optimal(load: LayerLoad, est: Estimator, *, attention_aware: bool = True,
            comm_aware: bool = True) -> Partition:
    """The exhaustive optimum as a :class:`Partition` (method "optimal")."""
    on_pim, _ = optimal_on_pim(load, est, attention_aware=attention_aware,
                               comm_aware=comm_aware)
    t_comm, t_gpu, t_pim = split_estimates(load, est, on_pim)
    return Partition("optimal", load.counts, on_pim, pim_order=est.pim_order,
                     est_comm_ns=t_comm, est_gpu_ns=t_gpu, est_pim_ns=t_pim,
                     steps=1 << int((load.counts > 0).sum()))
