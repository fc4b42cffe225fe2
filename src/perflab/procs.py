"""Child processes that must not outlive perflab."""

from __future__ import annotations

import ctypes
import signal
from collections.abc import Callable

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: signal.Signals) -> Callable[[], None]:
    """A preexec_fn that makes the kernel send `sig` to the child when perflab dies.

    This holds even when perflab is killed with SIGKILL, so a killed run leaves no sysbench
    running and shuts its mariadbd down cleanly.
    """

    def arm() -> None:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, int(sig))

    return arm
