"""Package exports loaded on first use (PEP 562 module ``__getattr__``).

The CLI imports each job's package for its config class; the packages' public names (the jobs,
their reports) pull in datasets, pandas and scipy, seconds of start-up that ``--help`` and
``--version`` never need. A package lists what it exports and from where, and hands this
module's ``__getattr__`` to Python:

    __getattr__, __dir__ = lazy_exports(__name__, {"run_bias": "workbench.bias.job"}, globals())
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str],
                 namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of a package whose names load on first use.

    Args:
        package: the package's ``__name__`` (for the error message).
        exports: public name -> the module that defines it.
        namespace: the package's ``globals()``: a loaded name is stored there, so the next
            access does not come back here.

    Returns:
        ``(__getattr__, __dir__)`` to assign in the package.

    Raises:
        AttributeError: (from ``__getattr__``) a name the package does not export.
    """

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
