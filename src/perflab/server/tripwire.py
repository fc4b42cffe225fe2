"""The tripwire of a run on a server perflab did not start: between points, every global
variable is compared with how perflab last left it (before the run, or after its own SET
GLOBAL and put-backs). A change perflab did not make means a promise failed (a statement
reached further than its checks said, or another client changed the server): the run stops
at once, naming each change, with what SET GLOBAL can put back set back to its value. A
promise that failed never fails silently.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import pymysql

from perflab.errors import PerflabError
from perflab.server.connection import query, set_global
from perflab.server.variables import read_catalog

# Global variables that move on their own while a server runs: never compared.
MOVING = re.compile(r"^(gtid_(binlog_pos|binlog_state|current_pos|slave_pos)|"
                    r"innodb_buffer_pool_size_auto|timestamp|last_insert_id)$")


class Tripped(PerflabError):
    """A global variable changed during a run that did not change it: the run stops."""


def global_variables(conn: pymysql.Connection) -> dict[str, str]:
    """Every global variable of the server but those that move on their own."""
    return {name.lower(): value for name, value in query(conn, "SHOW GLOBAL VARIABLES")
            if not MOVING.match(name.lower())}


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The names whose values differ (or that one side lacks), sorted."""
    return sorted(name for name in before.keys() | after.keys()
                  if before.get(name) != after.get(name))


def listed(changed: list[str], before: dict[str, str], after: dict[str, str]) -> str:
    """The first ten changes, each with its two values, for a message."""
    return "; ".join(f"{n} was {before.get(n)!r}, is {after.get(n)!r}" for n in changed[:10]) \
        + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")


@dataclass
class Tripwire:
    """Every global variable as perflab last left it, and the check against it."""

    expected: dict[str, str] | None = field(default=None, repr=False)

    def reset(self, variables: dict[str, str]) -> None:
        """The reference: the server's global variables as they are now (`global_variables`,
        read after perflab changed them, or as it starts)."""
        self.expected = variables

    def disarm(self) -> None:
        """No reference while perflab itself changes the server (an interruption meanwhile
        must not read perflab's own change as another's)."""
        self.expected = None

    def check(self, conn: pymysql.Connection) -> None:
        """Tripped, naming every change since the reference, after setting back each that
        SET GLOBAL can; nothing when none changed (or no reference was taken)."""
        if self.expected is None:
            return
        expected, now = self.expected, global_variables(conn)
        changed = differences(expected, now)
        if not changed:
            return
        specs = read_catalog(conn).variables
        put_back, kept = [], []
        for name in changed:
            spec = specs.get(name)
            try:
                if spec is None or not spec.dynamic or name not in expected:
                    raise PerflabError("not a dynamic variable")
                set_global(conn, name, expected[name])
                put_back.append(name)
            except (pymysql.MySQLError, PerflabError):
                kept.append(name)
        raise Tripped(
            "the server's global variables changed during the run, and perflab changed none "
            f"of them: {listed(changed, expected, now)}; the run stops",
            hint=(f"set back: {', '.join(put_back)}" if put_back else "none could be set back")
            + (f"; still changed: {', '.join(kept)}" if kept else "")
            + "; a statement of the workload, or another client of the server, changed them")
