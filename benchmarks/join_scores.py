"""Join the score columns of several ``workbench score`` run folders into one table for ``workbench correlate``.

Each variant of a judge (score mode, final step, reference or not, model) is its own run folder,
and every folder's ``scores_wide.jsonl`` names its column after the method (``p-correct``). This
script gives each column the name of its variant and joins the folders on (task_id, sample_id):

    python benchmarks/join_scores.py table.jsonl \\
        p-correct-1.5b=runs/q15/p-correct:p-correct ice-expected-1.5b=runs/q15/expected:ice-score

A sample a folder has no ok row for gets ``null`` in that column (``correlate`` counts it as
missing, never as 0). The other columns (``passed``, ``codebleu`` ... carried by the runs) are
taken from the first folder that has the sample. Prints one line per column: rows with a value.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def _spec(text: str) -> tuple[str, Path, str]:
    try:
        name, rest = text.split("=", 1)
        folder, method = rest.rsplit(":", 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=RUN_FOLDER:METHOD") from None
    return name, Path(folder), method


def join(output: Path, specs: list[tuple[str, Path, str]]) -> dict[str, int]:
    """Write the joined table; return column name -> rows with a value."""
    methods = {method for _, _, method in specs}
    table: dict[tuple[str, str], dict] = {}
    filled = {name: 0 for name, _, _ in specs}
    for name, folder, method in specs:
        path = folder / "scores_wide.jsonl"
        if not path.exists():
            raise SystemExit(f"{path} does not exist: run that variant first")
        for line in path.open():
            wide = json.loads(line)
            key = (str(wide["task_id"]), str(wide["sample_id"]))
            row = table.setdefault(key, {k: v for k, v in wide.items() if k not in methods})
            if method not in wide:
                raise SystemExit(f"{path} has no column {method!r}")
            row[name] = wide[method]
            filled[name] += wide[method] is not None
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
    parser.add_argument("specs", nargs="+", type=_spec, metavar="NAME=RUN_FOLDER:METHOD")
    args = parser.parse_args()
    for name, count in join(args.output, args.specs).items():
        print(f"{name}: {count} rows")


if __name__ == "__main__":
    main()
