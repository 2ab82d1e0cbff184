"""A notebook user's swapped or missing arguments to the Python API get a TypeError that names the
parameter and the call, before anything is loaded or run (no LLM, no data loaded)."""

from __future__ import annotations

import pytest

from workbench import (
    ExecutionConfig, ScoreConfig, load_config, run_bias, run_correlate,
    run_dedup, run_execute, run_pipeline, run_score,
)


@pytest.mark.parametrize("call, message", [
    (lambda: run_dedup("humaneval", "out"), r"run_dedup\(source, config, output_dir=...\): config must be a DedupConfig, not str"),
    (lambda: run_score("humaneval", "out", None), r"config must be a ScoreConfig, not str \('out'\)"),
    (lambda: run_score("humaneval", ScoreConfig(method=["chrf"]), None), r"output_dir must be a str or PathLike, not NoneType"),
    (lambda: run_execute("gens.jsonl", ExecutionConfig()), r"run_execute\(generations, output, config\): output must be"),
    # "must be a ExecutionConfig": the article follows the type's name
    (lambda: run_execute("gens.jsonl", "out.jsonl", "python"), r"run_execute\(generations, output, config\): config must "
                                                               r"be an ExecutionConfig, not str"),
    # session 35: run_execute takes (generations, output, config), run_score (source, config, output_dir); the
    # other's order is named as such rather than as "config must be an ExecutionConfig, not str"
    (lambda: run_execute("gens.jsonl", ExecutionConfig(), "out.jsonl"),
     r"run_execute\(generations, output, config\): output and config are swapped \(output got an ExecutionConfig, "
     r"config got str 'out.jsonl'\); run_execute takes its output before its config, unlike run_score"),
    (lambda: run_score("humaneval", "out", ScoreConfig(method=["chrf"])),
     r"run_score\(source, config, output_dir\): config and output_dir are swapped \(config got str 'out', output_dir "
     r"got a ScoreConfig\); run_score takes its config before its output folder, unlike run_execute"),
    (lambda: run_correlate("scores.jsonl", "codebleu"), r"config must be a CorrelateConfig, not str"),
    (lambda: run_bias("dedup", "scores.jsonl", "passed"), r"config must be a BiasConfig, not str"),
    (lambda: run_pipeline("configs/humaneval.toml"), r"run_pipeline\(load_config\(path\)\): config must be a PipelineConfig"),
    (lambda: load_config("configs/humaneval.toml", overrides="score.limit=5"), r"write overrides=\['score.limit=5'\]"),
    # probe 29: path arguments got os.fspath's "expected str, bytes or os.PathLike object, not int"
    (lambda: run_dedup("humaneval", output_dir=123), r"run_dedup\(source, config, output_dir=...\): output_dir must be "
                                                      r"a str or PathLike or None, not int \(123\)"),
    (lambda: run_correlate("scores.jsonl", json_path=1), r"json_path must be a str or PathLike or None, not int \(1\)"),
    (lambda: run_bias("dedup", "scores.jsonl", plot_path=2.0), r"plot_path must be a str or PathLike or None, not float"),
])
def test_a_wrong_argument_is_a_type_error_naming_it(call, message):
    with pytest.raises(TypeError, match=message):
        call()


def test_a_dataframe_is_a_table_for_correlate_and_a_clear_error_where_a_path_is_needed():
    """Real bundled data, as a notebook holds it: a pandas DataFrame."""
    from workbench.correlate import correlate
    from workbench.data.loading import load_records
    from workbench.errors import DataError

    table = next(iter(load_records("humaneval-codex-python").splits.values())).select(range(120))
    frame = table.to_pandas()
    from_frame = correlate(frame, metrics=["codebleu"], n_resamples=50)
    from_dataset = correlate(table, metrics=["codebleu"], n_resamples=50)
    assert from_frame.metrics["codebleu"].pooled["kendall"].value == from_dataset.metrics["codebleu"].pooled["kendall"].value
    # probe 29: swapped arguments (run_bias(df, "out", cfg)) got a generic os.fspath TypeError; each path
    # argument now names itself and the type it got, and what to pass instead
    from workbench import BiasConfig

    with pytest.raises(TypeError, match=r"run_bias\(dedup_output, metrics_source, config\): dedup_output must be a "
                                        r"str or PathLike, not DataFrame; the folder workbench dedup -o wrote"):
        run_bias(frame, "out_api", BiasConfig(metric=["codebleu"]))
    for call, name in ((lambda: run_dedup(frame), "source"), (lambda: run_execute(frame, "out.jsonl"), "generations"),
                       (lambda: run_score(frame, ScoreConfig(method=["chrf"]), "out"), "source")):
        with pytest.raises(TypeError, match=rf"{name} must be a str or PathLike.*, not DataFrame; a data source is a "
                                            r"path, a bundled name or a hub id: write a table to a file first \(pandas"):
            call()
    with pytest.raises(DataError, match="not DataFrame; write a table to a file first"):  # the loader itself alike
        load_records(frame)


def test_a_path_object_is_taken_where_an_option_names_a_file_and_a_negative_temperature_is_refused(tmp_path):
    from workbench import CorrelateConfig, DedupConfig
    from workbench.options import OptionError

    assert DedupConfig(against=tmp_path / "solutions.jsonl").against == str(tmp_path / "solutions.jsonl")
    assert CorrelateConfig(results=tmp_path / "results.jsonl").results == str(tmp_path / "results.jsonl")
    with pytest.raises(OptionError, match="temperature must be >= 0, not -1.0"):
        ScoreConfig(method=["chrf"], temperature=-1)


def test_a_dedup_run_reads_in_a_notebook_as_its_headline():
    from workbench import DedupConfig

    run = run_dedup("humaneval", DedupConfig(code_column="canonical_solution", id_column="task_id", min_tokens=5))
    assert repr(run).startswith("DedupRun(source='humaneval', files=164, clusters=") and len(repr(run)) < 300
