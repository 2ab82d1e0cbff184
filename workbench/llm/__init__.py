"""The LLM layer: every model call of the workbench goes through :mod:`litellm`.

* :mod:`workbench.llm.client`: retries, concurrency limit, cost budget, structured
  (JSON-schema) output with one repair retry, per-run accounting.
* :mod:`workbench.llm.cache`: the content-addressed response cache.
"""
