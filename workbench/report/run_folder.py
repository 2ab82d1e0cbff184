"""Reading a run folder written by ``workbench run`` (or by the single commands) without ever
failing on a missing, partial or damaged file: every problem becomes a sentence in
:attr:`RunFolder.problems` that the report shows.

Layout (paths relative to the run folder)::

    run.json                      pipeline record: config, stages (status, seconds, argv, error)
    data.jsonl                    the dataset rows
    decontaminate/report.json     dedup --against (near-duplicates of the benchmark)
    decontaminate/contamination.csv
    dedup/report.json             in-set dedup; clusters.json, pairs.csv, removed.csv
    execute/results.jsonl         one row per sample; execute/summary.json
    score/subset.jsonl            the stratified subset given to the LLM methods
    score/llm/                    scores.jsonl, scores_wide.jsonl, traces.jsonl, run.json
    score/all/                    cheap metrics on every row (same files)
    correlate/subset.json         workbench correlate --json on the subset
    correlate/all.json            ... on all rows
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: the stages the report has a section for, in pipeline order, with the files that show they ran
STAGE_OUTPUTS: dict[str, tuple[str, ...]] = {
    "decontaminate": ("decontaminate/report.json",),
    "dedup": ("dedup/report.json",),
    "execute": ("execute/results.jsonl",),
    "score": ("score/llm/scores.jsonl", "score/all/scores.jsonl"),
    "correlate": ("correlate/subset.json", "correlate/all.json"),
}


@dataclass
class RunFolder:
    """A run folder and the problems met while reading it.

    Args:
        path: the run folder.

    Attributes:
        problems: one sentence per unreadable file or line (shown in the report).
    """

    path: Path
    problems: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.path = Path(self.path)

    def exists(self, relative: str) -> bool:
        return (self.path / relative).is_file()

    def json(self, relative: str) -> Any | None:
        """Return the parsed JSON file, or ``None`` when it is missing or unreadable (recorded)."""
        target = self.path / relative
        if not target.is_file():
            return None
        try:
            return json.loads(target.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as error:
            self.problems.append(f"{relative}: unreadable JSON ({type(error).__name__}: {error})")
            return None

    def jsonl(self, relative: str) -> list[dict[str, Any]] | None:
        """Return the rows of a JSON Lines file, or ``None`` when it is missing.

        Lines that do not parse as a JSON object (e.g. a line torn by a killed run) are skipped
        and counted in :attr:`problems`, so finished rows are never lost to one bad line.
        """
        target = self.path / relative
        if not target.is_file():
            return None
        rows: list[dict[str, Any]] = []
        bad = 0
        try:
            with target.open("rb") as handle:
                for line in handle:
                    text = line.strip()
                    if not text:
                        continue
                    try:
                        row = json.loads(text)
                    except ValueError:
                        bad += 1
                        continue
                    if isinstance(row, dict):
                        rows.append(row)
                    else:
                        bad += 1
        except OSError as error:
            self.problems.append(f"{relative}: unreadable ({error})")
            return None
        if bad:
            self.problems.append(f"{relative}: {bad} line(s) are not JSON objects and were skipped")
        return rows

    def csv(self, relative: str) -> list[dict[str, str]] | None:
        """Return the rows of a CSV file with a header, or ``None`` when it is missing or unreadable."""
        target = self.path / relative
        if not target.is_file():
            return None
        try:
            with target.open(newline="", encoding="utf-8") as handle:
                return list(csv.DictReader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as error:
            self.problems.append(f"{relative}: unreadable CSV ({type(error).__name__}: {error})")
            return None


def sample_key(task_id: Any, sample_id: Any) -> tuple[str, str]:
    """The (task, sample) join key used by every stage (ids compared as strings)."""
    return (str(task_id), str(sample_id))


def dedup_id(task_id: Any, sample_id: Any) -> str:
    """The row id ``workbench dedup --id-column task_id,sample_id`` writes (``"HumanEval/5:44"``)."""
    return f"{task_id}:{sample_id}"
