"""The registry of scoring methods: ``--method`` names -> classes."""

from __future__ import annotations

from workbench.errors import WorkbenchError
from workbench.score.base import ScoringMethod
from workbench.score.chrf import Chrf
from workbench.score.dsa_cqe import DsaCqe
from workbench.score.dsa_cqe_simplified import DsaCqeSimplified
from workbench.score.ice_score import IceScore

#: method name -> class; each class takes ``prompts_dir`` if it uses prompts
METHODS: dict[str, type[ScoringMethod]] = {
    DsaCqe.name: DsaCqe,
    DsaCqeSimplified.name: DsaCqeSimplified,
    IceScore.name: IceScore,
    Chrf.name: Chrf,
}


def make_method(name: str, prompts_dir: str | None = None) -> ScoringMethod:
    """Return a new instance of the method called ``name``.

    Raises:
        WorkbenchError: unknown name (the message lists the known ones).
    """
    cls = METHODS.get(name)
    if cls is None:
        raise WorkbenchError(f"unknown scoring method {name!r}; choose from {', '.join(METHODS)}")
    return cls() if not cls.uses_llm else cls(prompts_dir)
