"""workbench: an evaluation workbench for machine-learning models of code.

Three jobs share one set of loaders (:mod:`workbench.data`), language plugins
(:mod:`workbench.languages`) and reports:

* :mod:`workbench.dedup` -- exact and near-duplicate detection (Allamanis 2019),
* :mod:`workbench.scoring` -- DSA-CQE and baseline scoring of generated code,
* :mod:`workbench.stats` -- correlation of scores with execution results,

plus :mod:`workbench.execution`, the sandbox that produces execution results.
"""

__version__ = "0.1.0"
