"""Speed, CPU time and memory of the local models, per engine, on the same prompts.

Engines:

* ``xllamacpp``: the ``local/<alias>`` litellm provider (prebuilt llama.cpp, what workbench uses);
* ``llama-cpp-python``: the engine before it (compiled from source with ``GGML_NATIVE=OFF``),
  called directly with the same messages and the same sampling values
  (``workbench.llm.local.SAMPLING_DEFAULTS``), for the before/after comparison. Needs
  ``llama-cpp-python`` installed (it is not a workbench dependency any more).

For each engine and alias, in a fresh subprocess (so memory figures belong to that model alone):

* load: seconds to load the GGUF;
* three prompts (a HumanEval task and its reference explained line by line, a JSON-schema
  judgement, a one-line question; bundled data), each answered greedily (temperature 0, seed 0)
  with ``max_tokens=100`` after a warm-up call: prompt tokens/s from a 1-token call, generation
  tokens/s from the difference to the 100-token call, wall and CPU seconds (user + system of the
  whole process, every thread) per 100-token call, medians of ``--repeats``;
* the answers themselves, so the engines' outputs can be compared token for token, and one more
  greedy answer per prompt with ``repeat_penalty`` 1.0 (llama.cpp's server counts the prompt in
  the repeat penalty's window, llama-cpp-python did not, so only without a penalty may the two
  agree token for token);
* RAM: resident set after the calls and its peak, minus the resident set before loading.

Usage: ``python benchmarks/local_llm_bench.py [--engine xllamacpp --engine llama-cpp-python]
[--alias A ...] [--repeats 3] [--threads N] [--json out.json]``. The load average is printed
before and after: figures on a shared machine vary with it. Run it alone (not next to other
benchmarks): on 2 cores two benchmarks slow each other down.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

DEFAULT_ALIASES = ["smollm2-135m", "qwen2.5-coder-0.5b"]
ENGINES = ["xllamacpp", "llama-cpp-python"]
JUDGEMENT_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 4}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
}


def _rss_kib() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in {"VmRSS", "VmHWM"}:
            fields[key] = int(value.split()[0])
    return fields


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def prompts() -> dict[str, tuple[list[dict[str, str]], dict | None]]:
    """name -> (messages, JSON schema or None); the same for every engine."""
    from workbench.data.loading import load_humaneval

    task = load_humaneval()[10]  # make_palindrome: prompt plus reference, about 300 tokens
    code = task["prompt"] + task["canonical_solution"]
    return {
        "explain": ([
            {"role": "system", "content": "You are an expert Python reviewer."},
            {"role": "user", "content": "Explain step by step what the following Python program does, "
                                        "line by line, then list possible bugs.\n\n```python\n" + code + "```"},
        ], None),
        "judge-json": ([
            {"role": "user", "content": "Rate from 0 to 4 how well this code solves its task, as JSON with "
                                        "score and reason.\n\n```python\n" + code + "```"},
        ], JUDGEMENT_SCHEMA),
        "short": ([{"role": "user", "content": "What does `sorted(set(xs))` return for xs = [3, 1, 3, 2]?"}], None),
    }  # fmt: skip


def _engine(name: str, alias: str):
    """(load seconds, n_threads, call(messages, schema, max_tokens) -> (text, prompt_tokens, completion_tokens))."""
    from workbench.llm import local, models

    path = models.resolve(alias, progress=False)
    threads = local.default_threads()
    sampling = {k: v for k, v in local.SAMPLING_DEFAULTS.items() if v is not None}
    sampling.update(temperature=0.0, seed=0)
    if name == "xllamacpp":
        import litellm

        local.register()
        # import litellm's lazily loaded modules first, so the RSS difference is the model's
        litellm.completion(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], mock_response="x")
        started = time.perf_counter()
        local.load_model(str(path))
        load_s = time.perf_counter() - started

        def call(messages, schema, max_tokens, **override):
            response_format = None if schema is None else {"type": "json_schema", "json_schema": {"name": "a", "schema": schema}}
            response = litellm.completion(model=f"local/{path}", messages=messages, max_tokens=max_tokens,
                                          response_format=response_format, **{**sampling, **override})
            return response.choices[0].message.content, response.usage.prompt_tokens, response.usage.completion_tokens

        return load_s, threads, call
    from llama_cpp import Llama, LlamaGrammar

    started = time.perf_counter()
    llama = Llama(model_path=str(path), n_ctx=local.DEFAULT_N_CTX, n_threads=threads, n_threads_batch=threads, verbose=False)
    load_s = time.perf_counter() - started
    arguments = {
        "temperature": sampling["temperature"], "top_p": sampling["top_p"], "top_k": sampling["top_k"],
        "min_p": sampling["min_p"], "typical_p": sampling["typical_p"], "repeat_penalty": sampling["repeat_penalty"],
        "presence_penalty": sampling["presence_penalty"], "frequency_penalty": sampling["frequency_penalty"],
        "seed": sampling["seed"],
    }  # fmt: skip

    def call(messages, schema, max_tokens, **override):
        llama.reset()  # no KV reuse between calls, as the old provider did
        grammar = None if schema is None else LlamaGrammar.from_json_schema(json.dumps(schema), verbose=False)
        result = llama.create_chat_completion(messages=messages, max_tokens=max_tokens, grammar=grammar,
                                              **{**arguments, **override})
        usage = result["usage"]
        return result["choices"][0]["message"]["content"], usage["prompt_tokens"], usage["completion_tokens"]

    return load_s, threads, call


def measure_one(engine: str, alias: str, repeats: int) -> dict:
    """Runs in the child process: load, time the calls, read memory."""
    before = _rss_kib()
    load_s, threads, call = _engine(engine, alias)
    result: dict = {"engine": engine, "alias": alias, "load_seconds": round(load_s, 2), "threads": threads, "prompts": {}}
    for name, (messages, schema) in prompts().items():
        call(messages, schema, 1)  # warm-up (first-call allocations)
        prefill, generate, walls, cpus = [], [], [], []
        for _ in range(repeats):
            started = time.perf_counter()
            _, prompt_tokens, _ = call(messages, schema, 1)
            one_s = time.perf_counter() - started
            cpu, started = _cpu_seconds(), time.perf_counter()
            text, _, completion_tokens = call(messages, schema, 100)
            full_s, cpu_s = time.perf_counter() - started, _cpu_seconds() - cpu
            prefill.append(prompt_tokens / one_s)
            if completion_tokens > 1:
                generate.append((completion_tokens - 1) / max(full_s - one_s, 1e-9))
            walls.append(full_s)
            cpus.append(cpu_s)
        result["prompts"][name] = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "prompt_tokens_per_s": round(statistics.median(prefill), 1),
            "generation_tokens_per_s": round(statistics.median(generate), 1) if generate else None,
            "seconds_per_call": round(statistics.median(walls), 2),
            "cpu_seconds_per_call": round(statistics.median(cpus), 2),
            "answer": text,
            "answer_without_repeat_penalty": call(messages, schema, 100, repeat_penalty=1.0)[0],
        }
    after = _rss_kib()
    result.update(
        rss_model_mib=round((after["VmRSS"] - before["VmRSS"]) / 1024, 1),
        peak_rss_mib=round(after["VmHWM"] / 1024, 1),
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alias", action="append", help="alias to measure (repeatable)")
    parser.add_argument("--engine", action="append", choices=ENGINES, help="engine to measure (repeatable; default both)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: all usable CPUs)")
    parser.add_argument("--json", help="write every row (answers included) to this file")
    parser.add_argument("--one", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one[0], args.one[1], args.repeats)))
        return

    print(f"cpus usable: {len(os.sched_getaffinity(0))}, load average: {os.getloadavg()}")
    rows = []
    for alias in args.alias or DEFAULT_ALIASES:
        for engine in args.engine or ENGINES:
            env = dict(os.environ, OMP_WAIT_POLICY="PASSIVE")
            if args.threads:
                env["WORKBENCH_LOCAL_THREADS"] = str(args.threads)
            command = [sys.executable, __file__, "--one", engine, alias, "--repeats", str(args.repeats)]
            output = subprocess.run(command, env=env, capture_output=True, text=True)
            if output.returncode != 0:
                print(f"{alias} / {engine}: failed\n{output.stderr[-2000:]}")
                continue
            row = json.loads(output.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"{alias} / {engine}: load {row['load_seconds']}s, {row['threads']} threads, RSS +{row['rss_model_mib']} MiB "
                  f"(peak {row['peak_rss_mib']} MiB)")
            for name, p in row["prompts"].items():
                print(f"  {name:<10} prompt {p['prompt_tokens']:>3} tok at {p['prompt_tokens_per_s']:>6} tok/s; "
                      f"generation {p['completion_tokens']:>3} tok at {p['generation_tokens_per_s']} tok/s; "
                      f"{p['seconds_per_call']}s and {p['cpu_seconds_per_call']} CPU-s per 100-token call")
    by_key = {(row["alias"], row["engine"]): row for row in rows}
    for alias in args.alias or DEFAULT_ALIASES:
        pair = [by_key.get((alias, engine)) for engine in ENGINES]
        if all(pair):
            for field, what in (("answer", "repeat_penalty 1.1"), ("answer_without_repeat_penalty", "repeat_penalty 1.0")):
                same = [name for name in pair[0]["prompts"] if pair[0]["prompts"][name][field] == pair[1]["prompts"][name][field]]
                print(f"{alias}: identical greedy answers from both engines at {what} for {len(same)}/"
                      f"{len(pair[0]['prompts'])} prompts ({', '.join(same) or 'none'})")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
