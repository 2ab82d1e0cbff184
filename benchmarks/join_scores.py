"""Join the score columns of several ``workbench score`` run folders into one table for ``workbench correlate``.

Each variant of a judge (score mode, final step, reference or not, model) is its own run folder,
and every folder's ``scores_wide.jsonl`` names its column after the method (``p-correct``). This
script gives each column the name of its variant and joins the folders on (task_id, sample_id):

    python benchmarks/join_scores.py table.jsonl \\
        p-correct-1.5b=runs/q15/p-correct:p-correct ice-expected-1.5b=runs/q15/expected:ice-score

A fourth part ``:FIELD`` takes another per-sample field of ``scores.jsonl`` instead of the score,
e.g. ``ice-sampled=runs/q15/expected:ice-score:score_sampled``: the score written in the answer of
an expected-mode run (the same calls, read without the token probabilities).

``--base TABLE`` starts from an earlier joined table (e.g. a committed
``benchmarks/results/fidelity_session18_100.scores.jsonl``) and adds the new columns to its rows,
so a table grows across sessions whose run folders are gone; a new column must not already be in
the base (the script stops rather than overwrite a committed result).

A sample a folder has no ok row for gets ``null`` in that column (``correlate`` counts it as
missing, never as 0). The other columns (``passed``, ``codebleu`` ... carried by the runs) are
taken from the first folder that has the sample. Prints one line per column: rows with a value.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _spec(text: str) -> tuple[str, Path, str, str | None]:
    try:
        name, rest = text.split("=", 1)
        parts = rest.split(":")
        folder, method = parts[0], parts[1]
        field = parts[2] if len(parts) == 3 else None
        if len(parts) > 3:
            raise ValueError
    except (ValueError, IndexError):
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=RUN_FOLDER:METHOD[:FIELD]") from None
    return name, Path(folder), method, field


def _field_values(folder: Path, method: str, field: str) -> dict[tuple[str, str], object]:
    """(task_id, sample_id) -> ``field`` of the sample's ok row of ``method`` in scores.jsonl."""
    path = folder / "scores.jsonl"
    values: dict[tuple[str, str], object] = {}
    for line in path.open():
        row = json.loads(line)
        if row.get("method") != method or row.get("status") != "ok":
            continue
        if field not in row:
            raise SystemExit(f"{path} rows have no field {field!r}")
        values[(str(row["task_id"]), str(row["sample_id"]))] = row[field]
    return values


def join(output: Path, specs: list[tuple[str, Path, str, str | None]],
         base: Path | None = None) -> dict[str, int]:
    """Write the joined table; return column name -> rows with a value.

    Args:
        output: the joined JSONL table to write (replaced atomically).
        specs: (column name, run folder, method, optional scores.jsonl field) per new column.
        base: an earlier joined table whose rows and columns are kept; None starts empty.

    Raises:
        SystemExit: a run folder or column is missing, or a new column is already in ``base``.
    """
    methods = {method for _, _, method, _ in specs}
    table: dict[tuple[str, str], dict] = {}
    if base is not None:
        for line in base.open():
            row = json.loads(line)
            table[(str(row["task_id"]), str(row["sample_id"]))] = row
        taken = sorted({name for name, *_ in specs} & {key for row in table.values() for key in row})
        if taken:
            raise SystemExit(f"{base} already has the column(s) {', '.join(taken)}: choose new names")
    filled = {name: 0 for name, _, _, _ in specs}
    for name, folder, method, field in specs:
        path = folder / "scores_wide.jsonl"
        if not path.exists():
            raise SystemExit(f"{path} does not exist: run that variant first")
        fields = _field_values(folder, method, field) if field else None
        for line in path.open():
            wide = json.loads(line)
            key = (str(wide["task_id"]), str(wide["sample_id"]))
            row = table.setdefault(key, {k: v for k, v in wide.items() if k not in methods})
            for column, value in wide.items():  # carried columns a base row lacks
                if column not in methods:
                    row.setdefault(column, value)
            if method not in wide:
                raise SystemExit(f"{path} has no column {method!r}")
            value = wide[method] if fields is None else fields.get(key)
            row[name] = value
            filled[name] += value is not None
    for row in table.values():
        for name in filled:
            row.setdefault(name, None)
    temporary = output.with_name(output.name + ".tmp")
    temporary.write_text("".join(json.dumps(row) + "\n" for row in table.values()))
    temporary.replace(output)
    return filled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("output", type=Path)
    parser.add_argument("specs", nargs="+", type=_spec, metavar="NAME=RUN_FOLDER:METHOD[:FIELD]")
    parser.add_argument("--base", type=Path, help="an earlier joined table to add the new columns to")
    args = parser.parse_args()
    for name, count in join(args.output, args.specs, args.base).items():
        print(f"{name}: {count} rows")


if __name__ == "__main__":
    main()
