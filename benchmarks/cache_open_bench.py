"""Time opening the LLM response cache (:class:`workbench.llm.cache.ResponseCache`) on caches of
realistic sizes, to see what its ``PRAGMA quick_check`` at the open costs.

Makes (once, under ``--work``) diskcache folders of about ``--sizes`` MB of answers like a scoring
run stores (a dict of text of 0.5 to 4 KB with token counts and cost; values under diskcache's
32 KiB threshold live in ``cache.db`` itself, so the database is the size given), then prints for
each, over ``--repeat`` opens, the best and median wall-clock of:

* ``diskcache open``: ``diskcache.Cache(folder)`` alone (no check);
* ``ResponseCache open``: the workbench's open, check included;
* ``quick_check alone``: ``PRAGMA quick_check(1)`` on a read-only ``sqlite3`` connection;

each with ``cache.db`` in the OS's file cache (warm) and, with ``--cold``, dropped from it first
(``posix_fadvise(POSIX_FADV_DONTNEED)`` on the database: the file's pages only, nothing else's).
Run it with one checkout, then another, on ``PYTHONPATH`` to compare:

    python benchmarks/cache_open_bench.py [--sizes 10 500] [--repeat 5] [--cold] [--work /tmp/cache-open-bench]
    python benchmarks/cache_open_bench.py --open-only 500    # one open, for timing a whole process
"""

from __future__ import annotations

import argparse
import os
import random
import sqlite3
import statistics
import string
import time
from pathlib import Path


def make_cache(folder: Path, megabytes: int) -> Path:
    """A diskcache folder whose ``cache.db`` holds about ``megabytes`` MB of answers (made once)."""
    import diskcache

    from workbench.llm.cache import CachedResponse, cache_key

    done = folder / ".complete"
    if done.exists():
        return folder
    rng = random.Random(megabytes)
    words = ["".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, 9))) for _ in range(5000)]
    cache = diskcache.Cache(str(folder))
    written, n = 0, 0
    while written < megabytes * 1e6:
        with cache.transact():
            for _ in range(2000):
                text = " ".join(rng.choices(words, k=rng.randint(80, 700)))
                key = cache_key(provider="openai", model="gpt-4o-mini", messages=[{"role": "user", "content": str(n)}],
                                params={"temperature": 0.0}, seed=0, schema=None, prompt_version="v1", repeat=0)
                cache.set(key, CachedResponse(text, 400, len(text) // 4, 1e-4).__dict__)
                written += len(text) + 200
                n += 1
    cache.close()
    done.write_text(f"{n} entries\n")
    return folder


def drop_from_file_cache(folder: Path) -> None:
    """Ask the OS to drop ``cache.db``'s pages (and its write-ahead log's) from its file cache."""
    for name in ("cache.db", "cache.db-wal"):
        path = folder / name
        if path.exists():
            fd = os.open(path, os.O_RDONLY)
            try:
                os.fsync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


def open_diskcache(folder: Path) -> None:
    import diskcache

    diskcache.Cache(str(folder)).close()


def open_response_cache(folder: Path) -> None:
    from workbench.llm.cache import ResponseCache

    ResponseCache(folder).close()


def quick_check_alone(folder: Path) -> None:
    connection = sqlite3.connect(f"{(folder / 'cache.db').as_uri()}?mode=ro", uri=True)
    try:
        assert connection.execute("PRAGMA quick_check(1)").fetchall() == [("ok",)]
    finally:
        connection.close()


CASES = {"diskcache open": open_diskcache, "ResponseCache open": open_response_cache,
         "quick_check alone": quick_check_alone}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 500], help="cache sizes in MB")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cold", action="store_true", help="also time each open with cache.db out of the file cache")
    parser.add_argument("--work", type=Path, default=Path("/tmp/cache-open-bench"))
    parser.add_argument("--open-only", type=int, metavar="MB", help="open the cache of this size once and exit")
    args = parser.parse_args()
    if args.open_only:
        open_response_cache(make_cache(args.work / f"{args.open_only}mb", args.open_only))
        return
    import workbench

    print(f"workbench from {Path(workbench.__file__).parent}; load average {os.getloadavg()[0]:.2f}")
    for megabytes in args.sizes:
        folder = make_cache(args.work / f"{megabytes}mb", megabytes)
        size = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
        print(f"cache of {size:.0f} MB ({(folder / '.complete').read_text().strip()}):")
        for temperature in (["warm", "cold"] if args.cold else ["warm"]):
            for name, case in CASES.items():
                times = []
                case(folder)  # warm-up (and the file cache filled for a warm run)
                for _ in range(args.repeat):
                    if temperature == "cold":
                        drop_from_file_cache(folder)
                    start = time.perf_counter()
                    case(folder)
                    times.append(time.perf_counter() - start)
                print(f"  {temperature:4s} {name:20s} best {min(times) * 1e3:8.1f} ms   "
                      f"median {statistics.median(times) * 1e3:8.1f} ms")


if __name__ == "__main__":
    main()
