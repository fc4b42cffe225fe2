"""The sbtest family: sysbench's own tables, loaded faster than `sysbench prepare`.

The rows match what sysbench 1.0's oltp_common.lua prepares: the same table definition, `k`
drawn from sysbench's default 'special' distribution (75% of the values in the central 1% of the
range, the rest roughly gaussian), and `c`/`pad` made of 11-digit groups joined by dashes.

Speed comes from two places: numpy generates the rows in bulk, and the server reads them with
LOAD DATA INFILE from a named pipe, so generation (one core) overlaps the insert (the other).
Secondary indexes are built in bulk: MyISAM/Aria disable non-unique keys during the load and sort
them at the end; InnoDB gets the index after the load, built by sort.
"""

from __future__ import annotations

import fcntl
import os
import queue
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from perflab.domain import Dataset
from perflab.errors import PerflabError
from perflab.load.family import DRIVER_OPTIONS, Family, LoadReport
from perflab.server.connection import Endpoint, query

SCHEMA = "sbtest"
F_SETPIPE_SZ = 1031
PIPE_BYTES = 1 << 20
CHUNK_ROWS = 50_000

# Field layout of one generated line: k (10 digits) TAB c (119) TAB pad (59) NEWLINE.
K_WIDTH, C_WIDTH, PAD_WIDTH = 10, 119, 59
C_AT = K_WIDTH + 1
# "00000".."99999" as bytes, to print k with two table look-ups instead of ten divisions.
FIVE_DIGITS = np.frombuffer(
    "".join(f"{i:05d}" for i in range(100_000)).encode(), dtype=np.uint8
).reshape(100_000, 5)
PAD_AT = C_AT + C_WIDTH + 1
LINE = PAD_AT + PAD_WIDTH + 1


# sysbench 1.0's random-distribution options: for scripts drawing from sysbench.rand.default.
RAND_OPTIONS = ("rand_type", "rand_seed", "rand_spec_iter", "rand_spec_pct", "rand_spec_res",
                "rand_pareto_h", "rand_zipfian_exp")
# oltp's DELETE-then-INSERT of one id races between threads without transactions: on these
# engines sysbench would abort on the duplicate key, so such errors are retried and counted.
NON_TRANSACTIONAL = ("MyISAM", "Aria", "MEMORY")
RACE_ERRORS = "1213,1020,1205,1062"


class SbtestFamily(Family):
    """sysbench's sbtest1..N tables: the OLTP scripts, the random points and ranges, rw-mix."""

    schema = SCHEMA
    common_options = (*RAND_OPTIONS, *DRIVER_OPTIONS)

    def load(self, endpoint: Endpoint, dataset: Dataset) -> LoadReport:
        return load_sbtest(endpoint, dataset)

    def sysbench_args(self, dataset: Dataset, writes: bool) -> list[str]:
        args = [f"--tables={dataset.tables}", f"--table-size={dataset.rows}"]
        if writes and dataset.engine in NON_TRANSACTIONAL and \
                "mysql_ignore_errors" not in self.options:
            args.append(f"--mysql-ignore-errors={RACE_ERRORS}")
        return args


def table_ddl(number: int, engine: str, secondary: bool) -> str:
    """sysbench's sbtest table, as oltp_common.lua creates it with AUTO_INCREMENT ids."""
    index = f", KEY k_{number} (k)" if secondary else ""
    return (
        f"CREATE TABLE sbtest{number} ("
        "id INTEGER NOT NULL AUTO_INCREMENT, "
        "k INTEGER DEFAULT '0' NOT NULL, "
        "c CHAR(120) DEFAULT '' NOT NULL, "
        "pad CHAR(60) DEFAULT '' NOT NULL, "
        f"PRIMARY KEY (id){index}) ENGINE={engine}"
    )


def special_keys(rng: np.random.Generator, n: int, table_size: int) -> np.ndarray:
    """sysbench's default --rand-type=special for sb_rand(1, table_size).

    A uniform draw u over 4x the range decides: u < 1/4 takes the mean of 12 uniforms (close to
    gaussian); otherwise the value falls in the central 1% of the range.
    """
    t = table_size - 1
    u = rng.random(n)
    keys = u * (t * 0.01 + 1) + t / 2 - t * 0.005
    gaussian = u < 0.25
    keys[gaussian] = rng.random((int(gaussian.sum()), 12)).sum(axis=1) * t / 12
    return 1 + keys.astype(np.int64)


def sbtest_lines(rng: np.random.Generator, n: int, table_size: int) -> bytes:
    """n tab-separated lines of (k, c, pad), fixed width, ready for LOAD DATA.

    Digits come from random bytes scaled to 0..9 (byte * 10 >> 8): each digit has 25 or 26 of
    the 256 byte values, a bias no benchmark can feel, bought for a much faster generator.
    """
    lines = np.empty((n, LINE), dtype=np.uint8)
    k = special_keys(rng, n, table_size)
    lines[:, :5] = FIVE_DIGITS[k // 100_000]
    lines[:, 5:K_WIDTH] = FIVE_DIGITS[k % 100_000]
    lines[:, K_WIDTH] = 9
    text = np.frombuffer(rng.bytes(n * (C_WIDTH + PAD_WIDTH)), dtype=np.uint8)
    text = ((text.astype(np.uint16) * 10 >> 8) + 48).astype(np.uint8).reshape(n, -1)
    lines[:, C_AT:C_AT + C_WIDTH] = text[:, :C_WIDTH]
    lines[:, C_AT + 11:C_AT + C_WIDTH:12] = 45
    lines[:, PAD_AT - 1] = 9
    lines[:, PAD_AT:PAD_AT + PAD_WIDTH] = text[:, C_WIDTH:]
    lines[:, PAD_AT + 11:PAD_AT + PAD_WIDTH:12] = 45
    lines[:, LINE - 1] = 10
    return lines.tobytes()


def chunks(rows: int, seed: int) -> Iterator[bytes]:
    rng = np.random.default_rng(seed)
    for start in range(0, rows, CHUNK_ROWS):
        yield sbtest_lines(rng, min(CHUNK_ROWS, rows - start), rows)


def load_sbtest(endpoint: Endpoint, dataset: Dataset, workers: int | None = None) -> LoadReport:
    """Create schema sbtest and load dataset.tables tables of dataset.rows rows each."""
    started = time.monotonic()
    with endpoint.connect() as conn:
        query(conn, f"DROP DATABASE IF EXISTS {SCHEMA}")
        query(conn, f"CREATE DATABASE {SCHEMA}")
    workers = workers or min(dataset.tables, os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(prefix="perflab-load-") as tmp:
        jobs = [(endpoint, dataset, n, Path(tmp) / f"sbtest{n}.fifo") for n in
                range(1, dataset.tables + 1)]
        with ThreadPoolExecutor(max_workers=workers) as pool:
            for future in [pool.submit(_load_table, *job) for job in jobs]:
                future.result()
    return LoadReport(dataset.rows * dataset.tables, dataset.tables, time.monotonic() - started)


def _load_table(endpoint: Endpoint, dataset: Dataset, number: int, fifo: Path) -> None:
    # InnoDB builds a secondary index faster by sort after the load; MyISAM-family engines
    # disable non-unique keys during a bulk load into an empty table and sort them at the end.
    index_after = dataset.engine == "InnoDB"
    os.mkfifo(fifo)
    failure: list[BaseException] = []
    writer = threading.Thread(target=_feed, args=(fifo, dataset.rows, number, failure))
    with endpoint.connect(SCHEMA) as conn:
        query(conn, table_ddl(number, dataset.engine, secondary=not index_after))
        query(conn, "SET SESSION unique_checks = 0, foreign_key_checks = 0")
        writer.start()
        try:
            query(
                conn,
                f"LOAD DATA INFILE '{fifo}' INTO TABLE sbtest{number} CHARACTER SET latin1 "
                "FIELDS TERMINATED BY '\\t' ESCAPED BY '' LINES TERMINATED BY '\\n' (k, c, pad)",
            )
        finally:
            _unblock(fifo, writer)
            writer.join()
        if failure:
            raise PerflabError(f"generating rows for sbtest{number} failed: {failure[0]}")
        if index_after:
            query(conn, f"CREATE INDEX k_{number} ON sbtest{number} (k)")
        count = query(conn, f"SELECT COUNT(*) FROM sbtest{number}")[0][0]
    if count != dataset.rows:
        raise PerflabError(f"sbtest{number} holds {count} rows after loading, not {dataset.rows}")


def _unblock(fifo: Path, writer: threading.Thread) -> None:
    """If the server never opened the pipe (the LOAD DATA failed early), let the writer fail."""
    if writer.is_alive():
        try:
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        except OSError:
            pass


def _feed(fifo: Path, rows: int, seed: int, failure: list[BaseException]) -> None:
    """Write the rows into the pipe while the next chunks are being generated.

    Generating in a thread of its own keeps the server from waiting on the generator each
    time the pipe drains (numpy and write() both release the GIL).
    """
    ready: queue.Queue[bytes | None] = queue.Queue(maxsize=3)
    writing = threading.Event()
    writing.set()

    def offer(item: bytes | None) -> bool:
        while writing.is_set():
            try:
                ready.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def generate() -> None:
        try:
            for chunk in chunks(rows, seed):
                if not offer(chunk):
                    return
        except BaseException as exc:
            failure.append(exc)
        offer(None)

    generator = threading.Thread(target=generate, daemon=True)
    generator.start()
    try:
        with open(fifo, "wb") as pipe:
            fcntl.fcntl(pipe.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
            while (chunk := ready.get()) is not None:
                pipe.write(chunk)
    except BaseException as exc:  # reported by the loading thread
        failure.append(exc)
    finally:
        writing.clear()
        generator.join()
