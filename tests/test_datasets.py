"""perflab's loader makes the same sbtest table that `sysbench prepare` makes."""

import subprocess

import pytest

from conftest import copy_datadir
from perflab.domain import Dataset
from perflab.load.sbtest import load_sbtest
from perflab.server.connection import query
from perflab.server.managed import ManagedServer

ROWS = 20_000


@pytest.fixture(scope="module")
def server(tmp_path_factory, pristine_datadir):
    root = tmp_path_factory.mktemp("loader")
    copy_datadir(pristine_datadir, root / "data")
    with ManagedServer(root / "data", root) as server:
        yield server


def create_table(conn, schema, table):
    text = query(conn, f"SHOW CREATE TABLE {schema}.{table}")[0][1]
    return text.split("AUTO_INCREMENT=")[0]


@pytest.mark.parametrize("engine", ["MyISAM", "InnoDB", "Aria", "MEMORY"])
def test_loader_matches_sysbench_prepare(server, engine):
    load_sbtest(server.endpoint, Dataset(engine=engine, tables=2, rows=ROWS))
    with server.connect() as conn:
        query(conn, "DROP DATABASE IF EXISTS sysbench_ref")
        query(conn, "CREATE DATABASE sysbench_ref")
        subprocess.run(
            ["sysbench", "oltp_common", "--db-driver=mysql", *server.endpoint.sysbench_args(),
             "--mysql-db=sysbench_ref", f"--mysql-storage-engine={engine}", "--tables=1",
             f"--table-size={ROWS}", "prepare"],
            check=True, capture_output=True,
        )
        assert create_table(conn, "sbtest", "sbtest1") == create_table(
            conn, "sysbench_ref", "sbtest1"
        )
        for table in ("sbtest1", "sbtest2"):
            count, lo, hi, central = query(
                conn,
                f"SELECT COUNT(*), MIN(id), MAX(id), "
                f"AVG(k BETWEEN {ROWS * 0.495} AND {ROWS * 0.505}) FROM sbtest.{table}",
            )[0]
            assert (count, lo, hi) == (ROWS, 1, ROWS)
            # sysbench's 'special' distribution puts 3/4 of k in the central 1% of the range
            assert 0.70 < float(central) < 0.82
        ref_central = query(
            conn,
            f"SELECT AVG(k BETWEEN {ROWS * 0.495} AND {ROWS * 0.505}) FROM sysbench_ref.sbtest1",
        )[0][0]
        assert 0.70 < float(ref_central) < 0.82
        c, pad = query(conn, "SELECT c, pad FROM sbtest.sbtest1 LIMIT 1")[0]
        assert len(c) == 119 and c.count("-") == 9 and c.replace("-", "").isdigit()
        assert len(pad) == 59 and pad.count("-") == 4
