"""The whole numbers 1..N as a table, which the loaders select rows from.

MariaDB's Sequence engine gives one by name (`seq_1_to_N`, column `seq`); MySQL has none, so there
a table of that name and column is made for the load, filled by doubling (about log2 N
statements), and dropped after it, so that the loaders' SQL is the same on both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from perflab.server.connection import query
from perflab.server.flavor import flavor_of


@contextmanager
def numbers(conn, count: int) -> Iterator[str]:
    """The name of a table of `seq` = 1..count in the connection's current schema."""
    name = f"seq_1_to_{count}"
    version, comment = query(conn, "SELECT @@version, @@version_comment")[0]
    if flavor_of(version, comment).mariadb:
        yield name
        return
    query(conn, f"CREATE TABLE {name} (seq BIGINT UNSIGNED NOT NULL PRIMARY KEY)")
    try:
        query(conn, f"INSERT INTO {name} VALUES (1)")
        have = 1
        while have < count:
            query(conn, f"INSERT INTO {name} SELECT seq + {have} FROM {name} "
                        f"WHERE seq + {have} <= {count}")
            have = min(2 * have, count)
        yield name
    finally:
        query(conn, f"DROP TABLE IF EXISTS {name}")
