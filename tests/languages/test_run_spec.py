"""RunSpec validates itself when built: each broken field raises InvalidRunSpecError naming it."""

from __future__ import annotations

import dataclasses

import pytest

from workbench.errors import WorkbenchError
from workbench.languages.spec import InvalidRunSpecError, RunSpec

VALID = dict(files={"h.sh": "true", "lib/util.sh": ""}, run=["/bin/sh", "h.sh"], token_input_fd=3, pass_token_fd=4)

# (id, fields replacing VALID's, fragment of the message)
BROKEN = [
    ("no-files", dict(files={}), "RunSpec.files must be a non-empty mapping"),
    ("files-not-a-mapping", dict(files=["h.sh"]), "RunSpec.files must be a non-empty mapping"),
    ("file-escapes-with-dotdot", dict(files={"../h.sh": ""}), "RunSpec.files: name '../h.sh' must be a relative path"),
    ("absolute-file-name", dict(files={"/etc/h.sh": ""}), "name '/etc/h.sh' must be a relative path"),
    ("empty-path-part", dict(files={"a//h.sh": ""}), "name 'a//h.sh' must be a relative path"),
    ("backslash-in-name", dict(files={"a\\h.sh": ""}), "must be a relative path"),
    ("file-content-not-text", dict(files={"h.sh": b"true"}), "RunSpec.files['h.sh'] must be text, got bytes"),
    ("empty-run", dict(run=[]), "RunSpec.run must be a non-empty argv list of str"),
    ("run-as-a-string", dict(run="/bin/sh h.sh"), "RunSpec.run must be a non-empty argv list"),
    ("build-entry-not-argv", dict(build=["make"]), "RunSpec.build must be a list of non-empty argv lists"),
    ("env-not-str", dict(env={"N": 1}), "RunSpec.env must map str to str"),
    ("no-output-channel", dict(pass_token_fd=None), "set exactly one of pass_token_fd and pass_token_file"),
    ("two-output-channels", dict(pass_token_file="ok"), "set exactly one of pass_token_fd and pass_token_file"),
    ("fd-is-stdio", dict(pass_token_fd=2), "RunSpec.pass_token_fd must be an int from 3 to 9"),
    ("fd-above-9", dict(token_input_fd=10), "RunSpec.token_input_fd must be an int from 3 to 9"),
    ("fd-is-bool", dict(token_input_fd=True), "RunSpec.token_input_fd must be an int from 3 to 9"),
    ("same-fd-twice", dict(token_input_fd=4), "token_input_fd and pass_token_fd must differ"),
    ("token-file-escapes", dict(pass_token_fd=None, pass_token_file="../ok"), "pass_token_file '../ok' must be"),
    ("token-file-pre-created", dict(pass_token_fd=None, pass_token_file="h.sh"), "the token would exist before"),
    ("exit-status-zero-mapped", dict(exit_statuses={0: "error"}), "RunSpec.exit_statuses must map non-zero ints"),
    ("unknown-status", dict(exit_statuses={3: "crashed"}), "got 3: 'crashed'"),
    ("exit-status-claims-passed", dict(exit_statuses={3: "passed"}), "got 3: 'passed'"),
    ("exit-status-key-not-int", dict(exit_statuses={"3": "error"}), "got '3': 'error'"),
    ("relative-read-only-path", dict(read_only_paths=("usr/lib",)), "RunSpec.read_only_paths must be a tuple of absolute"),
    ("read-only-paths-as-a-string", dict(read_only_paths="/usr/lib"), "RunSpec.read_only_paths must be"),
    ("unknown-limit", dict(limit_overrides={"heap_bytes": 1}), "RunSpec.limit_overrides: unknown resource limit"),
    ("negative-limit", dict(limit_overrides={"processes": -1}), "RunSpec.limit_overrides: ResourceLimits.processes"),
    ("empty-oom-marker", dict(out_of_memory_markers=("",)), "RunSpec.out_of_memory_markers must be a tuple of non-empty"),
    ("oom-markers-as-a-string", dict(out_of_memory_markers="MemoryError"), "RunSpec.out_of_memory_markers must be"),
    ("build-timeout-zero", dict(build_timeout_s=0), "RunSpec.build_timeout_s must be a number of seconds above 0"),
    ("build-timeout-as-text", dict(build_timeout_s="60"), "RunSpec.build_timeout_s must be a number"),
]


def test_a_valid_spec_builds():
    spec = RunSpec(**VALID, exit_statuses={3: "syntax_error"}, read_only_paths=("/usr/lib",),
                   limit_overrides={"address_space_bytes": None}, out_of_memory_markers=("MemoryError",))
    assert spec.pass_token_fd == 4
    assert RunSpec(files={"h.sh": "true"}, run=("/bin/sh", "h.sh"), pass_token_file="ok").pass_token_file == "ok"


@pytest.mark.parametrize(("fields", "message"), [row[1:] for row in BROKEN], ids=[row[0] for row in BROKEN])
def test_a_broken_field_is_named(fields, message):
    with pytest.raises(InvalidRunSpecError) as raised:
        RunSpec(**{**VALID, **fields})
    assert message in str(raised.value)


def test_every_problem_is_listed_and_the_error_is_a_workbench_and_value_error():
    with pytest.raises(InvalidRunSpecError) as raised:
        RunSpec(files={"../x": ""}, run=[], pass_token_fd=1)
    text = str(raised.value)
    assert "RunSpec.files" in text and "RunSpec.run" in text and "RunSpec.pass_token_fd" in text
    assert isinstance(raised.value, WorkbenchError) and isinstance(raised.value, ValueError)


def test_replace_validates_again():
    with pytest.raises(InvalidRunSpecError, match="RunSpec.run"):
        dataclasses.replace(RunSpec(**VALID), run=[])
