# SPDX-License-Identifier: Apache-2.0
"""mooncake.async_store: MooncakeDistributedStoreAsync, the async_* forms of
MooncakeDistributedStore's calls.  Each async_<name>(...) runs <name> on a
thread of the event loop's default executor; the C extension releases the
GIL around every network wait, so several run at once.  Every other
attribute is the synchronous store's."""
import asyncio
import functools

from mooncake.store import MooncakeDistributedStore

_ASYNC = (
    "setup", "close", "health_check",
    "put", "put_parts", "put_batch", "get", "get_batch", "get_buffer", "batch_get_buffer",
    "upsert", "upsert_parts", "upsert_batch", "upsert_from", "batch_upsert_from",
    "register_buffer", "unregister_buffer", "put_from", "get_into", "batch_put_from",
    "batch_get_into", "batch_put_from_multi_buffers", "batch_get_into_multi_buffers",
    "get_into_ranges", "is_exist", "batch_is_exist", "batch_query_prefix", "get_size",
    "remove", "batch_remove", "remove_by_regex", "remove_all", "get_replica_desc",
    "batch_get_replica_desc",
)


class MooncakeDistributedStoreAsync:
    """Wraps a MooncakeDistributedStore (a new one by default)."""

    def __init__(self, store=None):
        self._store = store if store is not None else MooncakeDistributedStore()

    @property
    def store(self):
        return self._store

    def __getattr__(self, name):
        if name.startswith("async_") and name[6:] in _ASYNC:
            fn = getattr(self._store, name[6:])

            async def call(*args, **kwargs):
                loop = asyncio.get_running_loop()
                return await loop.run_in_executor(None, functools.partial(fn, *args, **kwargs))

            call.__name__ = name
            return call
        return getattr(self._store, name)


__all__ = ["MooncakeDistributedStoreAsync"]
