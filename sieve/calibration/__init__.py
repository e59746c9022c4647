"""Offline fits that regenerate the numbers stored in the code and in docs/.

Never imported at run time (a test enforces it): the GPU and interconnect calibrations
(:mod:`~sieve.calibration.costmodels`, ``python -m sieve.calibration.costmodels``) and the
synthetic-router fits (:mod:`~sieve.calibration.router_fit`,
:mod:`~sieve.calibration.router_fit_real`, :mod:`~sieve.calibration.router_validation`). The
measured rows they fit are in ``sieve/calibration/data/``.
"""
