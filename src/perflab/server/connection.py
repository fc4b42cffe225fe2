"""Client connections to a server perflab talks to (managed or external)."""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass, field

import pymysql

from perflab.errors import PerflabError

# The statement lua/perflab.lua also sends on each of sysbench's connections.
READ_ONLY_SESSION = "SET SESSION TRANSACTION READ ONLY"
UNKNOWN_SYSTEM_VARIABLE = 1193
VARIABLE_NAME = re.compile(r"^[a-z_][a-z0-9_]*$")  # a server variable's name, safe in SQL


@dataclass(frozen=True)
class Endpoint:
    """Where a server listens. Exactly one of socket or (host, port) is used."""

    socket: str | None = None
    host: str = "127.0.0.1"
    port: int | None = None
    user: str = "root"  # "" with an option_file: the file's user
    password: str = field(default="", repr=False)
    option_file: str | None = None  # a my.cnf whose [client] group may hold user and password
    read_only: bool = False  # every session read-only at the server (someone else's server)
    # MariaDB's max_statement_time for every session: no statement outlives the run there
    max_statement_seconds: float | None = None
    # a file each of sysbench's sessions appends its connection id to: the sentinel ends them
    # on the server if perflab dies (procs.watch_sessions)
    sessions_file: str | None = None

    def connect(self, database: str | None = None, timeout: float = 10) -> pymysql.Connection:
        """A session, autocommit; read-only at the server when the endpoint is (a write then
        fails there with error 1792, whatever the statement looked like)."""
        where: dict[str, str | int | None]
        if self.socket:
            where = {"unix_socket": self.socket}
        else:
            where = {"host": self.host, "port": self.port}
        if self.option_file:
            where["read_default_file"] = self.option_file
        conn = pymysql.connect(
            **where,
            user=self.user,
            password=self.password,
            database=database,
            autocommit=True,
            connect_timeout=timeout,
            read_timeout=None,
        )
        try:
            if self.read_only:
                query(conn, READ_ONLY_SESSION)
            if self.max_statement_seconds is not None:
                _limit_statements(conn, self.max_statement_seconds)
        except BaseException:
            conn.close()
            raise
        return conn

    def sysbench_environment(self) -> dict[str, str]:
        """What lua/perflab.lua sets on each of sysbench's sessions, as this endpoint does."""
        env = {"PERFLAB_READ_ONLY": "1"} if self.read_only else {}
        if self.max_statement_seconds is not None:
            env["PERFLAB_MAX_STATEMENT_SECONDS"] = f"{self.max_statement_seconds:g}"
        if self.sessions_file:
            env["PERFLAB_SESSIONS_FILE"] = self.sessions_file
        return env

    def credentials(self) -> tuple[str, str]:
        """(user, password): the ones given, else the option file's [client] group's."""
        user, password = self.user, self.password
        if self.option_file and not (user and password):
            client = _client_group(self.option_file)
            user = user or client.get("user", "")
            password = password or client.get("password", "")
        return user or "root", password

    def sysbench_args(self) -> list[str]:
        """Where and as whom sysbench connects. A password is never on the command line (any
        local user can read it there): with one, sysbench reads it from its standard input
        (`sysbench_input`) as a config file."""
        user, password = self.credentials()
        where = ([f"--mysql-socket={self.socket}"] if self.socket else
                 [f"--mysql-host={self.host}", f"--mysql-port={self.port}"])
        return [*where, f"--mysql-user={user}",
                *(["--config-file=/dev/stdin"] if password else [])]

    def sysbench_input(self) -> str | None:
        """What sysbench reads on its standard input: the password, or None."""
        password = self.credentials()[1]
        return f"mysql-password={password}\n" if password else None

    def describe(self) -> dict:
        """Where the server is and as whom perflab connects; never the password."""
        where = f"socket {self.socket}" if self.socket else f"tcp {self.host}:{self.port}"
        return {"where": where, "socket": self.socket, "host": self.host, "port": self.port,
                "user": self.user, "option_file": self.option_file}

    @classmethod
    def from_description(cls, described: dict) -> Endpoint:
        return cls(socket=described.get("socket"), host=described.get("host") or "127.0.0.1",
                   port=described.get("port"), user=described.get("user", "root"),
                   option_file=described.get("option_file"))


def _limit_statements(conn: pymysql.Connection, seconds: float) -> None:
    """The session's statements bounded in time: MariaDB's max_statement_time, else MySQL's
    max_execution_time (milliseconds, SELECTs: what a read-only run sends)."""
    try:
        query(conn, "SET SESSION max_statement_time = %s", (seconds,))
    except pymysql.MySQLError as exc:
        if exc.args[0] != UNKNOWN_SYSTEM_VARIABLE:
            raise
        query(conn, "SET SESSION max_execution_time = %s", (int(seconds * 1000),))


def _client_group(option_file: str) -> dict[str, str]:
    """The [client] group of a my.cnf-style option file (what pymysql reads too)."""
    parser = configparser.RawConfigParser(allow_no_value=True, strict=False)
    parser.read(option_file)
    if not parser.has_section("client"):
        return {}
    return {k: (v or "").strip().strip("'\"") for k, v in parser.items("client")}


def query(conn: pymysql.Connection, sql: str, args=None) -> list[tuple]:
    with conn.cursor() as cur:
        cur.execute(sql, args)
        return list(cur.fetchall())


def set_globals(conn: pymysql.Connection, variables: dict[str, str]) -> None:
    """SET GLOBAL each variable to its value (as the server's command line spells it)."""
    for name, value in variables.items():
        set_global(conn, name, value)


def set_global(conn: pymysql.Connection, name: str, value: str | None) -> None:
    """SET GLOBAL one variable, its value sent as a parameter (NULL for None)."""
    query(conn, f"SET GLOBAL {variable_name(name)} = %s",
          (None if value is None else sql_value(value),))


def variable_name(name: str) -> str:
    """`name`, checked to be a server variable's name: the one form perflab writes into SQL,
    never a name pasted as it came (a journal's, a plan's)."""
    if not VARIABLE_NAME.match(name):
        raise PerflabError(f"{name!r} is not a variable name")
    return name


def sql_value(value: str) -> int | float | str:
    """SET GLOBAL wants numbers as numbers and keywords as strings; pymysql quotes strings."""
    try:
        return int(value)
    except ValueError:
        pass
    try:
        return float(value)
    except ValueError:
        return value
