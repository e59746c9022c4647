"""Results shown to people: characterization tables, roofline tables, figures.

Layer: top of the computing layers (below only :mod:`sieve.cli`). Modules:
:mod:`~sieve.report.characterize` (seed Figures 3 and 5 tables), :mod:`~sieve.report.roofline`
(seed Figure 4) and :mod:`~sieve.report.plots` (figures drawn from result tables only; plotting
never runs a simulation).
"""
