"""Built-in workloads: which sysbench script runs, on which family's dataset, with which options.

`resolve` checks a plan's workload before anything starts, so that a typo is one line of error
rather than a sysbench failure on the first point, and binds it to its family: the result is what
the loader and the sysbench driver take.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

from perflab.domain import HOST_BUILD, Dataset, Plan, Scalar, ServerConfig, Workload
from perflab.errors import PerflabError
from perflab.load.family import Family
from perflab.load.joinlimit import JoinLimitFamily
from perflab.load.sbtest import SbtestFamily
from perflab.load.sqlworkload import SqlFamily

# oltp_common.lua's options that a plan may set (tables, table_size and the engine come from the
# dataset, so they are not workload options).
OLTP_OPTIONS = ("range_size", "point_selects", "simple_ranges", "sum_ranges", "order_ranges",
                "distinct_ranges", "index_updates", "non_index_updates", "delete_inserts",
                "range_selects", "skip_trx", "reconnect")


@dataclass(frozen=True)
class WorkloadSpec:
    name: str
    script: str  # module name on LUA_PATH (sysbench's scripts or perflab's lua/)
    family: type[Family]  # the dataset it reads
    writes: bool  # whether it changes the data (the datadir is restored before reuse)
    options: tuple[str, ...]  # its own options, besides its family's
    summary: str

    @property
    def allowed_options(self) -> tuple[str, ...]:
        return (*self.options, *self.family.dataset_options, *self.family.common_options)


@dataclass(frozen=True)
class ResolvedWorkload:
    """A plan's workload, checked and bound to its family (with the family's files read)."""

    spec: WorkloadSpec
    workload: Workload
    family: Family

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def writes(self) -> bool:
        return self.family.writes(self.spec.writes)

    def sysbench_options(self) -> dict[str, Scalar]:
        """The workload's options that go to sysbench (not those that shape the dataset)."""
        return {k: v for k, v in self.workload.options if k not in self.family.dataset_options}

    def dataset_key(self, dataset: Dataset) -> str:
        return self.family.dataset_key(dataset)

    def config_dataset_key(self, plan: Plan, config: ServerConfig) -> str:
        """The key of the dataset `config` of `plan` runs on (its own engine's, or the plan's),
        on its own build: a datadir is one build's, and never moves to another."""
        key = self.dataset_key(plan.dataset_for(config))
        build = config.environment.server
        return key if build == HOST_BUILD else f"{key}-{build}"


WORKLOADS = {
    spec.name: spec
    for spec in (
        WorkloadSpec("select_random_points", "select_random_points", SbtestFamily, False,
                     ("random_points",) + OLTP_OPTIONS,
                     "SELECT ... WHERE k IN (N random points); each thread keeps to its own "
                     "slice of the key range (the MariaDB KB's key cache benchmark)"),
        WorkloadSpec("select_random_ranges", "select_random_ranges", SbtestFamily, False,
                     ("number_of_ranges", "delta") + OLTP_OPTIONS,
                     "SELECT COUNT(k) over N random BETWEEN ranges"),
        WorkloadSpec("oltp_point_select", "oltp_point_select", SbtestFamily, False, OLTP_OPTIONS,
                     "primary-key point selects"),
        WorkloadSpec("oltp_read_only", "oltp_read_only", SbtestFamily, False, OLTP_OPTIONS,
                     "sysbench's read-only OLTP transaction"),
        WorkloadSpec("oltp_read_write", "oltp_read_write", SbtestFamily, True, OLTP_OPTIONS,
                     "sysbench's read/write OLTP transaction"),
        WorkloadSpec("oltp_write_only", "oltp_write_only", SbtestFamily, True, OLTP_OPTIONS,
                     "sysbench's write-only OLTP transaction"),
        WorkloadSpec("oltp_update_index", "oltp_update_index", SbtestFamily, True, OLTP_OPTIONS,
                     "UPDATE of the indexed column k"),
        WorkloadSpec("oltp_insert", "oltp_insert", SbtestFamily, True, OLTP_OPTIONS,
                     "single-row INSERTs"),
        WorkloadSpec("random-points-uniform", "perflab_random_points_uniform", SbtestFamily,
                     False, ("random_points",),
                     "select_random_points with every point uniform over the whole table, so "
                     "a query means the same at any thread count"),
        WorkloadSpec("rw-mix", "perflab_rw_mix", SbtestFamily, True, ("write_share",),
                     "point SELECT or UPDATE by primary key; write_share 0.01 = read-heavy "
                     "99/1, 0.7 = write-heavy 30/70 (the STAR notes)"),
        WorkloadSpec("join-limit", "perflab_join_limit", JoinLimitFamily, False,
                     ("offset", "limit"),
                     "the MyISAM key-buffer benchmark's 2-table join with LIMIT 1206,18 "
                     "(t1 rows = dataset.rows, t2_rows = 4000)"),
        WorkloadSpec("sql", "perflab_sql", SqlFamily, True, (),
                     "your own statements, schema and data from a TOML file "
                     "(see load/sqlworkload.py)"),
    )
}
# The names the source documents use, for sysbench's own scripts.
ALIASES = {"random-points": "select_random_points", "random-ranges": "select_random_ranges"}


def resolve(workload: Workload, where: str = "workload") -> ResolvedWorkload:
    spec = WORKLOADS.get(ALIASES.get(workload.name, workload.name))
    if spec is None:
        close = difflib.get_close_matches(workload.name, [*WORKLOADS, *ALIASES], n=1)
        raise PerflabError(
            f"{where}.name: unknown workload {workload.name!r}",
            hint=f"did you mean {close[0]}?" if close else f"known: {', '.join(WORKLOADS)}",
        )
    allowed = spec.allowed_options
    for key, _ in workload.options:
        if key not in allowed:
            close = difflib.get_close_matches(key, allowed, n=1)
            raise PerflabError(
                f"{where}.options.{key}: not an option of {spec.name} "
                f"(allowed: {', '.join(allowed)})",
                hint=f"did you mean {close[0]}?" if close else None,
            )
    return ResolvedWorkload(spec, workload, spec.family(dict(workload.options), where))
