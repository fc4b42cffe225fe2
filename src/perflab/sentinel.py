"""Outlives perflab to finish what its death left: servers their shutdown signal did not stop.

perflab's servers get SIGTERM from the kernel when perflab dies, even by SIGKILL
(procs.die_with_parent), and shut down cleanly. MariaDB 10.11 does not when that SIGTERM lands
early in its start-up (about 0.1 s in, around the buffer-pool load): it then neither finishes
starting nor exits, ever. So perflab tells this process, through a pipe, each server it starts
(pid and kernel start time, so that a reused pid is never hit), when it is ready and when it
stopped. When the pipe closes (perflab exited, however it died), the sentinel kills at once the
servers that were still starting, gives the ready ones GRACE_SECONDS to shut down on their
SIGTERM, then kills any left, and exits.

On a server perflab did not start, sysbench's sessions note their connection ids in a file
(lua/perflab.lua), and perflab tells this process the file and how to connect (procs.
watch_sessions). A killed sysbench leaves its running statement running on the server (up to
max_statement_time); when the pipe closes with such a file still watched, the sentinel ends
those sessions there with KILL, each only while the processlist shows it as perflab's user's.

Started by procs.tell_sentinel as `python -m perflab.sentinel`, in a session of its own so that a
Ctrl-C meant for perflab does not reach it.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from contextlib import suppress
from enum import StrEnum

GRACE_SECONDS = 120  # a large buffer pool's clean shutdown, with its dump, takes seconds


class Told(StrEnum):
    """What a line perflab writes to the sentinel says, its first word."""

    START = "start"  # a server started: its pid and kernel start time
    READY = "ready"  # it is ready: its pid
    GONE = "gone"  # it stopped: its pid
    SESSIONS = "sessions"  # a sessions file to watch, and how to reach its server (JSON)
    FORGET = "forget"  # a sessions file no longer to watch (JSON)


def start_time(pid: int) -> str | None:
    """The process's start time in clock ticks since boot (field 22 of /proc/PID/stat), or None
    when there is no such process or it has exited (a zombie)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()  # from field 3, after the name
    except OSError:
        return None
    return None if fields[0] == "Z" else fields[19]


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    servers: dict[int, tuple[str, bool]] = {}  # pid -> (start time, ready)
    sessions: dict[str, dict] = {}  # sessions file -> how to reach their server
    for line in sys.stdin:
        what, _, argument = line.strip().partition(" ")
        if what == Told.SESSIONS:
            found = json.loads(argument)
            sessions[found["file"]] = found
            continue
        if what == Told.FORGET:
            sessions.pop(json.loads(argument), None)
            continue
        pid, rest = int(argument.split()[0]), argument.split()[1:]
        if what == Told.START:
            servers[pid] = (rest[0], False)
        elif what == Told.READY and pid in servers:
            servers[pid] = (servers[pid][0], True)
        elif what == Told.GONE:
            servers.pop(pid, None)
    for found in sessions.values():
        with suppress(Exception):  # a server gone or refusing: nothing more can be done
            end_sessions(found)
        with suppress(OSError):
            os.unlink(found["file"])
    deadline = time.monotonic() + GRACE_SECONDS
    while servers:
        for pid, (started, ready) in list(servers.items()):
            if start_time(pid) != started:
                del servers[pid]  # exited (or its pid now belongs to another process)
            elif not ready or time.monotonic() > deadline:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:  # it exited (and was reaped) since the line above
                    pass
                del servers[pid]
        time.sleep(0.2)


def end_sessions(found: dict) -> None:
    """KILL every session whose id the file names, if the server still shows it as one of
    the user's (ids only grow on a running server: never another client's)."""
    import pymysql  # only here: the sentinel of a run on managed servers never needs it

    with open(found["file"]) as listed:
        ids = {int(line) for line in listed if line.strip().isdigit()}
    if not ids:
        return
    where = {"unix_socket": found["socket"]} if found["socket"] else \
        {"host": found["host"], "port": found["port"]}
    if found["option_file"]:
        where["read_default_file"] = found["option_file"]
    conn = pymysql.connect(**where, user=found["user"] or None, password=found["password"],
                           autocommit=True, connect_timeout=10)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT ID FROM information_schema.PROCESSLIST WHERE USER = "
                        "SUBSTRING_INDEX(CURRENT_USER(), '@', 1)")
            mine = {row[0] for row in cur.fetchall()}
            for session in sorted(ids & mine):
                with suppress(pymysql.MySQLError):  # it ended since
                    cur.execute(f"KILL CONNECTION {int(session)}")
    finally:
        conn.close()


if __name__ == "__main__":
    main()
