"""Schedulers: which experts of a MoE layer run on the GPU and which on PIM (seed §5, §7).

Layer: above :mod:`sieve.pim` and :mod:`sieve.workload`. Modules:

* :mod:`~sieve.sched.partition` - :class:`LayerLoad` (what a scheduler is given) and
  :class:`Partition` (what it returns);
* :mod:`~sieve.sched.estimator` - the runtime EMA PIM cost table and the :class:`Estimator`
  every method is handed;
* :mod:`~sieve.sched.greedy` - the Sieve scheduler (compiled inner loop ``_greedy``);
* :mod:`~sieve.sched.baselines` - noexp, allexp, pimoe, duplex, gpu-only;
* :mod:`~sieve.sched.optimal` - the exhaustive optimum on small layers;
* :mod:`~sieve.sched.methods` - the :data:`SCHEDULERS` registry (a plain dict);
* :mod:`~sieve.sched.trace` - scheduling a routing trace without the step simulator.
"""
