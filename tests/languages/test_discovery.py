"""Plugin discovery with broken and clashing plugins: real distributions (``*.dist-info`` folders
with ``entry_points.txt``) on ``sys.path``, found by ``importlib.metadata`` and registered with
pluggy, as ``pip install`` would leave them. One broken plugin must not take the others down;
conflicts are refused where they matter, never settled silently."""

from __future__ import annotations

import dataclasses
import json
import re
import sys
import textwrap

import pytest
from typer.testing import CliRunner

from workbench.cli import app
from workbench.languages import get_language, installed_plugins, language_for_path, plugin_problems, refresh_plugins
from workbench.languages.registry import LanguageConflictError, LanguageGrammarError

#: a plugin module: a language on the Python grammar under another name (``{name}``, ``{ext}``),
#: with more class body lines in ``{extra}``
PLUGIN = '''
from workbench.languages import LanguagePlugin, hookimpl
from workbench.languages.python_plugin import PythonLanguage


class Toy(PythonLanguage):
    name = "{name}"
    aliases = ()
    extensions = ("{ext}",)
    runner = None
{extra}

@hookimpl
def workbench_languages():
    return [Toy()]
'''


def toy(name: str, ext: str, extra: str = "") -> str:
    """The source of a plugin module for language ``name`` (files ``ext``)."""
    return PLUGIN.format(name=name, ext=ext, extra=textwrap.indent(textwrap.dedent(extra), "    "))


@pytest.fixture
def install(tmp_path):
    """``install(distribution, entry_points, modules)``: a distribution on ``sys.path`` whose
    ``workbench.languages`` entry points are ``{name: value}`` and whose modules are
    ``{module_name: source}``; everything is taken away again after the test."""
    added: list[str] = []

    def _install(distribution: str, entry_points: dict[str, str], modules: dict[str, str]) -> None:
        root = tmp_path / distribution
        info = root / f"{distribution.replace('-', '_')}-1.0.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 1.0\n")
        lines = "".join(f"{name} = {value}\n" for name, value in entry_points.items())
        (info / "entry_points.txt").write_text(f"[workbench.languages]\n{lines}")
        for module, source in modules.items():
            (root / f"{module}.py").write_text(textwrap.dedent(source))
            added.append(module)
        sys.path.insert(0, str(root))
        refresh_plugins()

    yield _install
    sys.path[:] = [entry for entry in sys.path if not entry.startswith(str(tmp_path))]
    for module in added:
        sys.modules.pop(module, None)
    refresh_plugins()


def _names() -> list[str]:
    return [info.plugin.name for info in installed_plugins()]


def test_a_plugin_that_does_not_import_is_left_out_and_the_others_work(install):
    install("broken-plugin", {"broken": "broken_module"}, {"broken_module": "raise RuntimeError('config missing')\n"})
    install("typo-plugin", {"typo": "no_such_module"}, {})
    install("toy-plugin", {"toy": "toy_module"}, {"toy_module": toy("toy", ".toy")})
    assert {"python", "toy"} <= set(_names())
    assert get_language("python").tokens("x = 1\n") == ["x", "1"]
    problems = {problem.source: problem.message for problem in plugin_problems()}
    assert problems["broken-plugin (entry point broken = broken_module)"].startswith(
        "it does not import (RuntimeError: config missing)")
    assert "No module named 'no_such_module'" in problems["typo-plugin (entry point typo = no_such_module)"]
    result = CliRunner().invoke(app, ["languages", "--json"])
    assert result.exit_code == 1  # a problem to fix; stdout still lists the usable plugins
    assert {row["name"] for row in json.loads(result.stdout)} >= {"python", "toy"}
    assert "broken-plugin (entry point broken = broken_module)" in " ".join(result.stderr.split())


def test_a_hook_that_fails_or_returns_no_plugin_and_an_entry_point_without_the_hook_are_left_out(install):
    install("raising-plugin", {"raising": "raising_module"}, {"raising_module": """
        from workbench.languages import hookimpl

        @hookimpl
        def workbench_languages():
            raise OSError("grammar cache unreadable")
    """})
    install("wrong-plugin", {"wrong": "wrong_module"}, {"wrong_module": """
        from workbench.languages import hookimpl

        @hookimpl
        def workbench_languages():
            return ["go"]
    """})
    install("function-plugin", {"function": "toy_function:workbench_languages"},
            {"toy_function": toy("viafunction", ".vf")})
    assert "viafunction" not in _names() and "python" in _names()
    problems = {problem.source.split(" ")[0]: problem.message for problem in plugin_problems()}
    assert problems["raising-plugin"].startswith("its workbench_languages hook failed (OSError: grammar cache")
    assert problems["wrong-plugin"].startswith("its workbench_languages hook returned 'go', not a LanguagePlugin")
    assert "must name a module (not a function)" in problems["function-plugin"]


def test_two_packages_with_the_same_entry_point_name_are_both_loaded(install):
    install("first-plugin", {"lang": "first_module"}, {"first_module": toy("first", ".first")})
    install("second-plugin", {"lang": "second_module"}, {"second_module": toy("second", ".second")})
    assert {"first", "second"} <= set(_names())
    assert not plugin_problems()


def test_two_plugins_of_one_language_make_it_unusable_and_leave_the_others(install):
    install("one-plugin", {"one": "one_module"}, {"one_module": toy("same", ".one")})
    install("two-plugin", {"two": "two_module"}, {"two_module": toy("same", ".two")})
    assert "same" not in _names()
    with pytest.raises(LanguageConflictError, match=r"two plugins provide the language 'same' \(one-plugin and two-plugin\)"):
        get_language("same")
    assert get_language("py").name == "python"
    assert [problem.source for problem in plugin_problems()] == ["language 'same'"]


def test_an_extension_two_plugins_claim_is_refused_unless_the_language_is_named(install):
    install("toya-plugin", {"toya": "toya_module"}, {"toya_module": toy("toya", ".toy")})
    install("toyb-plugin", {"toyb": "toyb_module"}, {"toyb_module": toy("toyb", ".toy")})
    with pytest.raises(LanguageConflictError, match=r"'.toy' is claimed by the languages toya \(toya-plugin\), toyb \(toyb-plugin\)"):
        get_language(".toy")
    with pytest.raises(LanguageConflictError, match="pass --language"):
        language_for_path("src/main.toy")
    assert get_language("toyb").name == "toyb"
    assert language_for_path("src/main.py").name == "python"
    assert [str(problem) for problem in plugin_problems()] == [
        "'.toy': claimed by the languages toya (toya-plugin), toyb (toyb-plugin); files or options that name it are "
        "refused: pass --language with the language's name"]


def test_a_plugin_whose_grammar_is_missing_stops_the_job_before_any_file_is_parsed(install, tmp_path):
    install("nogrammar-plugin", {"ng": "nogrammar_module"}, {"nogrammar_module": toy("nogrammar", ".ng", """
        grammar_distribution = "tree-sitter-nogrammar"

        def language_capsule(self):
            import tree_sitter_nogrammar

            return tree_sitter_nogrammar.language()
    """)})
    assert "nogrammar" in _names()  # listed (workbench languages shows the grammar as not installed) ...
    with pytest.raises(LanguageGrammarError, match=r"pip install tree-sitter-nogrammar"):
        get_language("nogrammar")  # ... but refused when asked for
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name in ("a.ng", "b.ng"):
        (folder / name).write_text("def f(x):\n    return x + 1\n")
    result = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(tmp_path / "out")])
    assert result.exit_code != 0
    assert "cannot load its tree-sitter grammar" in " ".join(result.output.split())
    assert not (tmp_path / "out" / "clusters.json").exists()


def test_a_malformed_plugin_is_left_out_with_the_attribute_named(install):
    install("malformed-plugin", {"bad": "malformed_module"}, {"malformed_module": toy("malformed", ".mal", """
        identifier_node_types = "identifier"
        subcode_node_types = {"For": frozenset({"for_statement"})}
        read_in_target_fields = "operand"
    """)})
    assert "malformed" not in _names() and "python" in _names()
    [problem] = [p for p in plugin_problems() if p.source.startswith("malformed-plugin")]
    assert "identifier_node_types must be a set of strings, got str 'identifier'" in problem.message
    assert "subcode_node_types key 'For' is not a SubCodeKind" in problem.message
    assert "read_in_target_fields must be a set of strings, got str 'operand'" in problem.message


def _toy_folder(tmp_path, suffix: str):
    """A folder with two near-identical files and an unrelated one, all ``suffix``."""
    folder = tmp_path / "corpus"
    folder.mkdir()
    body = "def total(values, start):\n    result = start\n    for value in values:\n        result = result + value * 2 - 1\n    return result, 'sum', 42, values, start\n"
    (folder / f"a{suffix}").write_text(body)
    (folder / f"b{suffix}").write_text(body.replace("total", "summed"))
    (folder / f"c{suffix}").write_text("class Point:\n    def __init__(self, x, y):\n        self.x, self.y = x, y\n")
    return folder


def test_a_plugin_that_reuses_the_name_python_does_not_stop_a_folder_of_other_languages(install, tmp_path):
    """Probe 24: the default --language python was resolved for every dedup, so a clash on 'python'
    stopped a folder in which no file is Python."""
    install("pyclash-plugin", {"pyclash": "pyclash_module"}, {"pyclash_module": toy("python", ".pyclash")})
    install("toy-plugin", {"toy": "toy_module"}, {"toy_module": toy("toy", ".toy")})
    result = CliRunner().invoke(app, ["dedup", str(_toy_folder(tmp_path, ".toy")), "-o", str(tmp_path / "out"),
                                      "--min-tokens", "5"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert list(report["languages"]) == ["toy"]
    with pytest.raises(LanguageConflictError, match="two plugins provide the language 'python'"):
        get_language("python")  # Python itself stays refused until one is uninstalled


def test_a_folder_extension_two_plugins_claim_goes_to_the_language_option(install, tmp_path):
    """Probe 24: the error said to pass --language, and --language did not settle it for a folder."""
    install("toya-plugin", {"toya": "toya_module"}, {"toya_module": toy("toya", ".toy")})
    install("toyb-plugin", {"toyb": "toyb_module"}, {"toyb_module": toy("toyb", ".toy")})
    folder = _toy_folder(tmp_path, ".toy")
    refused = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(tmp_path / "refused")])
    assert refused.exit_code != 0 and "claimed by the languages toya (toya-plugin), toyb (toyb-plugin)" in " ".join(refused.output.split())
    result = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(tmp_path / "out"), "--language", "toyb",
                                      "--min-tokens", "5"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert list(report["languages"]) == ["toyb"] and report["languages"]["toyb"]["rows"] == 3
    assert language_for_path("x.toy", prefer="toya").name == "toya"
    with pytest.raises(LanguageConflictError):
        language_for_path("x.toy", prefer="python")  # a language that does not claim it settles nothing


def test_a_plugin_written_for_another_grammar_version_is_refused_with_the_node_types(install, tmp_path):
    """Probe 24: node types the installed grammar lacks were never seen, and dedup found fewer duplicates,
    with nothing said."""
    install("drift-plugin", {"drift": "drift_module"}, {"drift_module": toy("drift", ".drift", """
        identifier_node_types = frozenset({"identifer"})
        definition_fields = {"assignment": ("lefty",)}
    """)})
    assert "drift" in _names()  # listed, and `workbench languages` says a command would refuse it ...
    listing = CliRunner().invoke(app, ["languages"], env={"COLUMNS": "250"})
    assert listing.exit_code == 1
    assert "drift-plugin (drift): the drift plugin does not fit the installed grammar" in " ".join(listing.output.split())
    with pytest.raises(LanguageGrammarError, match=r"does not fit the installed grammar \(tree-sitter-python [0-9.]+\): "
                                                  r"identifier_node_types: 'identifer' is not a visible named node type"):
        get_language("drift")  # ... but refused when asked for
    result = CliRunner().invoke(app, ["dedup", str(_toy_folder(tmp_path, ".drift")), "-o", str(tmp_path / "out")])
    assert result.exit_code != 0
    assert "'lefty' is not a field of the grammar" in " ".join(result.output.split())


def test_a_plugin_whose_capsule_loads_another_language_is_told_so_not_to_install_another_version(install):
    """The advice "install the grammar version the plugin was written for" fits a grammar that renamed a
    few node types, not a language_capsule() that returns another language's grammar (Java's for a
    plugin on the Python grammar): most of the plugin's node types are then missing."""
    install("wrong-plugin", {"wrong": "wrong_module"}, {"wrong_module": toy("wrong", ".wrong", """
        def language_capsule(self):
            import tree_sitter_java
            return tree_sitter_java.language()
    """)})
    with pytest.raises(LanguageGrammarError) as raised:
        get_language("wrong")
    said = " ".join(str(raised.value).split())
    assert "does not fit the installed grammar" not in said and "Install the grammar version" not in said, said
    assert re.search(r"the wrong plugin's language_capsule\(\) loads another grammar than tree-sitter-python's: "
                     r"\d+ of its \d+ node types are not in it \(e\.g\. '", said), said
    listing = CliRunner().invoke(app, ["languages"], env={"COLUMNS": "250"})
    assert "wrong-plugin (wrong): the wrong plugin's language_capsule() loads another grammar" in \
        " ".join(listing.output.split())


def test_a_plugin_without_language_capsule_is_named_as_such_not_as_a_missing_grammar(install):
    install("nocapsule-plugin", {"nocap": "nocapsule_module"}, {"nocapsule_module": '''
        from workbench.languages import LanguagePlugin, hookimpl
        from workbench.languages.python_plugin import PythonLanguage


        class NoCapsule(LanguagePlugin):
            name = "nocapsule"
            extensions = (".nocap",)
            grammar_distribution = "tree-sitter-python"
            identifier_node_types = PythonLanguage.identifier_node_types
            literal_node_types = PythonLanguage.literal_node_types


        @hookimpl
        def workbench_languages():
            return [NoCapsule()]
    '''})
    with pytest.raises(LanguageGrammarError, match=r"NoCapsule does not implement language_capsule\(\)"):
        get_language("nocapsule")


def test_an_extension_that_a_clashing_language_also_claims_is_refused_not_routed_to_the_other(install, tmp_path):
    """Probe 29: with two plugins of one language (both unusable) and a third claiming its extension,
    the files went silently to the third plugin's grammar; an extension two usable plugins claimed was
    refused. Every claim counts now, and ``--language`` settles only between the usable claimants."""
    install("one-plugin", {"one": "one_module"}, {"one_module": toy("same", ".same")})
    install("two-plugin", {"two": "two_module"}, {"two_module": toy("same", ".two")})
    install("claimer-plugin", {"claimer": "claimer_module"}, {"claimer_module": toy("claimer", ".same")})
    with pytest.raises(LanguageConflictError, match=r"'.same' is claimed by the languages claimer \(claimer-plugin\), "
                                                    r"same \(one-plugin; unusable: several plugins provide same\)"):
        language_for_path("src/x.same")
    with pytest.raises(LanguageConflictError, match="two plugins provide the language 'same'"):
        language_for_path("src/x.two")  # claimed by one of the clashing plugins alone: the clash is the reason
    assert "'.same': claimed by the languages claimer (claimer-plugin), same (one-plugin; unusable" in \
        " ".join(str(problem) for problem in plugin_problems())
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.same").write_text("def f(x):\n    return x + 1\n")
    (folder / "b.py").write_text("def g(y):\n    return y * 2\n")
    for option in ([], ["--language", "python"]):
        result = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(tmp_path / "out"), "--min-tokens", "3",
                                          *option])
        assert result.exit_code != 0, result.output
        assert "'.same' is claimed by the languages claimer" in " ".join(result.output.split())
    assert language_for_path("x.same", prefer="claimer").name == "claimer"  # named: the documented precedence


def test_the_language_note_says_what_language_decided_and_never_that_it_selected_nothing(install, tmp_path):
    """Probe 29: ``-l cpp`` settled the .cpp files two plugins claimed, and the note said
    "--language selects nothing"."""
    install("toya-plugin", {"toya": "toya_module"}, {"toya_module": toy("toya", ".toy")})
    install("toyb-plugin", {"toyb": "toyb_module"}, {"toyb_module": toy("toyb", ".toy")})
    folder = _toy_folder(tmp_path, ".toy")
    (folder / "d.py").write_text("def other(a, b, c):\n    return [a, b, c, 'x', 'y', 'z', 1, 2, 3]\n")
    result = CliRunner().invoke(app, ["dedup", str(folder), "-o", str(tmp_path / "out"), "--language", "toyb",
                                      "--min-tokens", "5"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert "selects nothing" not in said
    assert "it decides the extension(s) several plugins claim (.toy: toya, toyb) for toyb" in said
    assert "--language does not restrict the run to toyb" in said


def test_a_grammar_that_is_installed_but_raises_is_not_told_to_be_installed(install):
    """Probe 29: a ``language_capsule()`` that raised was reported as a grammar to install
    (``pip install tree-sitter-go``, installed already), and ``workbench languages`` listed the plugin
    with its capabilities as if it worked."""
    install("exploding-plugin", {"boom": "exploding_module"}, {"exploding_module": toy("exploding", ".boom", """
        def language_capsule(self):
            raise RuntimeError("capsule exploded")
    """)})
    with pytest.raises(LanguageGrammarError) as raised:
        get_language("exploding")
    message = " ".join(str(raised.value).split())
    assert "its grammar package tree-sitter-python" in message and "is installed, but Toy.language_capsule()" in message
    assert "raised RuntimeError: capsule exploded" in message and "pip install" not in message
    listing = CliRunner().invoke(app, ["languages"], env={"COLUMNS": "300"})
    assert listing.exit_code == 1
    row = next(line for line in listing.stdout.splitlines() if "exploding" in line)
    assert "refused" in row and "tokens, decompose" not in row.split("refused")[0]
    rows = {row["name"]: row for row in json.loads(CliRunner().invoke(app, ["languages", "--json"]).stdout)}
    assert rows["exploding"]["usable"] is False and rows["exploding"]["capabilities"] == []
    assert "capsule exploded" in rows["exploding"]["problem"]
    assert rows["python"]["usable"] is True and "tokens" in rows["python"]["capabilities"]


@pytest.mark.parametrize("mapping", ["{kind: frozenset() for kind in SubCodeKind}", "{}"])
def test_a_plugin_that_maps_no_node_type_to_a_subcode_kind_is_refused_by_dsa_cqe_before_any_sample(
        install, tmp_path, mapping):
    """Probe 33: a plugin whose eight kinds all map to ``frozenset()`` was listed as able to
    ``decompose``, and ``dsa-cqe`` scored every program as one undecomposed unit with status ``ok``;
    with no map at all (``{}``) every sample became an ``error`` row, one by one. Both are now refused
    before any sample, naming the plugin and the methods that still work. The LLM is litellm's
    ``mock_response``: the refusal comes before any call."""
    from workbench import ScoreConfig, run_score
    from workbench.options import OptionError

    install("nosub-plugin", {"nosub": "nosub_module"}, {"nosub_module": toy("nosub", ".nosub", f"""
        from workbench.languages.spec import SubCodeKind
        subcode_node_types = {mapping}
    """)})
    plugin = get_language("nosub")
    assert plugin.capabilities() == ["tokens"]
    data = tmp_path / "gens.jsonl"
    data.write_text(json.dumps({"task_id": "T/0", "generation": "def f(x):\n    return x\n",
                                "reference": "def f(x):\n    return x + 0\n"}) + "\n")
    config = ScoreConfig(method=["dsa-cqe", "chrf"], model="gpt-4o-mini", language="nosub", workers=1, cache="off")
    with pytest.raises(OptionError) as raised:
        run_score(str(data), config, tmp_path / "out", mock_response="3")
    message = str(raised.value)
    assert "dsa-cqe decomposes programs, but the nosub plugin maps no grammar node type to a sub-code kind" in message
    assert "dsa-cqe-simplified" in message and "\n" not in message
    assert not (tmp_path / "out" / "scores.jsonl").exists()
    # the methods that do not decompose still score with it
    report = run_score(str(data), dataclasses.replace(config, method=["chrf"]), tmp_path / "chrf")
    assert report.statuses["chrf"] == {"ok": 1}


def test_a_name_query_of_none_is_told_to_be_an_empty_string(install):
    """Probe 33: ``name_query = None`` (the docstring calls the query optional) left the plugin out with
    ``name_query must be a string, got NoneType``, not saying what means "no query"."""
    install("nonequery-plugin", {"nq": "nonequery_module"}, {"nonequery_module": toy("nonequery", ".nq", """
        name_query = None
    """)})
    [problem] = [p for p in plugin_problems() if p.source.startswith("nonequery-plugin")]
    assert 'name_query must be a string (a tree-sitter query, or "" for none), got NoneType' in problem.message


def test_the_run_preflight_refuses_dsa_cqe_for_a_plugin_without_sub_codes(install, tmp_path):
    """Probe 33: ``workbench run`` with ``[score] method = ["dsa-cqe"]`` on a language whose plugin maps
    no sub-code kind is refused by the preflight, in config terms, before any stage runs."""
    from workbench.run.config import ConfigError, build_config
    from workbench.run.preflight import run_preflight

    install("nosub-plugin", {"nosub": "nosub_module"}, {"nosub_module": toy("nosub", ".nosub", """
        subcode_node_types = {}
    """)})
    data = tmp_path / "g.jsonl"
    data.write_text(json.dumps({"task_id": "HumanEval/0", "sample_id": 0, "completion": "    return True\n"}) + "\n")
    config = build_config({"run": {"output": str(tmp_path / "run"), "stages": ["score"]},
                           "data": {"source": str(data), "language": "nosub"},
                           "score": {"method": ["dsa-cqe"], "problems": "humaneval", "model": "ollama/llama3",
                                     "select": "first"}})
    with pytest.raises(ConfigError) as caught:
        run_preflight(config)
    message = " ".join(str(caught.value).split())
    assert message.startswith("dsa-cqe decomposes programs, but the nosub plugin maps no grammar node type"), message
    assert "pass another [score] method" in message
    assert not (tmp_path / "run").exists()


def test_inspect_shows_the_tokens_dedup_uses_for_a_plugin_that_overrides_tokens(install, tmp_path):
    """Probe 38p: docs/plugins.md lets a plugin override ``tokens`` itself; ``workbench dedup`` used the
    override, but ``languages --inspect`` printed the default walk's tokens (``scan_tokens``), so the
    file's "dedup tokens" were not the ones dedup compared. Also a CRLF file: dedup normalises line ends
    before it tokenizes (a string literal over two lines keeps no ``\\r``), so inspect does too. An
    override that raises is one line naming the plugin's error, not a traceback."""
    from workbench.dedup.tokens import tokenize_one

    install("upper-plugin", {"upper": "upper_module"}, {"upper_module": toy("upper", ".upper", """
        def tokens(self, code):
            text = code.decode("utf-8") if isinstance(code, bytes) else code
            if "BOOM" in text:
                raise RuntimeError("tokenizer bug")
            return [token.upper() for token in super().tokens(code) if token != "drop_me"]
    """)})
    source = tmp_path / "a.upper"
    source.write_bytes(b'def f(x, drop_me):\r\n    return x + """a\r\nb"""\r\n')
    result = CliRunner().invoke(app, ["languages", "--inspect", str(source), "--json"])
    assert result.exit_code == 0, result.output
    shown = json.loads(result.stdout)["tokens"]
    assert shown == ["F", "X", "X", '"""A\nB"""']
    assert tokenize_one(source.read_bytes(), "upper").n_tokens == len(shown)
    table = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "200"})
    assert "dedup tokens (4): F X X" in table.stdout
    source.write_text("def f(x):\n    return x  # BOOM\n")
    failed = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "300"})
    assert failed.exit_code == 1 and not isinstance(failed.exception, RuntimeError)
    said = " ".join(failed.output.split())
    assert "the upper plugin's tokens() raised RuntimeError: tokenizer bug" in said
    assert "workbench dedup lists such a file in unreadable.csv" in said


def test_inspect_reports_the_syntax_errors_dedup_sees_and_names_what_raised(install, tmp_path):
    """Review fix39c: ``languages --inspect`` parsed the file a second time to say "parsed with syntax
    errors", so a plugin overriding ``scan_tokens`` (here: one that reports no error recovery) was shown
    an answer dedup never saw; and a ``parse`` that raised was reported as "tokens() raised". Inspect now
    reports the ``has_error`` the tokenizer dedup calls returns, and names the method that raised."""
    from workbench.dedup.tokens import tokenize_one

    install("lenient-plugin", {"lenient": "lenient_module"}, {"lenient_module": toy("lenient", ".lenient", """
        def scan_tokens(self, code):
            tokens, _ = super().scan_tokens(code)
            text = code.decode("utf-8") if isinstance(code, bytes) else code
            if "BOOM" in text:
                raise RuntimeError("scan bug")
            return tokens, False
    """)})
    source = tmp_path / "a.lenient"
    source.write_text("def f(x:\n    return x +\n")
    assert not tokenize_one(source.read_bytes(), "lenient").has_error
    view = json.loads(CliRunner().invoke(app, ["languages", "--inspect", str(source), "--json"]).stdout)
    assert view["parse_error"] is False
    table = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "syntax errors" not in table.stdout
    source.write_text("x = 1  # BOOM\n")
    failed = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "300"})
    said = " ".join(failed.output.split())
    assert failed.exit_code == 1 and "the lenient plugin's scan_tokens() raised RuntimeError: scan bug" in said

    # a plugin whose tokens() override does not parse, but whose parse() raises: dedup tokenizes the file
    # (no parse error known), so inspect does too; the sub-code map's parse is named as what raised
    install("noparse-plugin", {"noparse": "noparse_module"}, {"noparse_module": toy("noparse", ".noparse", """
        def tokens(self, code):
            text = code.decode("utf-8") if isinstance(code, bytes) else code
            return text.split()

        def parse(self, data):
            raise RuntimeError("parse bug")
    """)})
    source = tmp_path / "b.noparse"
    source.write_text("def f(x):\n    return x\n")
    assert tokenize_one(source.read_bytes(), "noparse").failure is None
    failed = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "300"})
    said = " ".join(failed.output.split())
    assert failed.exit_code == 1 and not isinstance(failed.exception, RuntimeError), failed.output
    assert "tokens() raised" not in said
    assert "the noparse plugin's parse() raised RuntimeError: parse bug" in said, said


def test_inspect_names_the_step_that_raised_while_finding_sub_codes(install, tmp_path):
    """Leftovers40c: any exception raised while finding the DSA-CQE sub-codes was reported as "the
    plugin's parse() raised", also one raised by another plugin method (here compiled_name_query(), armed
    by a file that says BOOM) or by workbench's own walk over what parse() returned (an object with no
    root_node). Inspect now names the plugin method that raised, or workbench's step and what it read."""
    install("nameq-plugin", {"nameq": "nameq_module"}, {"nameq_module": toy("nameq", ".nameq", """
        def parse(self, data):
            self.last = data
            return super().parse(data)

        def compiled_name_query(self):
            if b"BOOM" in getattr(self, "last", b""):
                raise RuntimeError("query bug")
            return super().compiled_name_query()
    """)})
    source = tmp_path / "a.nameq"
    source.write_text("x = 1\n")
    assert CliRunner().invoke(app, ["languages", "--inspect", str(source), "--json"]).exit_code == 0
    source.write_text("x = 1  # BOOM\n")
    failed = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "300"})
    said = " ".join(failed.output.split())
    assert failed.exit_code == 1 and not isinstance(failed.exception, RuntimeError), failed.output
    assert "parse() raised" not in said, said
    assert "the nameq plugin's compiled_name_query() raised RuntimeError: query bug while finding its DSA-CQE " \
           "sub-codes (fix the plugin's compiled_name_query())" in said, said

    install("notree-plugin", {"notree": "notree_module"}, {"notree_module": toy("notree", ".notree", """
        def tokens(self, code):
            text = code.decode("utf-8") if isinstance(code, bytes) else code
            return text.split()

        def parse(self, data):
            return "not a tree"
    """)})
    source = tmp_path / "b.notree"
    source.write_text("def f(x):\n    return x\n")
    failed = CliRunner().invoke(app, ["languages", "--inspect", str(source)], env={"COLUMNS": "300"})
    said = " ".join(failed.output.split())
    assert failed.exit_code == 1 and not isinstance(failed.exception, AttributeError), failed.output
    assert "parse() raised" not in said, said
    assert ("finding its DSA-CQE sub-codes failed in workbench's decompose() with AttributeError: 'str' object has "
            "no attribute 'root_node', on what the notree plugin gave it") in said, said


@pytest.mark.parametrize(("extra", "fault"), [
    ('name_query = "(augmented_assignment left: (_) @updaet)"',
     "name_query captures ['updaet']; use only ['definition', 'not_a_name', 'update']"),
    ('skip_node_types = frozenset({"comment", "identifier"})', "identifier and skip node types overlap: ['identifier']"),
    ('name_query = "(augmented_assignment left: (_) @update"', "name_query does not compile against the grammar"),
])
def test_a_plugin_fault_no_grammar_version_fixes_is_not_told_to_install_another_version(install, extra, fault):
    """Probe 38p: a misspelled capture in a Go plugin's name_query was refused as "does not fit the installed
    grammar ... Install the grammar version the plugin was written for": no grammar version has a capture
    ``@updaet``, a node type in two token sets, or an unbalanced query. Such a plugin is malformed; a renamed
    node type (the test above) is still a grammar-version mismatch."""
    install("faulty-plugin", {"faulty": "faulty_module"}, {"faulty_module": toy("faulty", ".faulty", extra)})
    with pytest.raises(LanguageGrammarError) as raised:
        get_language("faulty")
    said = " ".join(str(raised.value).split())
    assert "does not fit the installed grammar" not in said and "Install the grammar version" not in said, said
    assert said.startswith("the faulty plugin is malformed (no grammar version fixes it): "), said
    assert fault in said and said.endswith("fix the plugin (its conformance tests say the same: docs/plugins.md)")


def test_a_hook_that_returns_one_plugin_or_nothing_and_an_entry_point_naming_the_class_are_told_what_to_return(
        install):
    """Probe 38p: a hook that returned its plugin itself (``return GoLanguage()``, not a list) or nothing (a
    missing ``return``) was reported as "hook failed (TypeError: 'GoLanguage' object is not iterable)", and an
    entry point naming the plugin class (``go = workbench_go:GoLanguage``) as having "no hook" with advice
    about functions. Each is left out with a line that says what to write instead; the others work."""
    install("one-plugin", {"one": "one_module"}, {"one_module": toy("one", ".one").replace(
        "return [Toy()]", "return Toy()")})
    install("none-plugin", {"none": "none_module"}, {"none_module": toy("none", ".none").replace(
        "return [Toy()]", "[Toy()]")})
    install("class-plugin", {"klass": "class_module:Toy"}, {"class_module": toy("klass", ".klass")})
    problems = {problem.source.split(" ")[0]: problem.message for problem in plugin_problems()}
    assert problems["one-plugin"] == ("its workbench_languages hook returned a Toy instance, not a list of "
                                      "LanguagePlugin instances: return [Toy()]; the plugin is left out")
    assert problems["none-plugin"] == ("its workbench_languages hook returned None, not a list of LanguagePlugin "
                                       "instances (a missing return?); the plugin is left out")
    assert problems["class-plugin"].startswith("the entry point names the class Toy, not a module: name the module "
                                               "that holds the @hookimpl workbench_languages function (klass = "
                                               "class_module; docs/plugins.md)")
    assert {"one", "none", "klass"}.isdisjoint(_names()) and "python" in _names()
