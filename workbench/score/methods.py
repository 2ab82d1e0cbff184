"""The registry of scoring methods: ``--method`` names -> classes."""

from __future__ import annotations

from workbench.errors import WorkbenchError
from workbench.score.base import ScoringMethod
from workbench.score.chrf import Chrf
from workbench.score.dsa_cqe import DsaCqe
from workbench.score.dsa_cqe_simplified import DsaCqeSimplified
from workbench.score.ice_score import IceScore, IceScoreUsefulness
from workbench.score.p_correct import PCorrect
from workbench.score.verdict import DEFAULT_FINAL_STEP

#: method name -> class; each class takes ``prompts_dir`` if it uses prompts
METHODS: dict[str, type[ScoringMethod]] = {
    DsaCqe.name: DsaCqe,
    DsaCqeSimplified.name: DsaCqeSimplified,
    IceScore.name: IceScore,
    IceScoreUsefulness.name: IceScoreUsefulness,
    PCorrect.name: PCorrect,
    Chrf.name: Chrf,
}


def make_method(
    name: str,
    prompts_dir: str | None = None,
    *,
    final_step: str = DEFAULT_FINAL_STEP,
    reference: bool = True,
    analyse_first: bool = False,
) -> ScoringMethod:
    """Return a new instance of the method called ``name``.

    Args:
        name: a key of :data:`METHODS`.
        prompts_dir: a folder of prompt templates (default: the shipped ones).
        final_step: for ``dsa-cqe`` and ``dsa-cqe-simplified`` (``score`` or ``p-correct``).
        reference / analyse_first: for ``p-correct``.

    Other methods ignore the options that are not theirs.

    Raises:
        WorkbenchError: unknown name (the message lists the known ones), or a bad option.
    """
    cls = METHODS.get(name)
    if cls is None:
        raise WorkbenchError(f"unknown scoring method {name!r}; choose from {', '.join(METHODS)}")
    if not cls.uses_llm:
        return cls()
    try:
        if cls in (DsaCqe, DsaCqeSimplified):
            return cls(prompts_dir, final_step=final_step)
        if cls is PCorrect:
            return cls(prompts_dir, reference=reference, analyse_first=analyse_first)
    except ValueError as error:
        raise WorkbenchError(f"{name}: {error}") from error
    return cls(prompts_dir)
