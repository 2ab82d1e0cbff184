"""``workbench score --resume`` refuses settings that would change a finished row.

A new user's probe: ``score DATA -m chrf -o out --limit 5``, then ``--resume --limit 10
--generation-column reference`` kept the 5 old rows, scored 5 rows of another column and
printed one mean over both. Real command line (typer's runner), real ICE-Score rows, chrF (no
LLM)."""

from __future__ import annotations

import json
import shutil

import pytest

from typer.testing import CliRunner

from workbench.cli import app


def _score(slice_path, out, *extra):
    return CliRunner().invoke(app, ["score", str(slice_path), "-m", "chrf", "-o", str(out), *extra])


def _rows(out):
    return [json.loads(line) for line in (out / "scores.jsonl").read_text().splitlines()]


def test_a_changed_generation_column_is_refused_and_the_folder_is_left_as_it_was(ice_slice, tmp_path):
    out = tmp_path / "s8"
    first = _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e")
    assert first.exit_code == 0, first.output
    before = {name: (out / name).read_bytes() for name in ("scores.jsonl", "scores_wide.jsonl", "run.json")}

    again = _score(ice_slice, out, "--resume", "--limit", "4", "--generation-column", "reference")

    assert again.exit_code == 1, again.output
    message = " ".join(again.output.split())
    assert "cannot resume" in message
    assert "--generation-column 'completion_multipl_e' -> 'reference'" in message
    assert "fresh --output" in message and "--overwrite instead of --resume" in message
    assert {name: (out / name).read_bytes() for name in before} == before


def test_every_changed_setting_is_named_with_both_values(ice_slice, tmp_path):
    """The data source (another file with the same rows), --no-prompt and --stop changed at once:
    the message names all three, not only the first."""
    out = tmp_path / "out"
    assert _score(ice_slice, out, "--generation-column", "completion_multipl_e").exit_code == 0
    copy = tmp_path / "copy.jsonl"
    shutil.copy(ice_slice, copy)
    again = _score(copy, out, "--resume", "--generation-column", "completion_multipl_e", "--no-prompt",
                   "--stop", "humaneval")
    assert again.exit_code == 1, again.output
    message = " ".join(again.output.split())
    assert f"data source '{ice_slice.resolve()}' -> '{copy.resolve()}'" in message
    assert "without --no-prompt -> --no-prompt;" in message  # as typed, not "--no-prompt False -> True"
    assert "False" not in message and "True" not in message
    # as the command line writes it, not as a Python list ("--stop [] -> ['humaneval']", a new-user probe)
    assert "without --stop -> --stop humaneval;" in message  # review39b: not "--stop none", a value


def test_a_changed_list_setting_is_written_as_the_command_line_gives_it():
    """A list value in the refusal is written as a user gives the option: entries of a repeatable
    option (``--stop``, one value per flag) shell-quoted and apart, a comma-list option's joined by
    commas (an empty list: test_an_empty_list_setting_is_the_option_left_out_not_the_value_none)."""
    import pytest

    from workbench.resume_guard import ResumeMismatchError, check_resume_settings
    from workbench.score.config import ScoreConfig

    with pytest.raises(ResumeMismatchError) as refused:
        check_resume_settings({"stop": ["humaneval"], "method": ["chrf"]},
                              {"stop": ["humaneval", "\\n\\n"], "method": ["chrf", "ice-score"]},
                              made_with="the run folder was scored with", record="out/run.json",
                              options=ScoreConfig.options())
    message = refused.value.render(lambda name: "--" + name.replace("_", "-"))
    assert "--stop humaneval -> humaneval '\\n\\n'" in message, message
    assert "--method chrf -> chrf,ice-score" in message, message
    assert "[" not in message, message


def test_an_empty_list_setting_is_the_option_left_out_not_the_value_none():
    """review39b: an empty list was written ``none`` (``--stop none -> humaneval``), which is no way the
    command line gives it: ``--stop none`` is the stop sequence "none" (it cuts a generation at the first
    "none"), and rerunning with it is refused again. The empty side is now the option left out, as a
    switch's is: ``without --stop -> --stop humaneval``; under ``workbench run``, ``without [score] stop``."""
    import pytest

    from workbench.data.stop_sequences import resolve_stop_sequences
    from workbench.option_words import config_words
    from workbench.resume_guard import ResumeMismatchError, check_resume_settings
    from workbench.score.config import ScoreConfig

    assert resolve_stop_sequences(["none"]) == ("none",)  # what "--stop none" would set

    def refusal(previous, current, name_of):
        with pytest.raises(ResumeMismatchError) as refused:
            check_resume_settings(previous, current, made_with="the run folder was scored with",
                                  record="out/run.json", options=ScoreConfig.options())
        return refused.value.render(name_of)

    flags = lambda name: "--" + name.replace("_", "-")  # noqa: E731
    added = refusal({"stop": []}, {"stop": ["humaneval"]}, flags)
    assert "without --stop -> --stop humaneval;" in added, added
    dropped = refusal({"stop": ["humaneval", "\\n\\n"], "carry": ["passed"]}, {"stop": [], "carry": []}, flags)
    assert "--stop humaneval '\\n\\n' -> without --stop; --carry passed -> without --carry;" in dropped, dropped
    assert "none" not in dropped, dropped
    with config_words(lambda name: f"[score] {name}"):
        worded = refusal({"stop": []}, {"stop": ["humaneval"]}, lambda name: f"[score] {name}")
    assert "without [score] stop -> [score] stop humaneval;" in worded, worded


def test_a_changed_switch_is_written_as_its_flags_or_as_the_config_key():
    """A switch in the refusal is the flag a user types for each value (``--reference -> --no-reference``; a
    switch with one flag, ``--no-prompt``, is that flag or its absence), not Python's ``False -> True``; under
    ``workbench run`` (config words) the config key with TOML's ``true``/``false``."""
    import pytest

    from workbench.option_words import config_words
    from workbench.options import flag_of
    from workbench.resume_guard import ResumeMismatchError, check_resume_settings
    from workbench.score.config import ScoreConfig

    def refusal(previous, current, name_of):
        with pytest.raises(ResumeMismatchError) as refused:
            check_resume_settings(previous, current, made_with="the run folder was scored with",
                                  record="out/run.json", options=ScoreConfig.options())
        return refused.value.render(name_of)

    message = refusal({"reference": True, "no_prompt": True}, {"reference": False, "no_prompt": False}, flag_of)
    assert "other settings (out/run.json): --reference -> --no-reference; --no-prompt -> without --no-prompt;" \
        in message, message
    with config_words(lambda name: f"[score] {name}"):
        message = refusal({"reference": False}, {"reference": True}, lambda name: f"[score] {name}")
    assert "(out/run.json): [score] reference false -> true;" in message, message


def test_a_larger_limit_and_other_workers_still_resume(ice_slice, tmp_path):
    out = tmp_path / "out"
    assert _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e").exit_code == 0
    kept = (out / "scores.jsonl").read_text().splitlines()
    # the same data by another spelling of its path is the same source
    relative = ice_slice.parent / "." / ice_slice.name
    again = _score(relative, out, "--resume", "--limit", "4", "--generation-column", "completion_multipl_e",
                   "--workers", "2", "--max-failures", "1")
    assert again.exit_code == 0, again.output
    report = json.loads((out / "run.json").read_text())
    assert report["rows_written"] == 2 and report["resumed_rows"] == 2
    assert (out / "scores.jsonl").read_text().splitlines()[:2] == kept
    assert len(_rows(out)) == 4


def test_the_default_prompt_column_and_an_explicit_prompt_are_one_setting(ice_slice, tmp_path):
    """The default reads the column ``prompt``: naming it on the resume (or the other way round)
    changes nothing, so it resumes; another prompt column is refused."""
    out = tmp_path / "out"
    assert _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e").exit_code == 0
    again = _score(ice_slice, out, "--resume", "--limit", "3", "--generation-column", "completion_multipl_e",
                   "--prompt-column", "prompt")
    assert again.exit_code == 0, again.output
    back = _score(ice_slice, out, "--resume", "--limit", "4", "--generation-column", "completion_multipl_e")
    assert back.exit_code == 0, back.output
    assert len(_rows(out)) == 4
    other = _score(ice_slice, out, "--resume", "--limit", "5", "--generation-column", "completion_multipl_e",
                   "--prompt-column", "reference")
    assert other.exit_code == 1 and "--prompt-column 'prompt' -> 'reference'" in " ".join(other.output.split())


def test_an_old_run_record_without_the_new_settings_still_resumes(ice_slice, tmp_path):
    """A run.json written before the columns and the data source were recorded (its ``config``
    lacks them, and the oldest ones have no ``options`` either) resumes without a complaint."""
    out = tmp_path / "out"
    assert _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e").exit_code == 0
    run_file = out / "run.json"
    record = json.loads(run_file.read_text())
    for key in ("source", "task_column", "sample_column", "generation_column", "reference_column",
                "prompt_column", "no_prompt", "split", "model_identity", "api_base"):
        record["config"].pop(key, None)
    record.pop("options", None)
    run_file.write_text(json.dumps(record))

    again = _score(ice_slice, out, "--resume", "--limit", "3", "--generation-column", "completion_multipl_e")

    assert again.exit_code == 0, again.output
    assert "Error" not in again.output
    assert len(_rows(out)) == 3


def test_a_record_with_options_but_no_recorded_columns_is_still_checked(ice_slice, tmp_path):
    """A run.json of the version before this check kept every option in force (``options``) but
    not the columns in ``config``: the columns are read from there, so the probe's folder is
    refused too."""
    out = tmp_path / "out"
    assert _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e").exit_code == 0
    run_file = out / "run.json"
    record = json.loads(run_file.read_text())
    del record["config"]["generation_column"]
    run_file.write_text(json.dumps(record))
    before = (out / "scores.jsonl").read_bytes()

    again = _score(ice_slice, out, "--resume", "--limit", "4", "--generation-column", "reference")

    assert again.exit_code == 1, again.output
    assert "--generation-column 'completion_multipl_e' -> 'reference'" in " ".join(again.output.split())
    assert (out / "scores.jsonl").read_bytes() == before


def test_a_served_model_on_another_port_resumes_but_another_model_does_not(ice_slice, tmp_path):
    """Where a served model answers (``--api-base``: a restarted server may come back on another
    port) is no reason to refuse; which model answers is. The run.json is edited to what a
    p-correct run against ``openai/judge @ port 8080`` records, and resumed as chrF: the model
    settings are compared only when the resumed run calls a model, so this checks the record
    through ``_check_resume_compatible`` directly."""
    from workbench.score.job import _check_resume_compatible

    out = tmp_path / "out"
    assert _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e").exit_code == 0
    run_file = out / "run.json"
    record = json.loads(run_file.read_text())
    record["config"].update(model="openai/judge", model_identity="openai/judge", api_base="http://127.0.0.1:8080/v1")
    run_file.write_text(json.dumps(record))
    moved = {**record["config"], "api_base": "http://127.0.0.1:9090/v1"}
    _check_resume_compatible(run_file, moved)  # no error
    with pytest.raises(Exception, match="openai/other"):
        _check_resume_compatible(run_file, {**moved, "model": "openai/other", "model_identity": "openai/other"})


def test_a_language_alias_and_its_name_are_one_setting(ice_slice, tmp_path):
    """``-l py`` then ``-l python``: one plugin, so the run resumes (probe 24), and run.json records the name."""
    out = tmp_path / "alias"
    first = _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e", "-l", "py")
    assert first.exit_code == 0, first.output
    assert json.loads((out / "run.json").read_text())["config"]["language"] == "python"
    again = _score(ice_slice, out, "--resume", "--limit", "4", "--generation-column", "completion_multipl_e",
                   "-l", "python")
    assert again.exit_code == 0, again.output
    assert len(_rows(out)) == 4


def test_a_stop_sequence_with_a_real_newline_is_shown_escaped_and_its_escape_resumes(ice_slice, tmp_path):
    """Review fix39c: a stop sequence holding a real newline (TOML's ``"\\n"``, bash's ``$'\\n'``) was written
    into the one-line refusal as a raw line break (``--stop '<newline><newline>' -> humaneval``). It is shown
    escaped as the command line takes it (``'\\n\\n'``), and a resume that passes that escape (which reads as
    the same stop sequence) is the same setting, not refused again."""
    out = tmp_path / "out"
    first = _score(ice_slice, out, "--limit", "2", "--generation-column", "completion_multipl_e", "--stop", "\n\n")
    assert first.exit_code == 0, first.output
    again = _score(ice_slice, out, "--resume", "--limit", "2", "--generation-column", "completion_multipl_e",
                   "--stop", "humaneval")
    assert again.exit_code == 1, again.output
    assert "--stop '\\n\\n' -> humaneval;" in " ".join(again.output.split()), again.output
    assert "'\n" not in again.output and "\n'" not in again.output, again.output
    kept = _score(ice_slice, out, "--resume", "--limit", "3", "--generation-column", "completion_multipl_e",
                  "--stop", "\\n\\n")
    assert kept.exit_code == 0, kept.output
    assert len(_rows(out)) == 3


def test_a_stop_sequence_is_shown_as_a_command_line_reads_it():
    """The display of :func:`check_resume_settings`: control characters escaped (``\\n``, ``\\t``, ``\\r``), a
    backslash before one doubled so the escape reads back as the same sequence; typed escapes as typed."""
    from workbench.data.stop_sequences import decode_escapes
    from workbench.resume_guard import ResumeMismatchError, check_resume_settings
    from workbench.score.config import ScoreConfig

    new = ["\n\tdef ", "a\\\nb", "\\n#"]
    with pytest.raises(ResumeMismatchError) as refused:
        check_resume_settings({"stop": []}, {"stop": new}, made_with="the run folder was scored with",
                              record="out/run.json", options=ScoreConfig.options())
    message = refused.value.render(lambda name: "--" + name.replace("_", "-"))
    assert "\n" not in message and "\t" not in message, repr(message)
    assert "without --stop -> --stop '\\n\\tdef ' 'a\\\\\\nb' '\\n#';" in message, message
    import shlex

    shown = shlex.split(message.split("-> --stop ")[1].split(";")[0])
    assert [decode_escapes(text) for text in shown] == [decode_escapes(text) for text in new]
