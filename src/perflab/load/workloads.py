"""Built-in workloads: which sysbench script runs, on which schema, with which options.

Options are checked here, before anything starts, so that a typo in a plan is one line of error
rather than a sysbench failure on the first point.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from perflab.errors import PerflabError
from perflab.plan import Workload

# Options every sysbench workload understands (sysbench 1.0 core options).
GENERIC_OPTIONS = ("rand_type", "rand_seed", "rand_spec_iter", "rand_spec_pct", "rand_spec_res",
                   "rand_pareto_h", "rand_zipfian_exp", "mysql_ignore_errors", "rate")
# oltp_common.lua's options that a plan may set (tables, table_size and the engine come from the
# dataset, so they are not workload options).
OLTP_OPTIONS = ("range_size", "point_selects", "simple_ranges", "sum_ranges", "order_ranges",
                "distinct_ranges", "index_updates", "non_index_updates", "delete_inserts",
                "range_selects", "skip_trx", "reconnect")


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    script: str  # module name on LUA_PATH (sysbench's scripts or perflab's lua/)
    schema: str  # the dataset schema it reads
    writes: bool  # whether it changes the data (the datadir is restored before reuse)
    options: tuple[str, ...]
    summary: str


WORKLOADS = {
    spec.name: spec
    for spec in (
        WorkloadSpec("select_random_points", "select_random_points", "sbtest", False,
                     ("random_points",) + OLTP_OPTIONS,
                     "SELECT ... WHERE k IN (N random points); each thread keeps to its own "
                     "slice of the key range (seed 000)"),
        WorkloadSpec("select_random_ranges", "select_random_ranges", "sbtest", False,
                     ("number_of_ranges", "delta") + OLTP_OPTIONS,
                     "SELECT COUNT(k) over N random BETWEEN ranges"),
        WorkloadSpec("oltp_point_select", "oltp_point_select", "sbtest", False, OLTP_OPTIONS,
                     "primary-key point selects"),
        WorkloadSpec("oltp_read_only", "oltp_read_only", "sbtest", False, OLTP_OPTIONS,
                     "sysbench's read-only OLTP transaction"),
        WorkloadSpec("oltp_read_write", "oltp_read_write", "sbtest", True, OLTP_OPTIONS,
                     "sysbench's read/write OLTP transaction"),
        WorkloadSpec("oltp_write_only", "oltp_write_only", "sbtest", True, OLTP_OPTIONS,
                     "sysbench's write-only OLTP transaction"),
        WorkloadSpec("oltp_update_index", "oltp_update_index", "sbtest", True, OLTP_OPTIONS,
                     "UPDATE of the indexed column k"),
        WorkloadSpec("oltp_insert", "oltp_insert", "sbtest", True, OLTP_OPTIONS,
                     "single-row INSERTs"),
    )
}


def resolve(workload: Workload, where: str = "workload") -> WorkloadSpec:
    spec = WORKLOADS.get(workload.name)
    if spec is None:
        close = difflib.get_close_matches(workload.name, WORKLOADS, n=1)
        raise PerflabError(
            f"{where}.name: unknown workload {workload.name!r}",
            hint=f"did you mean {close[0]}?" if close else f"known: {', '.join(WORKLOADS)}",
        )
    allowed = spec.options + GENERIC_OPTIONS
    for key, _ in workload.options:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            raise PerflabError(
                f"{where}.options.{key}: not an option of {spec.name} "
                f"(allowed: {', '.join(allowed)})",
                hint=f"did you mean {close[0]}?" if close else None,
            )
    return spec
