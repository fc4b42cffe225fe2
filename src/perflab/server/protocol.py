"""What a run needs of a server, whoever started it: `ManagedServer` (perflab's own mariadbd)
and `ExistingServer` (someone else's) both are one. tests/test_server_contract.py holds every
implementation to it.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import pymysql

from perflab.server.connection import Endpoint


@runtime_checkable
class Server(Protocol):
    """A running server a run measures.

    `endpoint` is where sysbench and perflab connect (its session settings included);
    `options` the variables perflab asked of it (at start, or by SET GLOBAL);
    `connect()` a session on it; `set_global()` changes dynamic variables for a configuration;
    `died()` whether the server went away under a point (never known of someone else's);
    `facts()` what the lab records of it beside its variables (its process, or what it says of
    itself), with at least `connection`; `stop()` leaves it as perflab found it: a managed
    server shut down, an existing one with its variables put back.
    """

    options: dict[str, str]

    @property
    def endpoint(self) -> Endpoint: ...  # read-only here: ManagedServer's is computed

    def connect(self, database: str | None = None) -> pymysql.Connection: ...

    def set_global(self, variables: dict[str, str]) -> None: ...

    def died(self, grace: float = ...) -> bool: ...

    def facts(self) -> dict: ...

    def stop(self) -> None: ...
