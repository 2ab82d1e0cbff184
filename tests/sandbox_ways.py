"""Every way a sample can be started on this machine, for the execute tests that run real samples at
each (tests/execute/test_peak_memory.py, test_dies_with_workbench.py; tests/ is on pytest's
``pythonpath``)."""

from __future__ import annotations

import os

from workbench.execute.isolation import IsolationLevel
from workbench.execute.sandbox_helpers import available_levels

#: running as root: samples run under per-worker user ids, which cannot reach a Python under /root
ROOT = os.geteuid() == 0
#: a Python the sandbox's user ids can run where this venv's lies under /root
SYSTEM_PYTHON = "/usr/bin/python3"

#: (isolation level, forked by the worker's zygote): each isolation level this machine has, its
#: samples started on their own, and first, as root with bubblewrap, bubblewrap's samples forked
WAYS = [(level, False) for level in available_levels()]
if ROOT and IsolationLevel.BUBBLEWRAP in available_levels():
    WAYS.insert(0, (IsolationLevel.BUBBLEWRAP, True))
#: a test id for each of :data:`WAYS`: ``LEVEL-zygote`` or ``LEVEL-own``
WAY_IDS = [f"{level.value}-{'zygote' if forked else 'own'}" for level, forked in WAYS]
