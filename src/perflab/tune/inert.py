"""Knobs that cannot act in a winner's context, left out of its my.cnf before anything is
measured: a setting of a component the winner's other settings switch off does nothing, and
put back alone it costs nothing either, so measuring cannot tell it from a setting that
carries part of the gain (issue 44: a winner with key_buffer_size = 0 recommended
key_cache_segments = 59 and key_cache_division_limit = 17, and thread_pool_stall_limit under
one-thread-per-connection).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from perflab.server.variables import parse_integer

MYISAM_BLOCK = 1024  # myisam_block_size's default: the index block MyISAM reads and writes


@dataclass(frozen=True)
class Component:
    """A part of the server some knobs set up, and the values that switch it off."""

    name: str
    members: Callable[[str], bool]  # the knobs that belong to it
    off: Callable[[Mapping[str, str]], bool]  # whether these values switch it off


COMPONENTS = (
    Component("the key cache (key_buffer_size = 0)",
              lambda knob: knob == "key_buffer_size" or knob.startswith("key_cache_"),
              lambda values: parse_integer(values.get("key_buffer_size")) == 0),
    Component("the thread pool (thread_handling is not pool-of-threads)",
              lambda knob: knob == "thread_handling" or knob.startswith("thread_pool_"),
              lambda values: str(values.get("thread_handling", "one-thread-per-connection"))
              .lower() != "pool-of-threads"),
)
# The query cache is left to measurement: MariaDB switches it on when query_cache_size is
# given at start, whatever query_cache_type says, so which knob turns it on or off depends on
# how the server was started.


def inert_knobs(moved: Mapping[str, str], defaults: Mapping[str, str | None],
                fixed: Mapping[str, object] | None = None) -> dict[str, str]:
    """{knob: why} for the knobs of `moved` (the winner's changes from the `defaults`, the
    searched knobs' startup values) that cannot act beside the winner's other values, `fixed`
    (what the plan sets for every trial) included: a member of a component that stays off
    with the knob at its default (so the knob that switches it off is never inert itself),
    and a key-cache block smaller than MyISAM's index block."""
    values = {name: str(value) for name, value in (fixed or {}).items()}
    values.update({name: str(value) for name, value in defaults.items() if value is not None})
    values.update(moved)
    out = {}
    for knob in moved:
        for component in COMPONENTS:
            if not component.members(knob) or not component.off(values):
                continue
            reverted = dict(values)
            if defaults.get(knob) is None:
                reverted.pop(knob, None)
            else:
                reverted[knob] = str(defaults[knob])
            if component.off(reverted):
                out[knob] = f"{component.name} is off"
    block = parse_integer(values.get("key_cache_block_size"))
    index = parse_integer(values.get("myisam_block_size")) or MYISAM_BLOCK
    if "key_cache_block_size" in moved and "key_cache_block_size" not in out and \
            block is not None and index is not None and block < index:
        out["key_cache_block_size"] = (f"below MyISAM's index block ({index} bytes): a "
                                       "smaller cache block only splits it")
    return out
