"""A server perflab did not start: someone else's, measured as it is.

Such a server is read-only to perflab unless the user allows more (`Permissions`): writes only
into a schema of perflab's own, SET GLOBAL only of dynamic variables, never a restart. Every
variable perflab changes is written to the lab's journal (LAB/journal.json) before it changes,
with the value it had; the journal is played back when the run ends, on Ctrl-C or SIGTERM, and
by the next perflab command on the lab when perflab was killed (`restore_pending`).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from perflab.errors import PerflabError, error_text
from perflab.server.connection import Endpoint, query, set_globals

JOURNAL = "journal.json"


@dataclass(frozen=True)
class Permissions:
    """What the user allowed on a server perflab did not start."""

    writes: bool = False  # --allow-writes: datasets and writing workloads, in perflab_* schemas
    set_variables: bool = False  # --allow-set: SET GLOBAL of dynamic variables, put back after


class Journal:
    """The variables perflab changed on an existing server and the values they had."""

    def __init__(self, lab_root: Path):
        self.path = lab_root / JOURNAL

    def pending(self) -> dict | None:
        try:
            return json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise PerflabError(f"{self.path} is damaged ({exc})",
                               hint="restore the variables it names by hand, then delete it") \
                from None

    def record(self, endpoint: Endpoint, originals: dict[str, str]) -> None:
        """Note the values before they change; the first value noted for a variable stays (it
        is the one the server had before perflab touched it). Durable before it returns."""
        entry = self.pending() or {"server": endpoint.describe(), "variables": {}}
        for name, value in originals.items():
            entry["variables"].setdefault(name, value)
        partial = self.path.with_suffix(".partial")
        with open(partial, "w") as handle:
            handle.write(json.dumps(entry, indent=1))
            handle.flush()
            os.fsync(handle.fileno())
        partial.rename(self.path)

    def play_back(self, endpoint: Endpoint) -> dict[str, str]:
        """Set every journalled variable back to its original value, then forget them; returns
        what was restored."""
        entry = self.pending()
        if not entry:
            return {}
        restored = entry["variables"]
        with endpoint.connect() as conn:
            set_globals(conn, restored)
        self.path.unlink()
        return restored


def restore_pending(lab_root: Path, endpoint: Endpoint | None, say) -> None:
    """Put back what a killed perflab left changed on an existing server. With no endpoint
    given, the journal's own (socket or host, user, option file; never a password) is tried;
    a server that cannot be reached that way is a PerflabError telling how to restore."""
    journal = Journal(lab_root)
    entry = journal.pending()
    if not entry:
        return
    target = endpoint or Endpoint.from_description(entry["server"])
    try:
        restored = journal.play_back(target)
    except pymysql.MySQLError as exc:
        raise PerflabError(
            f"{lab_root} holds variables changed on {entry['server'].get('where', 'a server')} "
            f"by a perflab that was stopped ({', '.join(entry['variables'])}), and they cannot "
            f"be put back: {error_text(exc)}",
            hint=f"perflab restore --lab {lab_root} with the server's connection options "
                 "(--defaults-file, --password)") from None
    say("restored on the server what an interrupted perflab had changed: "
        + ", ".join(f"{k}={v}" for k, v in restored.items()))


@dataclass
class ExistingServer:
    """The face of an existing server that a run needs: connect, check it answers, change
    dynamic variables through the journal. It is never started, stopped or restarted."""

    endpoint: Endpoint
    journal: Journal
    permissions: Permissions
    options: dict[str, str] = field(default_factory=dict)  # what perflab has SET on it

    def connect(self, database: str | None = None) -> pymysql.Connection:
        return self.endpoint.connect(database)

    def died(self, grace: float = 0.0) -> bool:
        """Never: perflab cannot tell what became of someone else's server, so a failed
        point keeps its own error (and the next points fail the same way if it is gone)."""
        return False

    def set_global(self, variables: dict[str, str]) -> None:
        """SET GLOBAL, each variable's current value journalled first."""
        if not variables:
            return
        if not self.permissions.set_variables:
            raise PerflabError(
                f"this server was not started by perflab: SET GLOBAL {', '.join(variables)} "
                "is refused", hint="add --allow-set to let perflab change dynamic variables "
                                   "(they are put back at the end)")
        with self.connect() as conn:
            originals = {name: _global_value(conn, name) for name in variables}
            self.journal.record(self.endpoint, originals)
            set_globals(conn, variables)
        self.options.update(variables)

    def put_back(self, names: list[str]) -> None:
        """Return `names` to the values they had before perflab (a configuration that does not
        set them follows one that did)."""
        entry = self.journal.pending() or {"variables": {}}
        originals = {n: entry["variables"][n] for n in names if n in entry["variables"]}
        with self.connect() as conn:
            set_globals(conn, originals)
        for name in names:
            self.options.pop(name, None)

    def stop(self) -> None:
        """Never stops the server: puts back whatever perflab changed on it."""
        try:
            self.journal.play_back(self.endpoint)
        except pymysql.MySQLError as exc:
            raise PerflabError(f"the variables changed on the server could not be put back "
                               f"({error_text(exc)}); they stay in {self.journal.path}",
                               hint="once the server answers, any perflab command on the lab "
                                    "puts them back (perflab restore --lab ...)") from None
        self.options = {}

    def facts(self) -> dict:
        """What the server says about itself and its host, for the lab beside the client's."""
        with self.connect() as conn:
            row = query(conn, "SELECT @@hostname, @@version, @@version_comment, "
                              "@@version_compile_machine, @@version_compile_os, @@datadir, "
                              "@@read_only")[0]
            uptime = query(conn, "SHOW GLOBAL STATUS LIKE 'Uptime'")
        names = ("hostname", "version", "version_comment", "machine", "os", "datadir",
                 "read_only")
        return {**dict(zip(names, row, strict=True)),
                "uptime_seconds": int(uptime[0][1]) if uptime else None,
                "connection": self.endpoint.describe()["where"], "started_by": "someone else"}


def _global_value(conn: pymysql.Connection, name: str) -> str:
    value = query(conn, f"SELECT @@GLOBAL.{name}")[0][0]
    return "" if value is None else str(value)
