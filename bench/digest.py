"""perflab digest vs pt-query-digest on the same generated log, in one run.

Generates a MariaDB general query log (and a slow query log) of at least --mb MiB in the exact
formats the server writes (the tests check the parser on real ones): many interleaved
connections, seed 004's waste (repeated reads, Init DB churn, constant-only SELECTs, N+1
loops) among honest statements (joins, multi-row INSERTs, IN lists, multi-line statements).
Then times `perflab digest` and `pt-query-digest` on each, alternating, and prints throughput,
the ratio and perflab's peak memory (max RSS of its processes, added up, as it reports it),
also on the log four times over to show that it does not grow with the log.

    .venv/bin/python bench/digest.py --mb 200 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent
PERFLAB = [sys.executable, "-m", "perflab.cli"]

SCHEMAS = ["shop", "shop_archive", "geometry_tpc", "geometry_tof"]
HONEST = [
    lambda r: f"SELECT o.id, o.total, c.name FROM orders o JOIN customers c ON c.id = "
              f"o.customer_id WHERE o.id = {r.randint(1, 10**6)}",
    lambda r: f"UPDATE stock SET qty = qty - {r.randint(1, 5)} WHERE sku = "
              f"'SKU{r.randint(1, 99999)}'",
    lambda r: "INSERT INTO events (kind, at, payload) VALUES " + ", ".join(
        f"('click', NOW(), '{r.randint(1, 10**9):x}')" for _ in range(r.randint(2, 6))),
    lambda r: "SELECT id, name FROM products WHERE category IN (" + ", ".join(
        str(r.randint(1, 500)) for _ in range(r.randint(2, 12))) + ") ORDER BY name ASC LIMIT 20",
    lambda r: f"SELECT COUNT(*)\n  FROM orders\n WHERE created_at > '2026-0{r.randint(1, 9)}-01'"
              f"\n   AND status = {r.randint(0, 3)}",
    lambda r: f"DELETE FROM sessions WHERE expires < {r.randint(10**9, 2 * 10**9)}",
    lambda r: f"SELECT /* dashboard */ SUM(total) FROM orders WHERE customer_id = "
              f"{r.randint(1, 10**5)} GROUP BY status",
]


def general_lines(rng: random.Random, connections: int):
    """Endless general-log events: (thread id, command, argument)."""
    while True:
        thread = rng.randint(10, 10 + connections)
        roll = rng.random()
        if roll < 0.05:
            for _ in range(rng.randint(2, 14)):
                yield thread, "Query", "select elementID from CorrectionIDs"
        elif roll < 0.10:
            yield thread, "Init DB", rng.choice(SCHEMAS)
        elif roll < 0.15:
            yield thread, "Query", (f"select from_unixtime({rng.randint(10**9, 2 * 10**9)}) "
                                    "+ 0 as requestTime")
        elif roll < 0.22:
            for _ in range(rng.randint(5, 30)):
                yield thread, "Query", (f"SELECT name, price FROM items WHERE id = "
                                        f"{rng.randint(1, 10**6)}")
        elif roll < 0.23:
            yield thread, "Connect", f"app@10.0.0.{thread % 250} on shop using TCP/IP"
        elif roll < 0.24:
            yield thread, "Quit", ""
        else:
            yield thread, "Query", rng.choice(HONEST)(rng)


BANNER = ("/usr/sbin/mariadbd, Version: 10.11.19-MariaDB-0+deb12u1-log (Debian 12). started "
          "with:\nTcp port: 0  Unix socket: /run/mysqld/mysqld.sock\nTime\t\t    Id Command\t"
          "Argument\n")


def stamped_lines(rng: random.Random):
    """general_lines with the clock: `second` is set when it changes (every 500 lines), the
    only time the server writes it, else None."""
    clock = 1795357937
    for n, (thread, command, argument) in enumerate(general_lines(rng, 200)):
        second = None
        if n % 500 == 0:
            clock += 1
            second = clock
        yield second, thread, command, argument


def general_entries(rng: random.Random):
    for second, thread, command, argument in stamped_lines(rng):
        prefix = time.strftime("%y%m%d %H:%M:%S", time.gmtime(second)) if second else "\t"
        yield f"{prefix}\t{thread:>6} {command}\t{argument}\n"


def slow_entries(rng: random.Random):
    clock = 0
    for second, thread, command, argument in stamped_lines(rng):
        clock = second or clock
        if command != "Query":
            continue
        stamp = f"# Time: {time.strftime('%y%m%d %H:%M:%S', time.gmtime(second))}\n" \
            if second else ""
        rows = rng.randint(0, 50)
        yield (f"{stamp}# User@Host: app[app] @ localhost []\n"
               f"# Thread_id: {thread}  Schema: shop  QC_hit: No\n"
               f"# Query_time: {rng.expovariate(2000):.6f}  Lock_time: 0.000010  "
               f"Rows_sent: {rows}  Rows_examined: {rows * rng.randint(1, 20)}\n"
               f"# Rows_affected: 0  Bytes_sent: {100 + rows * 40}\n"
               f"SET timestamp={clock};\n{argument};\n")


def write_log(path: Path, kind: str, megabytes: int) -> None:
    """A log of `kind` of at least `megabytes` MiB."""
    entries = (general_entries if kind == "general" else slow_entries)(random.Random(kind))
    written, limit = 0, megabytes << 20
    with open(path, "w") as out:
        out.write(BANNER)
        for entry in entries:
            out.write(entry)
            written += len(entry)
            if written >= limit:
                return


def timed(argv: list[str], output: Path) -> float:
    """Wall seconds of one command, its output kept in `output`."""
    started = time.monotonic()
    with open(output, "w") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.PIPE, check=False,
                                env={**os.environ, "PYTHONPATH": str(ROOT.parent / "src")})
    if result.returncode != 0:
        raise SystemExit(f"{argv[0]} failed: {result.stderr.decode()[-500:]}")
    return time.monotonic() - started


def perflab_digest(log: Path, kind: str, jobs: int, report: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB, all processes) of `perflab digest` on `log`."""
    seconds = timed([*PERFLAB, "digest", str(log), "--log-format", kind, "--format", "json",
                     "--jobs", str(jobs)], report)
    return seconds, json.loads(report.read_text())["peak_rss_mib"]


def memory_on_four_copies(out: Path, log: Path, kind: str, jobs: int) -> float:
    """Peak RSS on the log concatenated four times: memory must not grow with the log."""
    bigger = out / f"{log.stem}-x4.log"
    with open(bigger, "wb") as sink:  # always anew: a killed run may have left a partial one
        for _ in range(4):
            with open(log, "rb") as source:
                shutil.copyfileobj(source, sink, 1 << 20)
    try:
        return perflab_digest(bigger, kind, jobs, out / f"{kind}-perflab-x4.json")[1]
    finally:
        bigger.unlink()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=200, help="size of each generated log")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kinds", default="general,slow")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1,
                        help="perflab digest --jobs (default: one per CPU)")
    args = parser.parse_args()
    if not shutil.which("pt-query-digest"):
        raise SystemExit("pt-query-digest is missing: apt-get install percona-toolkit")
    out = ROOT / "out" / "digest"
    out.mkdir(parents=True, exist_ok=True)
    for kind in args.kinds.split(","):
        log = out / f"{kind}-{args.mb}.log"
        if not log.exists() or log.stat().st_size < args.mb << 20:
            print(f"generating {log} ...", flush=True)
            write_log(log, kind, args.mb)
        size = log.stat().st_size / 2**20
        pt_type = "genlog" if kind == "general" else "slowlog"
        ours, theirs, memory = [], [], []
        for round_number in range(args.rounds):
            order = ["perflab", "pt"] if round_number % 2 == 0 else ["pt", "perflab"]
            for tool in order:
                if tool == "perflab":
                    seconds, peak = perflab_digest(log, kind, args.jobs,
                                                   out / f"{kind}-perflab.json")
                    ours.append(seconds)
                    memory.append(peak)
                else:
                    seconds = timed(["pt-query-digest", "--type", pt_type,
                                     "--no-version-check", str(log)], out / f"{kind}-pt.txt")
                    theirs.append(seconds)
                print(f"  {kind} round {round_number + 1}: {tool} {seconds:.1f} s", flush=True)
        larger = memory_on_four_copies(out, log, kind, args.jobs)
        ratio = [t / o for o, t in zip(ours, theirs, strict=True)]
        print(f"{kind} log, {size:.0f} MiB: perflab {size / statistics.median(ours):.1f} MiB/s "
              f"(median of {len(ours)}), pt-query-digest {size / statistics.median(theirs):.1f}"
              f" MiB/s; speed-up {statistics.median(ratio):.1f}x "
              f"[{min(ratio):.1f} .. {max(ratio):.1f}] (goal >= 10x); perflab peak RSS "
              f"{max(memory):.0f} MiB, all its processes together (goal < 200 MiB), "
              f"{larger:.0f} MiB on the log four times over", flush=True)


if __name__ == "__main__":
    main()
