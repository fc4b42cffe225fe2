"""The joinlimit family: the two tables of the MyISAM key-buffer contention benchmark, as
printed, for its `LIMIT 1206,18` join."""

from __future__ import annotations

import time

from perflab.domain import Dataset, Scalar
from perflab.errors import PerflabError
from perflab.load.family import Family, LoadReport
from perflab.load.numbers import numbers
from perflab.server.connection import Endpoint, query

SCHEMA = "joinlimit"
T2_ROWS = 4000  # the page's t2


class JoinLimitFamily(Family):
    """t1 holds the plan's dataset.rows rows, t2 `t2_rows` (a dataset option)."""

    schema = SCHEMA
    dataset_options = ("t2_rows",)

    def __init__(self, options: dict[str, Scalar], where: str):
        super().__init__(options, where)
        t2_rows = options.get("t2_rows", T2_ROWS)
        if isinstance(t2_rows, bool) or not isinstance(t2_rows, int) or t2_rows < 1:
            raise PerflabError(f"{where}.options.t2_rows must be a positive integer, "
                               f"got {t2_rows!r}", hint=f"the page's t2 has {T2_ROWS} rows")
        self.t2_rows = t2_rows

    def check(self, dataset: Dataset, where: str) -> None:
        if self.t2_rows > dataset.rows:
            raise PerflabError(f"{where}: join-limit's t2_rows = {self.t2_rows} exceeds t1's "
                               f"{dataset.rows} rows, but every t2 row needs its own t1_id",
                               hint="lower workload.options.t2_rows, or raise dataset.rows "
                               "(or --scale)")

    def load(self, endpoint: Endpoint, dataset: Dataset) -> LoadReport:
        return load_join_limit(endpoint, dataset, self.t2_rows)


def load_join_limit(endpoint: Endpoint, dataset: Dataset, t2_rows: int = T2_ROWS) -> LoadReport:
    """The MyISAM key-buffer contention benchmark's tables, as printed, with its data
    distribution.

    t1 holds dataset.rows rows (the page: about 260,000), all with stat=1; t2 holds t2_rows
    rows (the page: 4,000), all with val=5, each pointing at a different random t1 row.
    """
    if t2_rows > dataset.rows:
        raise PerflabError(f"join-limit: t2_rows = {t2_rows} exceeds t1's {dataset.rows} rows, "
                           "but every t2 row needs its own t1_id",
                           hint="lower workload.options.t2_rows, or raise dataset.rows "
                           "(or --scale)")
    started = time.monotonic()
    engine = dataset.engine
    with endpoint.connect() as conn:
        query(conn, f"DROP DATABASE IF EXISTS {SCHEMA}")
        query(conn, f"CREATE DATABASE {SCHEMA}")
        query(conn, f"USE {SCHEMA}")
        query(conn, "CREATE TABLE t1 (id int(11) UNSIGNED NOT NULL AUTO_INCREMENT, "
                    "stat int(11) UNSIGNED NOT NULL, PRIMARY KEY (id), KEY id (id, stat)) "
                    f"ENGINE={engine}")
        query(conn, "CREATE TABLE t2 (id int(11) UNSIGNED NOT NULL AUTO_INCREMENT, "
                    "val int(11) UNSIGNED NOT NULL, name varchar(100) NOT NULL, "
                    "t1_id int(10) UNSIGNED NOT NULL, PRIMARY KEY (id), KEY val (val)) "
                    f"ENGINE={engine}")
        with numbers(conn, dataset.rows) as seq:
            query(conn, f"INSERT INTO t1 (id, stat) SELECT seq, 1 FROM {seq}")
            # distinct random t1 ids: the first t2_rows of a seeded shuffle of t1's ids
            query(conn, "INSERT INTO t2 (val, name, t1_id) "
                        "SELECT 5, CONCAT('name-', MD5(seq)), seq FROM "
                        f"(SELECT seq FROM {seq} ORDER BY RAND(1) "
                        f"LIMIT {t2_rows}) AS picked")
        counts = query(conn, "SELECT (SELECT COUNT(*) FROM t1), (SELECT COUNT(*) FROM t2), "
                             "(SELECT COUNT(DISTINCT t1_id) FROM t2)")[0]
    if tuple(counts) != (dataset.rows, t2_rows, t2_rows):
        raise PerflabError(f"join-limit dataset came out as {counts}, not "
                           f"({dataset.rows}, {t2_rows}, {t2_rows})")
    return LoadReport(dataset.rows + t2_rows, 2, time.monotonic() - started)

