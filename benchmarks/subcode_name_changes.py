"""How many DSA-CQE sub-codes of real code change their names when a language plugin's map changes.

``dump`` writes, for every program of the bundled corpora, each sub-code's kind, node type, byte
span, ``defines`` and ``uses`` (one JSON line per program), with whatever ``workbench`` and plugins
the interpreter imports; ``compare`` counts the sub-codes whose names differ between two dumps.
Run ``dump`` once with the old checkout on ``PYTHONPATH`` and once with the new one.

What DSA-CQE sends the LLM depends on a sub-code's ``names`` (``defines`` then ``uses``, no
repeats: the exact Semantic Storage lookup, in that order, and the names it may update), so the
changes are counted in three classes: the set of names changed; only their order; only which
of them are defines and which uses (``--inspect`` and traces differ, the prompts do not).

Corpora (``../shared/data``): MultiPL-E Java and C++ prompts + the ICE-Score reference solutions
(161 each) and generations (3,220 each: prompt + completion); HumanEval prompts + canonical
solutions (164) and the ICE-Score Python generations (3,220, prompt + ``completion_multipl_e``).
There is no C corpus.

Usage::

    PYTHONPATH=OLD_TREE:... python benchmarks/subcode_name_changes.py dump old.jsonl
    PYTHONPATH=NEW_TREE:... python benchmarks/subcode_name_changes.py dump new.jsonl
    python benchmarks/subcode_name_changes.py compare old.jsonl new.jsonl
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def programs(data: Path) -> Iterator[tuple[str, str, str, str]]:
    """Yield ``(language, part, program id, code)``; part is ``reference`` or ``generation``."""
    for language in ("java", "cpp"):
        with open(data / f"multipl-e-codex-{language}" / "problems.jsonl", encoding="utf-8") as handle:
            problems = {row["task_id"]: row for row in map(json.loads, handle)}
        grades = json.loads((data / "ice-score" / f"humaneval_{language}_grade.json").read_text(encoding="utf-8"))
        for task in grades:
            prompt = problems[f"HumanEval/{task['task_id']}"]["prompt"]
            yield language, "reference", task["task_id"], prompt + task["snippet"][0]
            for key in (k for k in task if k.isdigit()):
                yield language, "generation", f"{task['task_id']}/{key}", prompt + task[key]
    with gzip.open(data / "humaneval" / "HumanEval.jsonl.gz", "rt", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            yield "python", "reference", row["task_id"], row["prompt"] + row["canonical_solution"]
    with open(data / "ice-score" / "humaneval_python_flat.jsonl", encoding="utf-8") as handle:
        for row in map(json.loads, handle):
            program_id = f"{row['task_id']}/{row['sample_id']}"
            yield "python", "generation", program_id, row["prompt"] + row["completion_multipl_e"]


def dump(path: Path, data: Path) -> int:
    """Write one JSON line per program: ``language``, ``part``, ``id`` and ``subcodes`` (lists
    ``[kind, node type, start byte, end byte, defines, uses]``). Returns the number of programs."""
    from workbench.languages import get_language
    from workbench.score.decompose import decompose

    written = 0
    with open(path, "w", encoding="utf-8") as out:
        for language, part, program_id, code in programs(data):
            decomposition = decompose(code, get_language(language))
            subcodes = [[s.kind.value, s.node_type, s.start_byte, s.end_byte, s.defines, s.uses]
                        for s in decomposition.subcodes]
            out.write(json.dumps({"language": language, "part": part, "id": program_id, "subcodes": subcodes}) + "\n")
            written += 1
    return written


def compare(old_path: Path, new_path: Path) -> dict[tuple[str, str], Counter]:
    """Count, per (language, part), programs and sub-codes, and the sub-codes whose name set,
    name order only, or defines/uses split only changed (and the programs with any, or with a
    name-set change).

    Raises:
        ValueError: the dumps are of different programs or decompositions (another corpus, or a
            change to the sub-code map, which this comparison does not cover).
    """
    stats: dict[tuple[str, str], Counter] = defaultdict(Counter)
    with open(old_path, encoding="utf-8") as old_file, open(new_path, encoding="utf-8") as new_file:
        for old_line, new_line in zip(old_file, new_file, strict=True):
            old, new = json.loads(old_line), json.loads(new_line)
            if old["id"] != new["id"] or [s[:4] for s in old["subcodes"]] != [s[:4] for s in new["subcodes"]]:
                raise ValueError(f"program {old['id']} has other sub-codes in the two dumps")
            counts = stats[(old["language"], old["part"])]
            counts["programs"] += 1
            changed = set()
            for before, after in zip(old["subcodes"], new["subcodes"]):
                counts["sub-codes"] += 1
                if before[4:] == after[4:]:
                    continue
                names_before = list(dict.fromkeys(before[4] + before[5]))
                names_after = list(dict.fromkeys(after[4] + after[5]))
                if set(names_before) != set(names_after):
                    kind = "name set changed"
                elif names_before != names_after:
                    kind = "name order only"
                else:
                    kind = "defines/uses split only"
                counts[kind] += 1
                changed.add(kind)
            counts["programs with a change"] += bool(changed)
            counts["programs with a name-set change"] += "name set changed" in changed
    return stats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    dump_parser = commands.add_parser("dump", help="decompose the corpora and write their sub-code names")
    dump_parser.add_argument("output", type=Path)
    dump_parser.add_argument("--data", type=Path, default=DATA, help="the shared data folder (default ../shared/data)")
    compare_parser = commands.add_parser("compare", help="count the sub-codes whose names changed")
    compare_parser.add_argument("old", type=Path)
    compare_parser.add_argument("new", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        print(f"{dump(args.output, args.data)} programs written to {args.output}")
        return
    columns = ("programs", "sub-codes", "name set changed", "name order only", "defines/uses split only",
               "programs with a change", "programs with a name-set change")
    print("language part        " + " | ".join(columns))
    for (language, part), counts in sorted(compare(args.old, args.new).items()):
        print(f"{language:8} {part:11} " + " | ".join(f"{counts[c]:>{len(c)}}" for c in columns))


if __name__ == "__main__":
    main()
