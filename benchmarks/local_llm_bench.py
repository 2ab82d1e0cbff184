"""Pull time, size, speed and memory of the local models (``local/<alias>`` through litellm).

For each alias, in a fresh subprocess (so memory figures belong to that model alone):

* pull: wall time and bytes downloaded (``--fresh``: into an empty temp store, so the pull
  is real; otherwise the user's store is used and a present model reads "present");
* load: seconds to load the GGUF with llama.cpp;
* a ~300-token prompt (a HumanEval task and a reference solution, bundled data) answered with
  ``max_tokens=100`` through ``litellm.completion(model="local/<alias>")``: prompt tokens/s
  from a 1-token call, generation tokens/s from the difference to the 100-token call
  (median of ``--repeats``);
* RAM: the process's resident set after the calls and its peak (VmRSS/VmHWM), minus the
  resident set before the model was loaded.

Usage: ``python benchmarks/local_llm_bench.py [--fresh] [--alias A ...] [--omp-wait-policy active]``.
The machine load average is printed too: figures on a shared machine vary with it.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT_ALIASES = ["smollm2-135m", "qwen2.5-coder-0.5b"]


def _rss_kib() -> dict[str, int]:
    fields = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in {"VmRSS", "VmHWM"}:
            fields[key] = int(value.split()[0])
    return fields


def _prompt() -> list[dict[str, str]]:
    from workbench.data.loading import load_humaneval

    task = load_humaneval()[10]  # make_palindrome: prompt plus reference, about 300 tokens
    code = task["prompt"] + task["canonical_solution"]
    return [
        {"role": "system", "content": "You are an expert Python reviewer."},
        {
            "role": "user",
            "content": "Explain step by step what the following Python program does, "
            "line by line, then list possible bugs.\n\n```python\n" + code + "```",
        },
    ]


def measure_one(alias: str, store: str | None, repeats: int) -> dict:
    """Runs in the child process: pull, load, time the calls, read memory."""
    import litellm

    from workbench.llm import local, models

    result: dict = {"alias": alias}
    started = time.perf_counter()
    pulled = models.pull(alias, store, progress=False)
    result.update(
        pull_seconds=round(time.perf_counter() - started, 2),
        pull_source=pulled.source,
        downloaded_bytes=pulled.downloaded_bytes,
        file_bytes=pulled.path.stat().st_size,
    )
    local.register()
    # import litellm's lazily loaded modules first, so the RSS difference is the model's
    litellm.completion(model="gpt-4o-mini", messages=[{"role": "user", "content": "x"}], mock_response="x")
    before = _rss_kib()
    loaded = local.load_model(str(pulled.path))
    result.update(load_seconds=round(loaded.load_seconds, 2), n_threads=loaded.n_threads, n_ctx=loaded.n_ctx)
    messages = _prompt()
    model = f"local/{pulled.path}"

    def call(max_tokens: int) -> tuple[float, litellm.ModelResponse]:
        begin = time.perf_counter()
        response = litellm.completion(model=model, messages=messages, temperature=0, seed=0, max_tokens=max_tokens)
        return time.perf_counter() - begin, response

    call(1)  # warm-up (first-call allocations)
    prefill, generate, total, completion_tokens = [], [], [], 0
    for _ in range(repeats):
        one_s, one = call(1)
        full_s, full = call(100)
        prompt_tokens = one.usage.prompt_tokens
        completion_tokens = full.usage.completion_tokens
        prefill.append(prompt_tokens / one_s)
        if completion_tokens > 1:
            generate.append((completion_tokens - 1) / max(full_s - one_s, 1e-9))
        total.append(full_s)
    after = _rss_kib()
    result.update(
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        prompt_tokens_per_s=round(statistics.median(prefill), 1),
        generation_tokens_per_s=round(statistics.median(generate), 1) if generate else None,
        seconds_per_call=round(statistics.median(total), 2),
        rss_model_mib=round((after["VmRSS"] - before["VmRSS"]) / 1024, 1),
        rss_total_mib=round(after["VmRSS"] / 1024, 1),
        peak_rss_mib=round(after["VmHWM"] / 1024, 1),
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alias", action="append", help="alias to measure (repeatable)")
    parser.add_argument("--fresh", action="store_true", help="pull into an empty temp store (a real download)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--omp-wait-policy", choices=["passive", "active"], default="passive")
    parser.add_argument("--threads", type=int, help="llama.cpp threads (default: all usable CPUs)")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    parser.add_argument("--store", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure_one(args.one, args.store, args.repeats)))
        return

    print(f"cpus usable: {len(os.sched_getaffinity(0))}, load average: {os.getloadavg()}, OMP_WAIT_POLICY={args.omp_wait_policy}")
    with tempfile.TemporaryDirectory(prefix="workbench-bench-models-") as tmp:
        for alias in args.alias or DEFAULT_ALIASES:
            env = dict(os.environ, OMP_WAIT_POLICY=args.omp_wait_policy.upper())
            if args.threads:
                env["WORKBENCH_LOCAL_THREADS"] = str(args.threads)
            command = [sys.executable, __file__, "--one", alias, "--repeats", str(args.repeats)]
            if args.fresh:
                command += ["--store", tmp]
            output = subprocess.run(command, env=env, capture_output=True, text=True)
            if output.returncode != 0:
                print(f"{alias}: failed\n{output.stderr[-2000:]}")
                continue
            row = json.loads(output.stdout.strip().splitlines()[-1])
            print(
                f"{alias}: pull {row['pull_seconds']}s from {row['pull_source']} "
                f"({row['downloaded_bytes'] / 1e6:.1f} MB downloaded, file {row['file_bytes']:,} bytes); "
                f"load {row['load_seconds']}s; prompt {row['prompt_tokens']} tok at {row['prompt_tokens_per_s']} tok/s; "
                f"generation {row['completion_tokens']} tok at {row['generation_tokens_per_s']} tok/s; "
                f"{row['seconds_per_call']}s per call; RSS +{row['rss_model_mib']} MiB for the model "
                f"(process {row['rss_total_mib']} MiB, peak {row['peak_rss_mib']} MiB); threads {row['n_threads']}"
            )
            print("  " + json.dumps(row))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
