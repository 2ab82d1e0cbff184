"""Values that no option can use are refused when the option is read, not after the job started.

Two holes found by probing the commands with extreme values (issue: probe 40):

* ``inf`` passed every float option bounded below only: ``workbench score --timeout inf`` scored
  every sample into an ``llm_error`` after three attempts each ("timestamp out of range for
  platform time_t", from the HTTP client's deadline), and ``--temperature inf`` was sent to the
  server as the JSON text ``Infinity`` and written so into ``run.json``, which no strict JSON
  reader accepts. ``nan`` was already refused.
* a limit of ``workbench execute`` larger than an rlimit holds (``--memory-mb 8796093022208``,
  2^63 bytes) passed the option and failed in every sample's set-up (``OverflowError`` in the
  worker's zygote, ``ulimit: ... limit out of range`` on the per-sample path): each sample a
  ``sandbox_error``, exit status 3.

Real job configs, the real command line, and a real sandboxed sample at the largest limit the
option takes. No LLM.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.execute.job import ExecutionConfig, run_execute
from workbench.execute.limits import MiB, ResourceLimits
from workbench.options import OptionError
from workbench.run.config import COMMAND_CONFIGS, ConfigError, build_config

#: every float option of every job config: (command, option name)
FLOAT_OPTIONS = [(command, name) for command, config in COMMAND_CONFIGS.items()
                 for name, option in config.options().items() if option.kind is float and option.declared.parse is None]
#: the largest value ``setrlimit`` takes (a C ``long long``; above it Python raises ``OverflowError``)
RLIMIT_MAX = 2**63 - 1


def test_the_float_options_are_found() -> None:
    assert ("score", "temperature") in FLOAT_OPTIONS and ("score", "timeout") in FLOAT_OPTIONS
    assert ("execute", "timeout_factor") in FLOAT_OPTIONS


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
@pytest.mark.parametrize(("command", "name"), FLOAT_OPTIONS, ids=[f"{c}.{n}" for c, n in FLOAT_OPTIONS])
def test_no_float_option_takes_a_value_that_is_not_finite(command: str, name: str, value: float) -> None:
    config = COMMAND_CONFIGS[command]
    with pytest.raises(OptionError, match=rf"{name} must be .*, not {value!r}"):
        config(**{name: value})


@pytest.mark.parametrize("text", ["inf", "-inf", "nan"])
def test_the_score_command_refuses_a_timeout_or_temperature_that_is_not_finite(tmp_path: Path, text: str) -> None:
    for flag in ("--timeout", "--temperature"):
        result = CliRunner().invoke(app, ["score", "humaneval-codex-python", "-m", "p-correct", "--model", "openai/m",
                                          flag, text, "-o", str(tmp_path / "out")])
        assert result.exit_code == 2, result.output
        assert f"{flag} must be" in result.output and not (tmp_path / "out").exists()


def test_a_run_config_refuses_an_infinite_timeout() -> None:
    with pytest.raises(ConfigError, match=r"\[score\] timeout must be .*finite.*, not inf"):
        build_config({"data": {"source": "x.jsonl"}, "score": {"timeout": math.inf}})


@pytest.mark.parametrize("name", ["memory_mb", "max_file_mb", "max_processes", "max_open_files"])
def test_an_execute_limit_beyond_what_an_rlimit_holds_is_refused(name: str) -> None:
    unit = MiB if name.endswith("_mb") else 1
    largest = ExecutionConfig.options()[name].declared.max
    assert largest == RLIMIT_MAX // unit
    with pytest.raises(OptionError, match=rf"{name} must be in \[\d+, {largest}\], not {largest + 1}"):
        ExecutionConfig(**{name: largest + 1})
    ExecutionConfig(**{name: largest})


def test_the_execute_command_refuses_a_memory_limit_beyond_an_rlimit(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["execute", "gen.jsonl", "-o", str(tmp_path / "out.jsonl"),
                                      "--memory-mb", str(RLIMIT_MAX // MiB + 1)])
    shown = " ".join(result.output.replace("│", " ").split())  # click's range check, in its box
    assert result.exit_code == 2 and "--memory-mb" in shown and "8796093022207" in shown, shown
    assert not (tmp_path / "out.jsonl").exists()


def test_resource_limits_refuse_a_value_setrlimit_cannot_take() -> None:
    with pytest.raises(ValueError, match="address_space_bytes .* at most 9223372036854775807"):
        ResourceLimits(address_space_bytes=RLIMIT_MAX + 1)
    ResourceLimits(address_space_bytes=RLIMIT_MAX)


@pytest.mark.parametrize("reuse", [True, False], ids=["zygote", "own"])
def test_a_sample_runs_under_the_largest_limits_the_options_take(tmp_path: Path, reuse: bool) -> None:
    """The largest values are usable: a real sample (forked by the worker's interpreter, and started
    on its own) passes under them; one above failed in every sample's set-up before."""
    generations = tmp_path / "gen.jsonl"
    generations.write_text(json.dumps({"task_id": "HumanEval/0", "sample_id": 0, "completion": (
        "    for i, a in enumerate(numbers):\n        for b in numbers[i + 1:]:\n"
        "            if abs(a - b) < threshold:\n                return True\n    return False\n")}) + "\n")
    config = ExecutionConfig(timeout=30.0, workers=1, reference_cache=False, reuse_interpreters=reuse,
                             memory_mb=RLIMIT_MAX // MiB, max_file_mb=RLIMIT_MAX // MiB)
    summary = run_execute(generations, tmp_path / "out.jsonl", config)
    assert summary.counts == {"passed": 1} and summary.sandbox_errors == 0
