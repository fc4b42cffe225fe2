"""How much memory a server's settings can take: global buffers plus the worst case of every
connection filling its own buffers (as MySQLTuner and the server's own documentation count it).

Used by `perflab tune` to refuse a proposal before a server starts, and by `perflab health`'s
memory rule.
"""

from __future__ import annotations

from collections.abc import Mapping

from perflab.server.variables import Catalog, parse_integer

# Buffers allocated once, and per connection.
GLOBAL_BUFFERS = ("innodb_buffer_pool_size", "innodb_log_buffer_size", "key_buffer_size",
                  "query_cache_size", "aria_pagecache_buffer_size")
PER_CONNECTION = ("sort_buffer_size", "join_buffer_size", "read_buffer_size",
                  "read_rnd_buffer_size", "thread_stack", "binlog_cache_size")
MEMORY_VARIABLES = (*GLOBAL_BUFFERS, *PER_CONNECTION, "tmp_table_size", "max_heap_table_size",
                    "max_connections")


def memory_estimate(sizes: Mapping[str, int]) -> int:
    """Worst-case bytes: global buffers + max_connections x per-connection buffers.

    An in-memory temporary table is bounded by the larger of tmp_table_size and
    max_heap_table_size here (MySQLTuner counts the smaller, once): the worst case is a
    connection that fills one.
    """

    def size(name: str) -> int:
        return sizes.get(name, 0)

    per_connection = sum(size(n) for n in PER_CONNECTION)
    per_connection += max(size("tmp_table_size"), size("max_heap_table_size"))
    return sum(size(n) for n in GLOBAL_BUFFERS) + size("max_connections") * per_connection


def configured_sizes(catalog: Catalog, values: Mapping[str, str]) -> dict[str, int]:
    """The memory variables as a configuration would set them: its own values, else the
    server's start-up defaults."""
    sizes = {}
    for name in MEMORY_VARIABLES:
        spec = catalog.variables.get(name)
        default = spec.startup_value if spec else None
        value = values.get(name, default)
        sizes[name] = parse_integer(value) or 0
    return sizes
