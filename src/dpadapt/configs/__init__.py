"""The hyper-parameters of every method family, declared once, importable without the families.

Each module holds one family's :class:`~dpadapt.configs.base.Config` subclass (fields declared with
:func:`~dpadapt.configs.base.param`) and the public constants its choices name. None imports
torch, dp-accounting, scikit-learn, SciPy or POT: the CLI builds its help pages and parses its
options from these alone, and imports a family only when its sub-command runs. Each
family re-exports its Config (``dpadapt.classstats.Config`` is :class:`dpadapt.configs.classstats.Config`).

* :mod:`~dpadapt.configs.base` — the shared fields (ε, δ, privacy mode, label set, seeds);
* :mod:`~dpadapt.configs.classstats`, :mod:`~dpadapt.configs.dpot`, :mod:`~dpadapt.configs.sound`,
  :mod:`~dpadapt.configs.prima`, :mod:`~dpadapt.configs.discrepancy`, :mod:`~dpadapt.configs.deep`.
"""
