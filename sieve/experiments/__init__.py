"""Experiments at scale: sweeps of simulated runs, run on local processes or a Dask cluster.

Layer: above :mod:`sieve.system` (it runs :func:`sieve.system.run.simulate_run`), below
:mod:`sieve.report` (which turns the collected rows into tables and figures). Modules:

* :mod:`~sieve.experiments.points`: :class:`Point` (a run and what to record of it), the
  point lists of ``sieve run`` and ``sieve run --paper``, one point simulated into a record;
* :mod:`~sieve.experiments.config`: :class:`ExperimentConfig` (a sweep: grid and list sweeps
  over every :class:`~sieve.system.run.RunConfig` field, from a TOML/JSON file or the command
  line), run ids, the code digest;
* :mod:`~sieve.experiments.store`: the resumable folder of finished runs (one file per run);
* :mod:`~sieve.experiments.executor`: running points in worker processes or on Dask, with
  progress on stderr;
* :mod:`~sieve.experiments.evaluation`: :func:`evaluate`, points through the executor into
  the tables (rows) :mod:`sieve.report` reads;
* :mod:`~sieve.experiments.cache`: shared work saved to disk between sweeps;
* :mod:`~sieve.experiments.profiling`: per-stage timers and the ``sieve profile`` harness.

It draws nothing and writes no table: that is :mod:`sieve.report`'s job.
"""
