"""Where workbench keeps what it reuses between runs: ``$WORKBENCH_CACHE_DIR`` when set, else the
user cache folder of :mod:`platformdirs` (``~/.cache/workbench`` on Linux).

Under it: ``models/`` (the model store, :func:`workbench.llm.models.models_dir`), ``llm/`` (the
LLM response cache, :func:`workbench.score.config.default_cache_dir`) and ``reference-times/``
(:func:`workbench.execute.config.default_reference_cache`). One variable moves all three, so a
run measured "from an empty cache" or kept apart from another user's is one setting.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the environment variable that moves every workbench cache folder
CACHE_DIR_ENV = "WORKBENCH_CACHE_DIR"


def user_cache_root() -> Path:
    """The root of workbench's caches (not created here).

    Returns:
        ``$WORKBENCH_CACHE_DIR`` (``~`` expanded) when set and not empty, else
        ``platformdirs.user_cache_dir("workbench")``.
    """
    if os.environ.get(CACHE_DIR_ENV):
        return Path(os.environ[CACHE_DIR_ENV]).expanduser()
    import platformdirs  # here: only the callers that need a default pay for it

    return Path(platformdirs.user_cache_dir("workbench"))
