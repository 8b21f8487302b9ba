"""Imported by the recipe's warm python (the speculators env) before generate-offline-data runs: the openai
client's request transform skips token-id lists.

``speculators generate-offline-data`` sends each sample as ``completions.create(prompt=token_ids)``; openai's
``_async_transform_recursive`` walks ``prompt`` against every member of its Union type, one call per token
(P6 on the H200, cProfile: ~1300 calls a sample, most of the client's time — the client, one event loop, was the
extract step's limit).  Transforming an int is the identity (no TypedDict, model, alias or format applies), so
a list of ints comes back as it went in: the same request body, built without the walk.
"""

from __future__ import annotations

from typing import Any


def _is_int_list(data: object) -> bool:
    return type(data) is list and all(type(x) is int for x in data)


def install() -> bool:
    """Wraps openai's transforms (idempotent); False when this openai has none to wrap."""
    try:
        from openai._utils import _transform as t
    except ImportError:
        return False
    slow_async = getattr(t, "_async_transform_recursive", None)
    slow_sync = getattr(t, "_transform_recursive", None)
    if slow_async is None or slow_sync is None:
        return False
    if getattr(slow_async, "eorch_fast", False):
        return True

    async def fast_async(data: object, *, annotation: Any, inner_type: Any = None) -> object:
        if _is_int_list(data):
            return data
        return await slow_async(data, annotation=annotation, inner_type=inner_type)

    def fast_sync(data: object, *, annotation: Any, inner_type: Any = None) -> object:
        if _is_int_list(data):
            return data
        return slow_sync(data, annotation=annotation, inner_type=inner_type)

    fast_async.eorch_fast = True  # type: ignore[attr-defined]
    t._async_transform_recursive = fast_async  # the module's own recursion looks the name up: it gets these too
    t._transform_recursive = fast_sync
    return True


install()
