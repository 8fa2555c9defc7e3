"""The Redis cache keeps one Redis client per connection pool instead of making one per cache
operation (gpuplatform/cache.py). Nothing here connects: a client and a pool connect when used."""

from __future__ import annotations

from gpuplatform.cache import RedisCache


def test_every_operation_gets_the_same_client_on_the_same_pool() -> None:
    cache = RedisCache("redis://127.0.0.1:6399/3", {})
    first = cache._cache.get_client(write=True)
    assert cache._cache.get_client("key") is first
    assert cache._cache.get_client(write=True) is first
    assert first.connection_pool is cache._cache._get_connection_pool(True)
    assert first.connection_pool.connection_kwargs["db"] == 3


def test_each_server_of_a_replicated_cache_has_its_own_client() -> None:
    cache = RedisCache(["redis://127.0.0.1:6399/0", "redis://127.0.0.1:6398/0"], {})
    writer = cache._cache.get_client(write=True)
    reader = cache._cache.get_client()  # the only other server
    assert writer is not reader
    assert cache._cache.get_client() is reader
    assert reader.connection_pool.connection_kwargs["port"] == 6398
