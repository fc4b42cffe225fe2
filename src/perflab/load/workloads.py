"""Built-in workloads: which sysbench script runs, on which schema, with which options.

Options are checked here, before anything starts, so that a typo in a plan is one line of error
rather than a sysbench failure on the first point.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from perflab.errors import PerflabError
from perflab.load.sqlworkload import load_sql_workload
from perflab.plan import Workload

# sysbench 1.0 core options: the driver's apply to any script, the random-distribution ones only
# to scripts drawing from sysbench.rand.default (the sbtest ones; perflab_sql draws uniform).
DRIVER_OPTIONS = ("mysql_ignore_errors", "rate")
GENERIC_OPTIONS = ("rand_type", "rand_seed", "rand_spec_iter", "rand_spec_pct", "rand_spec_res",
                   "rand_pareto_h", "rand_zipfian_exp", *DRIVER_OPTIONS)
# oltp_common.lua's options that a plan may set (tables, table_size and the engine come from the
# dataset, so they are not workload options).
OLTP_OPTIONS = ("range_size", "point_selects", "simple_ranges", "sum_ranges", "order_ranges",
                "distinct_ranges", "index_updates", "non_index_updates", "delete_inserts",
                "range_selects", "skip_trx", "reconnect")


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    script: str  # module name on LUA_PATH (sysbench's scripts or perflab's lua/)
    schema: str  # the dataset schema it reads: "sbtest" or "joinlimit"
    writes: bool  # whether it changes the data (the datadir is restored before reuse)
    options: tuple[str, ...]
    summary: str
    # Options that shape the dataset rather than the load: part of the dataset's key, never
    # passed to sysbench.
    dataset_options: tuple[str, ...] = ()

    def sysbench_options(self, workload: Workload) -> tuple[tuple[str, object], ...]:
        return tuple((k, v) for k, v in workload.options if k not in self.dataset_options)

    def dataset_settings(self, workload: Workload) -> dict[str, object]:
        settings = {k: v for k, v in workload.options if k in self.dataset_options}
        if self.name == "sql":  # the file's content names the dataset, not its path
            return {"sql": load_sql_workload(settings["file"]).digest}
        return settings


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
        WorkloadSpec("random-points-uniform", "perflab_random_points_uniform", "sbtest", False,
                     ("random_points",),
                     "select_random_points with every point uniform over the whole table, so "
                     "a query means the same at any thread count"),
        WorkloadSpec("rw-mix", "perflab_rw_mix", "sbtest", True, ("write_share",),
                     "point SELECT or UPDATE by primary key; write_share 0.01 = read-heavy "
                     "99/1, 0.7 = write-heavy 30/70 (seed 004)"),
        WorkloadSpec("join-limit", "perflab_join_limit", "joinlimit", False,
                     ("offset", "limit", "t2_rows"),
                     "seed 001's 2-table join with LIMIT 1206,18 (t1 rows = dataset.rows, "
                     "t2_rows = 4000)", dataset_options=("t2_rows",)),
    )
}
WORKLOADS["sql"] = WorkloadSpec(
    "sql", "perflab_sql", "perflab_sql", True, ("file", *DRIVER_OPTIONS),
    "your own statements, schema and data from a TOML file (see load/sqlworkload.py)",
    dataset_options=("file",),
)
# The names the source documents use, for sysbench's own scripts.
ALIASES = {"random-points": "select_random_points", "random-ranges": "select_random_ranges"}


def resolve(workload: Workload, where: str = "workload") -> WorkloadSpec:
    spec = WORKLOADS.get(ALIASES.get(workload.name, workload.name))
    if spec is None:
        close = difflib.get_close_matches(workload.name, [*WORKLOADS, *ALIASES], n=1)
        raise PerflabError(
            f"{where}.name: unknown workload {workload.name!r}",
            hint=f"did you mean {close[0]}?" if close else f"known: {', '.join(WORKLOADS)}",
        )
    allowed = spec.options + (GENERIC_OPTIONS if spec.schema == "sbtest" else ())
    if spec.name == "sql":
        options = dict(workload.options)
        if "file" not in options:
            raise PerflabError(f"{where}.options.file is required for the sql workload",
                               hint='options = { file = "my-workload.toml" }')
        load_sql_workload(options["file"], f"{where}.options.file")
    for key, _ in workload.options:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            raise PerflabError(
                f"{where}.options.{key}: not an option of {spec.name} "
                f"(allowed: {', '.join(allowed)})",
                hint=f"did you mean {close[0]}?" if close else None,
            )
    return spec
