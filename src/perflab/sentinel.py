"""Outlives perflab to finish what its death left: servers their shutdown signal did not stop.

perflab's servers get SIGTERM from the kernel when perflab dies, even by SIGKILL
(procs.die_with_parent), and shut down cleanly. MariaDB 10.11 does not when that SIGTERM lands
early in its start-up (about 0.1 s in, around the buffer-pool load): it then neither finishes
starting nor exits, ever. So perflab tells this process, through a pipe, each server it starts
(pid and kernel start time, so that a reused pid is never hit), when it is ready and when it
stopped. When the pipe closes (perflab exited, however it died), the sentinel kills at once the
servers that were still starting, gives the ready ones GRACE_SECONDS to shut down on their
SIGTERM, then kills any left, and exits.

Started by procs.tell_sentinel as `python -m perflab.sentinel`, in a session of its own so that a
Ctrl-C meant for perflab does not reach it.
"""

from __future__ import annotations

import os
import signal
import sys
import time

GRACE_SECONDS = 120  # a large buffer pool's clean shutdown, with its dump, takes seconds


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
    for line in sys.stdin:
        what, pid_text, *rest = line.split()
        pid = int(pid_text)
        if what == "start":
            servers[pid] = (rest[0], False)
        elif what == "ready" and pid in servers:
            servers[pid] = (servers[pid][0], True)
        elif what == "gone":
            servers.pop(pid, None)
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


if __name__ == "__main__":
    main()
