"""Client connections to a server perflab talks to (managed or external)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pymysql


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens. Exactly one of socket or (host, port) is used."""

    socket: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    user: str = "root"  # "" with an option_file: the file's user
    password: str = field(default="", repr=False)
    option_file: str | None = None  # a my.cnf whose [client] group may hold user and password

    def connect(self, database: str | None = None, timeout: float = 10) -> pymysql.Connection:
        if self.socket:
            where = {"unix_socket": self.socket}
        else:
            where = {"host": self.host, "port": self.port}
        if self.option_file:
            where["read_default_file"] = self.option_file
        return pymysql.connect(
            **where,
            user=self.user,
            password=self.password,
            database=database,
            autocommit=True,
            connect_timeout=timeout,
            read_timeout=None,
        )

    def sysbench_args(self) -> list[str]:
        if self.socket:
            return [f"--mysql-socket={self.socket}", f"--mysql-user={self.user}"]
        return [
            f"--mysql-host={self.host}",
            f"--mysql-port={self.port}",
            f"--mysql-user={self.user}",
        ]


def query(conn: pymysql.Connection, sql: str, args=None) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())
