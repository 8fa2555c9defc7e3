"""Django's Redis cache, keeping its Redis client.

Django's ``RedisCacheClient.get_client`` makes a new ``redis.Redis`` for every cache operation
(on the same connection pool); building one sets up its ~170 response callbacks, about a
millisecond of CPU under load, and a submission makes about six cache operations (the lockout,
the throttle, the catalog, the queued-cycle mark). The client here is made once per connection
pool and kept with it: a ``redis.Redis`` is safe to share, its connections come from the pool,
and Django gives each thread its own cache object (so its own clients and pools).
"""

from __future__ import annotations

from typing import Any

from django.core.cache.backends.redis import RedisCache as DjangoRedisCache
from django.core.cache.backends.redis import RedisCacheClient


class KeptClientRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}  # id of a pool (kept in self._pools) -> its client

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        pool = self._get_connection_pool(write)
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)
        return client


class RedisCache(DjangoRedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with a kept client (see above)."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = KeptClientRedisCacheClient
