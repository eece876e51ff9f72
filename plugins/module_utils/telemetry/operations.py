# Copyright: Tactician maintainers
# Apache License 2.0 (see LICENSE)
"""How each store's own counters map onto the workload operations of a sample (samples.OPS), whoever read them:
observe polling the server (stores/), or a Prometheus exporter's series (telemetry/prometheus.py).

Standard library only: this file is shipped to managed nodes.
"""

from __future__ import annotations

# How the commands a Redis server counts map onto workload operations. Redis cannot tell an insert from an
# update (both write a key), so writes count as updates; commands not listed (admin, cluster, pub/sub) are other.
REDIS_COMMAND_OPERATIONS = {
    "read": (
        "get",
        "mget",
        "hget",
        "hgetall",
        "hmget",
        "hexists",
        "exists",
        "getrange",
        "strlen",
        "lrange",
        "lindex",
        "smembers",
        "sismember",
        "zscore",
        "zrank",
        "hlen",
        "llen",
        "scard",
        "zcard",
        "getex",
    ),
    "scan": (
        "zrangebyscore",
        "zrange",
        "zrevrange",
        "zrevrangebyscore",
        "zrangebylex",
        "scan",
        "hscan",
        "sscan",
        "zscan",
        "xrange",
        "xrevrange",
    ),
    "update": (
        "set",
        "setex",
        "psetex",
        "setnx",
        "mset",
        "msetnx",
        "hset",
        "hmset",
        "hsetnx",
        "append",
        "incr",
        "incrby",
        "decr",
        "decrby",
        "incrbyfloat",
        "hincrby",
        "lpush",
        "rpush",
        "lset",
        "sadd",
        "zadd",
        "zincrby",
        "xadd",
        "getset",
        "expire",
        "pexpire",
        "persist",
    ),
    "delete": ("del", "unlink", "hdel", "lrem", "srem", "zrem", "zremrangebyscore", "xdel", "getdel"),
}
_REDIS_COMMAND_TO_OP = {command: op for op, commands in REDIS_COMMAND_OPERATIONS.items() for command in commands}


def redis_operation(command):
    """The sample operation a Redis command counts as: ``get`` -> read, ``config|get`` -> other (a subcommand
    counts as its command), unknown commands -> other. Case does not matter."""
    return _REDIS_COMMAND_TO_OP.get(str(command).lower().split("|", maxsplit=1)[0], "other")
