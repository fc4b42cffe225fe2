"""perflab digest vs pt-query-digest on the same generated log, in one run.

Generates a MariaDB general query log (and a slow query log) of at least --mb MiB in the exact
formats the server writes (the tests check the parser on real ones): many interleaved
connections, the STAR notes' waste (repeated reads, Init DB churn, constant-only SELECTs, N+1
loops) among an application's statements whose variety is a real one's (`Application`: 20k+
fingerprints, string literals, IN lists of every length, comments, multi-line statements).
Then runs `perflab digest --jobs 1`, `perflab digest` on every core and `pt-query-digest`,
in rotated order each round, and prints the speed-up over pt per core and with all cores as
a geometric mean with its 95% interval over rounds, each tool's peak RSS read from outside,
and whether both tools found the same events, classes and per-class counts. perflab keeps no
fingerprint cache (every statement goes through the C rules), so a log of a few templates
could not flatter it; the log is varied anyway.

    .venv/bin/python bench/digest.py --mb 50 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import math
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
PREFIXES = ["app", "crm", "shop", "geo", "log", "hr", "billing", "cms"]
NOUNS = ["user", "order", "item", "invoice", "address", "event", "session", "payment",
         "product", "category", "review", "shipment", "stock", "price", "coupon", "message",
         "ticket", "note", "tag", "file", "audit", "report", "job", "queue", "region"]
COLUMNS = ["id", "user_id", "order_id", "status", "created_at", "updated_at", "name", "email",
           "price", "qty", "total", "kind", "code", "city", "country", "flag", "score", "rank",
           "parent_id", "owner_id", "title", "body", "ref", "sku", "amount", "currency", "lang",
           "version", "deleted", "priority"]
WORDS = ["alpha", "Zürich", "O\\'Brien", "it''s", "north", "blue", "pending", "shipped",
         "ACME Corp", "x@example.com", "50% off", "déjà vu", "tab\\there", "n/a"]
TABLES_PER_PREFIX = 10  # 8 prefixes x 25 nouns x 10 = 2,000 tables
SHAPES_PER_TABLE = 14


def _literal(rng: random.Random, kind: str) -> str:
    if kind == "int":
        return str(rng.randint(1, 10 ** rng.randint(1, 7)))
    if kind == "str":
        return "'" + rng.choice(WORDS) + str(rng.randint(0, 999)) + "'"
    if kind == "date":
        return f"'2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}'"
    values = [_literal(rng, rng.choice(("int", "str"))) for _ in range(rng.randint(1, 20))]
    return "(" + ", ".join(values) + ")"  # an IN list of varying length


def _shape(rng: random.Random, table: str) -> tuple[str, list[str]]:
    """One statement shape of an application's table: a template whose {} are literals."""
    cols = rng.sample(COLUMNS, 8)
    preds, kinds = [], []
    for col in cols[:rng.randint(1, 3)]:
        form = rng.choice(("= {}", "IN {}", "> {}", "BETWEEN {} AND {}", "LIKE {}", "= {}"))
        preds.append(f"{col} {form}")
        kind = {"IN {}": "in", "LIKE {}": "str"}.get(form, rng.choice(("int", "str", "date")))
        kinds += [kind] * form.count("{}")
    where = " AND ".join(preds)
    roll = rng.random()
    if roll < 0.45:
        order = f" ORDER BY {cols[3]} {rng.choice(('ASC', 'DESC'))}" if rng.random() < 0.5 else ""
        limit = " LIMIT {}" if rng.random() < 0.4 else ""
        text = f"SELECT {', '.join(cols[4:4 + rng.randint(1, 4)])} FROM {table} WHERE {where}"
        text += order + limit
        kinds += ["int"] if limit else []
    elif roll < 0.55:
        other = f"{table.rsplit('_', 1)[0]}_{rng.choice(NOUNS)}{rng.randint(0, 9)}"
        text = (f"SELECT a.{cols[4]}, b.{cols[5]} FROM {table} a JOIN {other} b ON "
                f"b.{cols[6]} = a.id WHERE a.{where}")
    elif roll < 0.65:
        text = f"SELECT {cols[4]}, COUNT(*) FROM {table} WHERE {where} GROUP BY {cols[4]}"
    elif roll < 0.8:
        text = f"UPDATE {table} SET {cols[5]} = {{}}, {cols[6]} = {{}} WHERE {where}"
        kinds = ["int", "str"] + kinds
    elif roll < 0.92:
        text = f"INSERT INTO {table} ({', '.join(cols[:3])}) VALUES ({{}}, {{}}, {{}})"
        kinds = ["int", "str", "date"]
    else:
        text = f"DELETE FROM {table} WHERE {where}"
    return text, kinds


class Application:
    """Statements shaped like an application's: 2,000 tables with 14 statement shapes each
    (20k+ fingerprints in a 50 MiB log), tables used with a long-tailed popularity, literals
    of every kind (strings with escapes and non-ASCII, IN lists of 1 to 20 values, dates),
    some statements commented (/* module */) or written over several lines."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        tables = [f"{p}_{n}{k}" for p in PREFIXES for n in NOUNS for k in range(TABLES_PER_PREFIX)]
        rng.shuffle(tables)
        self.shapes = [[_shape(rng, table) for _ in range(SHAPES_PER_TABLE)] for table in tables]
        self.weights = [1 / (rank + 1) ** 0.6 for rank in range(len(tables))]

    def statement(self) -> str:
        rng = self.rng
        shapes = rng.choices(self.shapes, self.weights)[0]
        text, kinds = rng.choice(shapes)
        sql = text.format(*(_literal(rng, kind) for kind in kinds))
        if rng.random() < 0.1:
            sql = f"/* {rng.choice(NOUNS)}.{rng.choice(('list', 'get', 'save'))} */ " + sql
        if rng.random() < 0.1:
            for word in (" FROM ", " WHERE ", " ORDER BY ", " GROUP BY "):
                sql = sql.replace(word, "\n   " + word.strip() + " ")
        return sql


def general_lines(rng: random.Random, connections: int):
    """Endless general-log events: (thread id, command, argument); the STAR notes' waste among an
    application's statements."""
    app = Application(rng)
    while True:
        thread = rng.randint(10, 10 + connections)
        roll = rng.random()
        if roll < 0.02:
            for _ in range(rng.randint(2, 14)):
                yield thread, "Query", "select elementID from CorrectionIDs"
        elif roll < 0.04:
            yield thread, "Init DB", rng.choice(SCHEMAS)
        elif roll < 0.05:
            yield thread, "Query", (f"select from_unixtime({rng.randint(10**9, 2 * 10**9)}) "
                                    "+ 0 as requestTime")
        elif roll < 0.07:
            for _ in range(rng.randint(5, 30)):
                yield thread, "Query", (f"SELECT name, price FROM items WHERE id = "
                                        f"{rng.randint(1, 10**6)}")
        elif roll < 0.08:
            yield thread, "Connect", f"app@10.0.0.{thread % 250} on shop using TCP/IP"
        elif roll < 0.09:
            yield thread, "Quit", ""
        else:
            yield thread, "Query", app.statement()


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


def run_measured(argv: list[str], output: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MiB, read from outside with wait4: the largest of the
    process and the children it waited for) of one command, its output kept in `output`."""
    started = time.monotonic()
    with open(output, "w") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.PIPE,
                                env={**os.environ, "PYTHONPATH": str(ROOT.parent / "src")})
        stderr = proc.stderr.read()
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{argv[0]} failed: {stderr.decode()[-500:]}")
    return seconds, usage.ru_maxrss / 1024


def perflab_argv(log: Path, kind: str, jobs: int) -> list[str]:
    return [*PERFLAB, "digest", str(log), "--log-format", kind, "--format", "json",
            "--jobs", str(jobs), "--top", "10000000"]  # every class, as pt is asked for


def pt_argv(log: Path, kind: str) -> list[str]:
    return ["pt-query-digest", "--type", "genlog" if kind == "general" else "slowlog",
            "--no-version-check", "--output", "json", "--limit", "100%:1000000", str(log)]


def same_classes(ours: Path, theirs: Path) -> str:
    """Whether both tools found the same events, classes and per-class counts."""
    mine = json.loads(ours.read_text())
    text = theirs.read_text()
    pt = json.loads(text[text.index("{"):])
    counts = {c["fingerprint"]: c["calls"] for c in mine["profile"]}
    theirs_counts = {c["fingerprint"]: int(c["query_count"]) for c in pt["classes"]}
    events, unique = pt["global"]["query_count"], pt["global"]["unique_query_count"]
    differ = sum(counts.get(fp) != n for fp, n in theirs_counts.items())
    verdict = "same" if (events, unique, differ) == (mine["events"], len(counts), 0) else "DIFFER"
    return (f"{verdict}: pt {events:,} events in {unique:,} classes, perflab {mine['events']:,} "
            f"in {len(counts):,}; {differ:,} of pt's classes with another count in perflab")


def interval(ratios: list[float]) -> str:
    """Geometric mean of the ratios with a 95% t interval on their logs."""
    from scipy import stats as scipy_stats

    logs = [math.log(r) for r in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return f"{math.exp(mean):.2f}x"
    half = scipy_stats.t.ppf(0.975, len(logs) - 1) * statistics.stdev(logs) / len(logs) ** 0.5
    return f"{math.exp(mean):.2f}x [{math.exp(mean - half):.2f} .. {math.exp(mean + half):.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=50, help="size of each generated log")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--kinds", default="general,slow")
    args = parser.parse_args()
    if not shutil.which("pt-query-digest"):
        raise SystemExit("pt-query-digest is missing: apt-get install percona-toolkit")
    cores = os.cpu_count() or 1
    out = ROOT / "out" / "digest"
    out.mkdir(parents=True, exist_ok=True)
    for kind in args.kinds.split(","):
        log = out / f"{kind}-{args.mb}-app.log"
        if not log.exists() or log.stat().st_size < args.mb << 20:
            print(f"generating {log} ...", flush=True)
            write_log(log, kind, args.mb)
        size = log.stat().st_size / 2**20
        tools = {"perflab --jobs 1": perflab_argv(log, kind, 1),
                 f"perflab --jobs {cores}": perflab_argv(log, kind, cores),
                 "pt-query-digest": pt_argv(log, kind)}
        seconds: dict[str, list[float]] = {tool: [] for tool in tools}
        peaks: dict[str, list[float]] = {tool: [] for tool in tools}
        for round_number in range(args.rounds):
            order = list(tools)
            order = order[round_number % 3:] + order[:round_number % 3]  # each goes first once
            for tool in order:
                name = tool.replace(" ", "").replace("-", "")
                took, peak = run_measured(tools[tool], out / f"{kind}-{name}.json")
                seconds[tool].append(took)
                peaks[tool].append(peak)
                print(f"  {kind} round {round_number + 1}: {tool} {took:.1f} s, peak RSS "
                      f"{peak:.0f} MiB", flush=True)
        report = json.loads((out / f"{kind}-perflabjobs1.json").read_text())
        pt = seconds["pt-query-digest"]
        one = [p / o for o, p in zip(seconds["perflab --jobs 1"], pt, strict=True)]
        every = [p / o for o, p in zip(seconds[f"perflab --jobs {cores}"], pt, strict=True)]
        print(f"{kind} log, {size:.0f} MiB, {report['events']:,} events, {report['classes']:,} "
              f"fingerprints, each statement fingerprinted (no cache)")
        print(f"  speed-up over pt-query-digest per core (--jobs 1): {interval(one)} (goal >= 5x)")
        print(f"  speed-up with all {cores} cores: {interval(every)} (goal >= 10x)")
        print("  peak RSS from outside (MiB, median): " + ", ".join(
            f"{tool} {statistics.median(p):.0f}" for tool, p in peaks.items()))
        print("  " + same_classes(out / f"{kind}-perflabjobs1.json",
                                  out / f"{kind}-ptquerydigest.json"), flush=True)


if __name__ == "__main__":
    main()
