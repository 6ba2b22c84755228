"""Measured runs held against the calculator: a table of runs written as the
calculator's own options (``runs``), the shipped tables turned into it
(``conversion``), each run's floor, estimate and measurement (``check``), the fit of
the estimate's fractions of peak (``fit``, its cases as arrays in ``vectors``, the
training runs taken for failed jobs in ``failed``) and the summary by regime
(``summary``)."""
