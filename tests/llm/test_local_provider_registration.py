"""Registering the in-process ``local`` provider is quiet and prices every alias at 0 USD.
No model is loaded or called: registration only touches litellm's provider list and cost map."""

from __future__ import annotations

import subprocess
import sys

REGISTER = (
    "import litellm\n"
    "from workbench.llm import local, models\n"
    "local.register()\n"
    "for alias in models.REGISTRY:\n"
    "    info = litellm.model_cost[f'local/{alias}']\n"
    "    assert info['input_cost_per_token'] == info['output_cost_per_token'] == 0.0, info\n"
    "    assert info['cache_read_input_token_cost'] == info['cache_creation_input_token_cost'] == 0.0, info\n"
    "print('registered', len(models.REGISTRY))\n"
)


def test_registering_the_local_provider_prints_no_litellm_warning():
    # a fresh interpreter: the first registration is the one that used to warn per alias
    done = subprocess.run([sys.executable, "-c", REGISTER], capture_output=True, text=True, timeout=120,
                          env={"LITELLM_LOCAL_MODEL_COST_MAP": "True", "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("registered ")
    assert "register_model" not in done.stderr and "WARNING" not in done.stderr, done.stderr
