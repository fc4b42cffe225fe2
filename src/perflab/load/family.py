"""Workload families: the dataset a group of workloads reads, and what drives them.

A family (sbtest, joinlimit, sql) owns its schema, the options it adds to its workloads, the
options that shape its dataset rather than the load, its dataset loader, and what sysbench needs
to run its scripts against that dataset. One family object is made per workload of a plan, with
the workload's options, so a family that reads a file (sql) reads it once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from perflab.domain import Dataset, Scalar
from perflab.load.classify import Classified
from perflab.server.connection import Endpoint

# sysbench 1.0's driver options, which apply to any script.
DRIVER_OPTIONS = ("mysql_ignore_errors", "rate")

# Server settings used only while a dataset is being loaded (the snapshot is taken afterwards,
# so they never leak into a measured configuration).
LOADER_OPTIONS = {
    "key_buffer_size": str(256 << 20),
    "myisam_sort_buffer_size": str(256 << 20),
    "aria_sort_buffer_size": str(256 << 20),
    "innodb_buffer_pool_size": str(1 << 30),
    "innodb_flush_log_at_trx_commit": "0",
    "innodb_doublewrite": "0",
    "max_allowed_packet": str(64 << 20),
}


@dataclass(frozen=True)
class LoadReport:
    rows: int
    tables: int
    seconds: float


class Family(ABC):
    """A dataset schema and its loader, bound to one workload's options."""

    schema: ClassVar[str]  # the database the dataset lives in (sysbench's --mysql-db)
    common_options: ClassVar[tuple[str, ...]] = DRIVER_OPTIONS  # taken by all its workloads
    dataset_options: ClassVar[tuple[str, ...]] = ()  # shape the dataset, never go to sysbench

    def __init__(self, options: dict[str, Scalar], where: str):
        """`where` names the plan key the options came from, for error messages."""
        self.options = options

    def check(self, dataset: Dataset, where: str) -> None:
        """Raise a PerflabError when the options cannot work with this dataset; called for
        every configuration's dataset before anything starts. Most families take any."""
        return None

    def writes(self, declared: bool) -> bool:
        """Whether the workload changes data; most families' workloads are as declared."""
        return declared

    def dataset_settings(self) -> dict[str, Scalar]:
        """What, besides the plan's dataset, makes this family's data: part of its key."""
        return {k: v for k, v in self.options.items() if k in self.dataset_options}

    def dataset_key(self, dataset: Dataset) -> str:
        """The name of a prepared dataset: schema, engine, size and the dataset options."""
        key = f"{self.schema}-{dataset.engine.lower()}-{dataset.tables}x{dataset.rows}"
        for name, value in sorted(self.dataset_settings().items()):
            key += f"-{name}{value}"
        return key

    def describe(self, dataset: Dataset) -> str:
        """The data a result was measured on, in a report's words (its engine aside): the
        plan's tables and rows, unless the family makes its data otherwise; on a server
        perflab did not start, the schema used as it is."""
        shape = f"{dataset.tables} table(s) x {dataset.rows} rows"
        return f"schema {dataset.existing} as it is, {shape}" if dataset.existing else shape

    def engines(self, dataset: Dataset) -> set[str] | None:
        """The storage engines of the tables the workload reads: the dataset's (None: unknown,
        a schema perflab did not make)."""
        return None if dataset.existing else {dataset.engine}

    @abstractmethod
    def load(self, endpoint: Endpoint, dataset: Dataset) -> LoadReport:
        """Create and fill the schema on a running server."""

    def sysbench_args(self, dataset: Dataset, writes: bool) -> list[str]:
        """Arguments sysbench needs for this family's dataset (beyond the workload options)."""
        return []

    def statements(self) -> tuple[tuple[str, Classified], ...]:
        """The user's own statements and what each does (a built-in script has none: it is as
        its workload declares)."""
        return ()

    def setup_statements(self) -> tuple[str, ...]:
        """The user's own statements that make the dataset (a built-in loader has none)."""
        return ()

    def write_files(self, directory: Path) -> None:
        """Write what the family's Lua scripts read into `directory` (the lab), before the
        first sysbench; most families read nothing."""
        return None

    def sysbench_environment(self) -> dict[str, str]:
        """Environment variables the family's Lua scripts read."""
        return {}

    def client_files(self) -> dict[str, str]:
        """The files of `write_files` by the environment variable that names them, with their
        text: a client worker on another machine writes its own copy (load/clients.py)."""
        return {}
