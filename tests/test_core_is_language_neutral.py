"""The core names no language beyond the built-in Python plugin: Java and C++ live only in
plugins/. Docstrings and comments may mention them (they are documentation); identifiers
and string literals in code may not."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import workbench

CORE = Path(workbench.__file__).resolve().parent
PLUGIN_LANGUAGES = re.compile(r"java|cpp|c\+\+|g\+\+|cxx|hpp|\bjvm\b", re.IGNORECASE)
# llama.cpp / llama_cpp / xllamacpp (the local-model runtime) names no language
NOT_A_LANGUAGE = re.compile(r"llama[._-]?cpp", re.IGNORECASE)

# Known, reported exceptions: (file relative to workbench/, the offending text).
ALLOWED: set[tuple[str, str]] = set()
# Files that name the Java *runtime* Spark runs on (dedup --engine spark checks for a JVM 17+ and
# says how to install one; spark_source.py reads Parquet footers and spark_output.py resolves Hadoop
# paths through Spark's JVM gateway): there "java"/"jvm" is the runtime, not a plugin language.
JVM_RUNTIME_FILES = {"dedup/spark.py", "dedup/spark_source.py", "dedup/spark_output.py"}
JVM_RUNTIME = re.compile(r"java|\bjvm\b", re.IGNORECASE)


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = getattr(node, "body", [])
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _code_mentions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = _docstring_nodes(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            texts = [node.value]
        elif isinstance(node, ast.Name):
            texts = [node.id]
        elif isinstance(node, ast.Attribute):
            texts = [node.attr]
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            texts = [alias.name for alias in node.names] + [getattr(node, "module", None) or ""]
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            texts = [node.name]
        else:
            continue
        found += [text for text in texts if PLUGIN_LANGUAGES.search(NOT_A_LANGUAGE.sub("", text))]
    return found


def test_core_code_names_no_plugin_language():
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        relative = path.relative_to(CORE).as_posix()
        for text in _code_mentions(path):
            if relative in JVM_RUNTIME_FILES and not PLUGIN_LANGUAGES.search(JVM_RUNTIME.sub("", text)):
                continue
            if (relative, text) not in ALLOWED:
                offenders.append(f"{relative}: {text!r}")
    assert offenders == []


def test_the_check_sees_code_but_not_docstrings(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text('"""Mentions Java in a docstring."""\n# and C++ in a comment\nRUNNER = "javac"\n')
    assert _code_mentions(sample) == ["javac"]
