"""JSON schemas of the structured LLM answers, one per step.

They are small on purpose: a 0.5B local model must be able to follow them, and llama.cpp
turns them into a decoding grammar (``response_format`` ``json_schema``). No ``maxLength``:
llama.cpp expands a string bound into nested optional rules, and bounds of a few hundred
characters on several fields made it reject the grammar ("number of rules ... exceeds sane
defaults"); only list lengths are bounded. Every answer is
validated against its schema; a failure gets one repair turn, then a recorded
``parse_error`` (see :meth:`workbench.llm.client.LLMClient.complete_json`).
"""

from __future__ import annotations

from typing import Any

#: the declared score scale of the LLM methods: ICE-Score's 0-4 functional correctness
SCORE_MIN, SCORE_MAX = 0, 4

_SCORE = {"type": "integer", "minimum": SCORE_MIN, "maximum": SCORE_MAX}
_DIFFERENCES = {"type": "array", "items": {"type": "string"}, "maxItems": 8}

#: DSA-CQE step 3: the description of one sub-code and the names it defines or changes
ANALYSIS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "symbols": {
            "type": "array",
            "maxItems": 8,
            "items": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "description": {"type": "string", "minLength": 1},
                },
                "required": ["name", "description"],
                "additionalProperties": False,
            },
        },
    },
    "required": ["description", "symbols"],
    "additionalProperties": False,
}

#: DSA-CQE step 4: differences between the semantics, then the score
COMPARE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"differences": _DIFFERENCES, "score": _SCORE},
    "required": ["differences", "score"],
    "additionalProperties": False,
}

#: DSA-CQE simplified: both descriptions, the differences and the score in one answer
SIMPLIFIED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "reference_semantics": {"type": "string"},
        "candidate_semantics": {"type": "string"},
        "differences": _DIFFERENCES,
        "score": _SCORE,
    },
    "required": ["reference_semantics", "candidate_semantics", "differences", "score"],
    "additionalProperties": False,
}


def _without_score(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` less its ``score`` field: what is asked before a p-correct final step."""
    return {**schema, "properties": {k: v for k, v in schema["properties"].items() if k != "score"},
            "required": [k for k in schema["required"] if k != "score"]}


#: DSA-CQE step 4 before a p-correct final step: the differences only (the verdict is asked next)
DIFFERENCES_SCHEMA: dict[str, Any] = _without_score(COMPARE_SCHEMA)

#: DSA-CQE simplified before a p-correct final step: both descriptions and the differences
SEMANTICS_SCHEMA: dict[str, Any] = _without_score(SIMPLIFIED_SCHEMA)
