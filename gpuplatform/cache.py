"""Django's Redis cache, keeping its Redis client, with a sliding-window counter.

Django's ``RedisCacheClient.get_client`` makes a new ``redis.Redis`` for every cache operation
(on the same connection pool); building one sets up its ~170 response callbacks, about a
millisecond of CPU under load, and a submission makes about six cache operations (the lockout,
the throttle, the catalog, the queued-cycle mark). The client here is made once per connection
pool and kept with it: a ``redis.Redis`` is safe to share, its connections come from the pool,
and Django gives each thread its own cache object (so its own clients and pools).

``count_in_window`` is the job-submission rate limit's counter (gpuplatform/rest.py) in one
Redis round trip: DRF's throttle reads the history and writes it back (two round trips, and two
servers counting at the same moment both read the same history, so one count is lost and the
limit lets more through); here a Lua script trims, counts and adds at once, so the limit holds
exactly whatever the number of servers and threads.
"""

from __future__ import annotations

import secrets
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


# KEYS[1]: a sorted set of the window's hits (score: their time). ARGV: now, window (s), limit,
# a member name unique to this hit. Drops the hits at or before now - window (DRF's rule), adds
# this one if fewer than limit remain; answers {counted (1/0), hits now, oldest hit's time}.
WINDOW_SCRIPT = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', tonumber(ARGV[1]) - tonumber(ARGV[2]))
local hits = redis.call('ZCARD', KEYS[1])
local counted = 0
if hits < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[4])
  redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[2])))
  hits = hits + 1
  counted = 1
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return {counted, hits, oldest[2] or ARGV[1]}
"""


class RedisCache(DjangoRedisCache):
    """``django.core.cache.backends.redis.RedisCache`` with a kept client (see above) and
    ``count_in_window``."""

    def __init__(self, server: Any, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = KeptClientRedisCacheClient
        self._window_script: Any = None  # redis-py's Script: EVALSHA, EVAL when not yet loaded

    def count_in_window(
        self, key: str, now: float, window: float, limit: int
    ) -> tuple[bool, int, float]:
        """Count a hit at ``now`` under ``key`` unless ``limit`` hits already fall within the
        last ``window`` seconds: (counted, hits in the window, time of the oldest of them)."""
        client = self._cache.get_client(write=True)
        if self._window_script is None:
            self._window_script = client.register_script(WINDOW_SCRIPT)
        member = f"{now!r}:{secrets.token_hex(4)}"
        full_key = self.make_and_validate_key(f"window:{key}")
        counted, hits, oldest = self._window_script(
            keys=[full_key], args=[repr(now), window, limit, member], client=client
        )
        return bool(counted), int(hits), float(oldest)
