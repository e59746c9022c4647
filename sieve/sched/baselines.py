"""The methods Sieve is judged against (seed §7 "Comparison Methodology"), plus Duplex and GPU-only.

Every method gets the same :class:`~sieve.sched.estimator.Estimator` (the same GPU/link
estimates and runtime PIM cost tables) and differs only in its algorithm, so a comparison
measures the algorithm, not better information. All keep attention on PIM except GPU-only.

* **noexp** (Heo et al. 2024; Lee et al. 2025): attention on PIM, every expert on the GPU.
* **allexp** (He et al. 2025 PAPI; Pan et al. 2025 Stratum): every expert on PIM.
* **pimoe** (Wu et al. 2025, as the seed describes it): expert parallelism across PIM channel
  groups - experts are placed statically on groups of pseudo-channels (expert ``e`` on group
  ``e mod n_groups``, groups of :func:`sieve.hw.estimates._ep_group` pseudo-channels, the
  lowering's default) - all experts on PIM first, then the most popular expert of the busiest
  group moves to the GPU, repeatedly, until the GPU time exceeds the PIM time (the move that
  makes it exceed is kept). Blind to attention on PIM and to inter-GPU communication (seed §5
  "Comparison with PIMoE"): it compares the experts' GPU time with the busiest group's expert
  load. Its per-group loads are what seed Figure 10 plots. No code of PIMoE is public
  (shared/reference/pim-simulators.md), so this follows the seed's text; a fidelity risk.
* **duplex** (Yun et al. 2024, expert co-processing, pim-simulators.md §3): a lookup table of
  one expert's time by token count on each processor; start with every expert on the GPU and
  move the experts with the fewest tokens to PIM one at a time while the makespan
  ``max(sum_G t_gpu(n), sum_S t_pim(n))`` improves. As published it balances the expert layer
  alone (blind to attention and communication), and each processor runs its experts one after
  another (Duplex's per-operation roofline), so a grouped GEMM's shared cost is not seen.
* **gpu-only**: no PIM at all - attention and every expert on the GPU (the plain deployment,
  checked against measured serving points by the step simulator).
"""

from __future__ import annotations

import numpy as np

from sieve.hw.estimates import _ep_group
from sieve.sched.estimator import Estimator
from sieve.sched.greedy import split_estimates
from sieve.sched.partition import LayerLoad, Partition

__all__ = ["allexp", "duplex", "gpu_only", "noexp", "pimoe"]


def noexp(load: LayerLoad, est: Estimator) -> Partition:
    """Every expert on the GPU; attention stays on PIM."""
    on_pim = np.zeros(load.counts.size, dtype=bool)
    t_comm, t_gpu, t_pim = split_estimates(load, est, on_pim)
    return Partition("noexp", load.counts, on_pim, pim_order=est.pim_order, est_comm_ns=t_comm,
                     est_gpu_ns=t_gpu, est_pim_ns=t_pim)


def allexp(load: LayerLoad, est: Estimator) -> Partition:
    """Every activated expert on PIM (tensor parallelism over the pseudo-channels)."""
    on_pim = load.counts > 0
    t_comm, t_gpu, t_pim = split_estimates(load, est, on_pim)
    return Partition("allexp", load.counts, on_pim, pim_order=est.pim_order,
                     est_comm_ns=t_comm, est_gpu_ns=t_gpu, est_pim_ns=t_pim)


def gpu_only(load: LayerLoad, est: Estimator) -> Partition:
    """No PIM: every expert on the GPU and attention too (the caller moves attention)."""
    on_pim = np.zeros(load.counts.size, dtype=bool)
    t_gpu = est.gpu_ns(load.counts, load.gpu_fixed)
    return Partition("gpu-only", load.counts, on_pim, pim_order=est.pim_order,
                     attention_on_pim=False, est_comm_ns=load.comm_ns, est_gpu_ns=t_gpu,
                     est_pim_ns=0.0)


def pimoe(load: LayerLoad, est: Estimator, *, pcs_per_expert: int | None = None
          ) -> Partition:
    """PIMoE's partition under expert parallelism across PIM channel groups (module doc)."""
    counts = load.counts
    n_local = counts.size
    n_pcs = est.system.memory.org.total_pseudochannels
    g = int(pcs_per_expert or _ep_group(n_pcs, n_local))
    n_groups = n_pcs // g
    placement = np.arange(n_local) % n_groups
    p = est._pim_fast(counts, "ep", g)
    on_pim = counts > 0
    fixed = est.pim_fixed_ns("ep", g)  # each group pays its own (concurrently)
    loads = np.bincount(placement, weights=np.where(on_pim, p, 0.0), minlength=n_groups)
    loads[np.bincount(placement, weights=on_pim, minlength=n_groups) > 0] += fixed
    # per group, its activated experts by popularity (ties: lowest id first)
    act = np.flatnonzero(on_pim)
    act = act[np.lexsort((act, -counts[act], placement[act]))]
    bounds = np.searchsorted(placement[act], np.arange(n_groups + 1))
    queues = act.tolist()
    head = bounds[:-1].tolist()
    ends = bounds[1:].tolist()
    aff = est.gpu_affine(())
    gpu_counts = np.zeros_like(counts)
    nb = nf = 0.0
    t_gpu = 0.0
    steps = 0
    while True:
        grp = int(np.argmax(loads))
        top = float(loads[grp])
        if t_gpu > top or head[grp] >= ends[grp]:
            break  # the GPU exceeds PIM, or nothing is left on PIM
        e = queues[head[grp]]
        head[grp] += 1
        on_pim[e] = False
        loads[grp] -= p[e] + (fixed if head[grp] == ends[grp] else 0.0)
        gpu_counts[e] = counts[e]
        steps += 1
        if aff is not None:  # the experts only: blind to the layer's other GPU work
            nb += aff.w + aff.a * float(counts[e])
            nf += aff.f * float(counts[e])
            t_gpu = max(nb / aff.bytes_per_ns, nf / aff.flops_per_ns)
        else:
            t_gpu = est.gpu_ns(gpu_counts)
    loads = np.bincount(placement, weights=np.where(on_pim, p, 0.0), minlength=n_groups)
    loads[np.bincount(placement, weights=on_pim, minlength=n_groups) > 0] += fixed
    t_gpu_full = est.gpu_ns(np.where(on_pim, 0, counts), load.gpu_fixed)
    return Partition("pimoe", counts, on_pim, pim_order=est.pim_order, mapping="ep",
                     est_comm_ns=load.comm_ns, est_gpu_ns=t_gpu_full,
                     est_pim_ns=load.pim_busy_ns + float(loads.max(initial=0.0)),
                     pcs_per_expert=g, placement=placement, est_group_pim_ns=loads,
                     steps=steps)


def duplex(load: LayerLoad, est: Estimator) -> Partition:
    """Duplex-style expert co-processing (module docstring)."""
    counts = load.counts
    active = np.flatnonzero(counts)
    order = active[np.argsort(counts[active], kind="stable")]  # fewest tokens first
    t_pim_e = est._pim_fast(counts[order])
    t_gpu_e = est.gpu_expert_ns(counts[order])
    # makespan after moving the first k experts to PIM, k = 0..n
    gpu = np.concatenate([[t_gpu_e.sum()], t_gpu_e.sum() - np.cumsum(t_gpu_e)])
    pim = np.concatenate([[0.0], np.cumsum(t_pim_e) + est.pim_fixed_ns("tp")])
    span = np.maximum(gpu, pim)
    worse = np.flatnonzero(np.diff(span) >= 0)  # the first move that does not improve
    k = int(worse[0]) if worse.size else order.size
    on_pim = np.zeros(counts.size, dtype=bool)
    on_pim[order[:k]] = True
    t_comm, t_gpu, t_pim = split_estimates(load, est, on_pim)
    return Partition("duplex", counts, on_pim, pim_order=est.pim_order, est_comm_ns=t_comm,
                     est_gpu_ns=t_gpu, est_pim_ns=t_pim, steps=min(k + 1, order.size))
