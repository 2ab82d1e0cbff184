"""Plugin discovery from several threads at once (a notebook running jobs in threads): every
thread must see the same plugin objects. Real entry-point discovery, real grammars."""

from __future__ import annotations

import threading

from workbench.languages import registry


def test_first_use_from_several_threads_finds_one_set_of_plugins() -> None:
    for _ in range(5):
        registry.refresh_plugins()
        barrier, versions, names, errors = threading.Barrier(4), [], [], []

        def use() -> None:
            barrier.wait()
            try:
                versions.append(registry.plugin_versions("python"))
                names.append(registry.get_language("py").name)
            except BaseException as error:  # StopIteration before the fix: record, do not lose it in the thread
                errors.append(repr(error))

        threads = [threading.Thread(target=use) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert names == ["python"] * 4
        assert len(versions) == 4 and all(v is not None and v == versions[0] for v in versions)
