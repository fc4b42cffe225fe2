"""perflab digest on logs as they come: passwords in them, logs cut while rotated, giant and
binary lines, and a fuzz of mutated lines. Never a secret in any output, never a traceback,
memory bounded."""

import gzip
import json
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from conftest import PERFLAB

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

SECRETS = ("hunter2", "s3cr3t-a", "gr4nt-pw", "*2470C0C06DEE42FD", "repl-pw", "upd-pw",
           "mal-pw", "aes-key-9")
HEADER = ("/usr/sbin/mariadbd, Version: 10.11.6-MariaDB-log (Debian 12). started with:\n"
          "Tcp port: 0  Unix socket: /run/mysqld/mysqld.sock\n"
          "Time\t\t    Id Command\tArgument\n")


def general(statements: list[str], connection: int = 5) -> str:
    lines = [HEADER, f"261123 11:00:00\t    {connection} Connect\tapp@localhost on shop "
             "using Socket\n"]
    lines += [f"\t\t    {connection} Query\t{sql}\n" for sql in statements]
    return "".join(lines)


# Runs a command and writes its peak RSS (KiB) to argv[1]. A process exec'd from a fork of a
# big one (pytest, late in a suite) inherits that one's peak in ru_maxrss; from this small
# intermediate, the figure is the command's own.
MEASURE = ("import os, subprocess, sys; p = subprocess.Popen(sys.argv[2:]); "
           "_, status, usage = os.wait4(p.pid, 0); "
           "open(sys.argv[1], 'w').write(str(usage.ru_maxrss)); "
           "sys.exit(os.waitstatus_to_exitcode(status))")


def run_peak(args: list[str]) -> tuple[subprocess.CompletedProcess, int]:
    """perflab digest ARGS, and the peak RSS of its process in KiB."""
    with tempfile.NamedTemporaryFile() as peak:
        result = subprocess.run([sys.executable, "-c", MEASURE, peak.name, *PERFLAB, "digest",
                                 *args], capture_output=True, timeout=600)
        kib = int(Path(peak.name).read_text() or 0)
    return (subprocess.CompletedProcess(result.args, result.returncode, result.stdout.decode(),
                                        result.stderr.decode(errors="replace")), kib)


def test_no_password_leaves_the_log_through_any_output(tmp_path):
    log = tmp_path / "general.log"
    log.write_text(general([
        "CREATE USER 'bob'@'%' IDENTIFIED BY 'hunter2'",
        "SET PASSWORD FOR 'bob'@'%' = PASSWORD('s3cr3t-a')",
        "GRANT SELECT ON shop.* TO 'eve'@'%' IDENTIFIED BY 'gr4nt-pw'",
        "ALTER USER bob IDENTIFIED WITH mysql_native_password AS '*2470C0C06DEE42FD'",
        "CHANGE MASTER TO MASTER_HOST='db1', MASTER_PASSWORD='repl-pw'",
        "UPDATE accounts SET pw = PASSWORD('upd-pw') WHERE id = 3",
        "SELECT AES_ENCRYPT(card, 'aes-key-9') FROM cards WHERE id = 7",
        "SELECT name FROM customers WHERE email = 'alice@example.com'",
    ] * 3) + "garbage line IDENTIFIED BY 'mal-pw'\n")
    outputs = []
    for fmt in ("text", "json", "html"):
        result, _ = run_peak([str(log), "--format", fmt, "--workload",
                              str(tmp_path / f"w-{fmt}.toml")])
        assert result.returncode == 0, result.stderr
        outputs += [result.stdout, result.stderr, (tmp_path / f"w-{fmt}.toml").read_text()]
    everything = "\n".join(outputs)
    for secret in SECRETS:
        assert secret not in everything, secret
    assert "IDENTIFIED BY '<redacted>'" in everything  # the statement is still recognisable
    assert "alice@example.com" in everything  # not a credential: shown without --redact

    redacted, _ = run_peak([str(log), "--format", "json", "--redact", "--workload",
                            str(tmp_path / "r.toml")])
    assert redacted.returncode == 0, redacted.stderr
    shown = redacted.stdout + (tmp_path / "r.toml").read_text()
    assert "alice@example.com" not in shown and "'db1'" not in shown
    examples = [c["example"] for c in json.loads(redacted.stdout)["profile"]]
    assert "SELECT name FROM customers WHERE email = ?" in examples


def test_a_gzip_log_cut_while_rotated_gives_a_warning_and_what_was_read(tmp_path):
    whole = gzip.compress(general([f"SELECT name FROM items WHERE id = {n}"
                                   for n in range(20000)]).encode())
    cut = tmp_path / "general.log.1.gz"
    cut.write_bytes(whole[:len(whole) // 2])
    result, _ = run_peak([str(cut), "--format", "json"])
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr
    assert f"warning: {cut}" in result.stderr and "compressed byte" in result.stderr
    document = json.loads(result.stdout)
    read = document["profile"][0]["calls"]
    assert 1000 < read < 20000  # what was readable, not nothing and not everything
    assert "compressed byte" in document["files"][0]["damaged"]


def test_giant_and_binary_lines_keep_memory_bounded_and_are_shown_escaped(tmp_path):
    log = tmp_path / "general.log"
    with open(log, "wb") as handle:
        handle.write(HEADER.encode())
        handle.write(b"\x1b[31m\x00\xff\xfe binary junk \x07\n")  # belongs to no event
        handle.write(general(["SELECT 1"])[len(HEADER):].encode())
        handle.write(b"\t\t    5 Query\tINSERT INTO blobs VALUES ('" + b"x" * (60 << 20) + b"')\n")
        handle.write(general(["SELECT name FROM items WHERE id = 4"])[len(HEADER):].encode())
    result, peak_kib = run_peak([str(log), "--jobs", "1"])
    assert result.returncode == 0, result.stderr
    assert peak_kib < 200 * 1024, f"peak RSS {peak_kib / 1024:.0f} MiB"
    assert "longer than 1 MiB" in result.stdout
    assert "insert into blobs values" in result.stdout.lower()
    junk = next(line for line in result.stdout.splitlines() if "binary junk" in line)
    assert "\x1b" not in junk and "\x07" not in junk and "\\x1b" in junk


def mutate(line: str, rng: random.Random) -> bytes:
    """One damaged line: random bytes, a cut, bad UTF-8, control characters, a giant line, a
    line of the other log format, or the line as it was."""
    data = line.encode()
    kind = rng.randrange(9)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 120))) + b"\n"
    if kind == 1:
        return data[:rng.randrange(len(data) + 1)] + b"\n"
    if kind == 2:
        at = rng.randrange(len(data) + 1)
        return data[:at] + rng.choice([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80\x80"]) + \
            data[at:] + b"\n"
    if kind == 3:
        return data.replace(b" ", bytes([rng.randrange(32)]), 1) + b"\n"
    if kind == 4 and rng.random() < 0.002:
        return b"\t\t    9 Query\tSELECT '" + b"y" * rng.randrange(1 << 20, 3 << 20) + b"\n"
    if kind == 5:
        return rng.choice([b"# Time: 261123 11:00:00\n", b"# Query_time: 1.5  Lock_time: 0\n",
                           b"# User@Host: a[a] @ h []\n", b"SET timestamp=1;\n"])
    if kind == 6:
        return b"\t" * rng.randrange(5) + data + b"\n"
    return data + b"\n"


def test_a_fuzz_of_mutated_lines_never_ends_in_a_traceback(tmp_path):
    rng = random.Random(1)
    base = general([f"SELECT c FROM t{n % 40} WHERE id IN ({n}, {n + 1}) AND s = 'v{n}'"
                    for n in range(2000)]).splitlines()
    slow = [f"# Time: 261123 11:00:{n % 60:02d}\n# User@Host: a[a] @ h []\n"
            f"# Query_time: 0.{n:06d}  Lock_time: 0.0  Rows_sent: 1  Rows_examined: 2\n"
            f"SELECT {n};" for n in range(500)]
    general_log, slow_log = tmp_path / "fuzz-general.log", tmp_path / "fuzz-slow.log"
    lines = 0
    for path, source in ((general_log, base), (slow_log, "\n".join(slow).splitlines())):
        with open(path, "wb") as handle:
            for _ in range(60000):
                handle.write(mutate(rng.choice(source), rng))
                lines += 1
    assert lines >= 100_000
    gzipped = tmp_path / "fuzz.log.gz"
    packed = gzip.compress(general_log.read_bytes())
    gzipped.write_bytes(packed[:len(packed) * 2 // 3])
    for args in ([str(general_log), "--jobs", "1"], [str(slow_log), "--jobs", "1"],
                 [str(general_log), "--log-format", "slow", "--jobs", "1"],
                 [str(gzipped), "--format", "json", "--jobs", "1"],
                 [str(general_log), str(slow_log), "--format", "html", "--jobs", "2"]):
        result, peak_kib = run_peak(args)
        assert result.returncode in (0, 2), result.stderr
        assert "Traceback" not in result.stderr, result.stderr[-2000:]
        assert peak_kib < 200 * 1024, (args, peak_kib)


def test_a_workload_file_holds_only_what_perflab_replays_as_it_is(tmp_path):
    """A log entry of several statements is left out with its reason; a quote escaped with a
    backslash is written doubled, so the file loads under any sql_mode."""
    from perflab.digest.digest import digest_logs
    from perflab.digest.workload import write_workload
    from perflab.load.sqlworkload import load_sql_workload

    log = tmp_path / "general.log"
    log.write_text(general(["SELECT id FROM users WHERE name = 'O\\'Brien'"] * 3 +
                           ["SELECT 1; DELETE FROM users"] * 2 +
                           ["SELECT id FROM users WHERE name = 'Smith'"]))
    path = tmp_path / "captured.toml"
    assert write_workload(digest_logs([log]), path, top=10) == 1
    text = path.read_text()
    assert "Left out: 1 statement(s)" in text and "2 calls: " in text
    assert "more than one statement" in text
    assert "DELETE" not in text.split("[[statements]]", 1)[1]
    workload = load_sql_workload(path)
    assert workload.statements == ((4, "SELECT id FROM users WHERE name = {pick:p1}"),)
    assert workload.entries[0].picks == (("p1", ("'O''Brien'", "'Smith'")),)


def test_a_logged_value_with_a_nul_is_left_out_of_the_workload_with_the_reason(tmp_path):
    """Issue 42: a NUL in a logged value (anyone whose input lands in a query can plant one)
    cut the statements file's line, and the next value became SQL on replay. The values that
    hold a control character are left out, counted in the header; the statement stays with
    the others, which travel exactly."""
    from perflab.digest.digest import digest_logs
    from perflab.digest.workload import write_workload
    from perflab.load.sqlworkload import load_sql_workload

    log = tmp_path / "general.log"
    log.write_bytes(general(["SELECT id FROM users WHERE name = 'x\x00'",
                             "SELECT id FROM users WHERE name = '; SET GLOBAL max_connections"
                             "=78; #'", "SELECT id FROM users WHERE name = 'Smith'",
                             "SELECT id FROM users WHERE name = 'tab\there'"]).encode())
    path = tmp_path / "captured.toml"
    assert write_workload(digest_logs([log]), path, top=10) == 1
    text = path.read_text()
    assert "Left out: 1 logged value(s) holding a control character" in text
    assert "\x00" not in text and "\\u0000" not in text
    (entry,) = load_sql_workload(path).entries
    values = dict(entry.picks)["p1"]
    assert sorted(values) == sorted(["'; SET GLOBAL max_connections=78; #'", "'Smith'",
                                     "'tab\there'"])


MYSQL_SLOW = """/usr/sbin/mysqld, Version: 9.7.4 (MySQL Community Server - GPL). started with:
Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock
Time                 Id Command    Argument
# Time: 2026-12-01T14:35:01.000100Z
# User@Host: app[app] @ localhost []  Id:     8
# Query_time: 0.000200  Lock_time: 0.000002 Rows_sent: 1  Rows_examined: 1
use shop;
SET timestamp=1764599701;
SELECT name FROM items WHERE id = 5;
# Time: 2026-12-01T14:35:01.000200Z
# User@Host: app[app] @ localhost []  Id:    12
# Query_time: 0.000100  Lock_time: 0.000001 Rows_sent: 1  Rows_examined: 1
SET timestamp=1764599701;
SELECT name FROM items WHERE id = 5;
# Time: 2026-12-01T14:35:01.000300Z
# User@Host: app[app] @ localhost []  Id:     8
# Query_time: 0.000150  Lock_time: 0.000001 Rows_sent: 1  Rows_examined: 1 Thread_id: 8 \
Errno: 0 Killed: 0 Bytes_received: 0 Bytes_sent: 60 Read_first: 0 Read_last: 0 Read_key: 1
SET timestamp=1764599701;
SELECT name FROM items WHERE id = 5;
/usr/sbin/mysqld, Version: 9.7.4 (MySQL Community Server - GPL). started with:
Tcp port: 3306  Unix socket: /run/mysqld/mysqld.sock
Time                 Id Command    Argument
# Time: 2026-12-01T14:36:00.000000Z
# User@Host: app[app] @ localhost []  Id:    12
# Query_time: 0.000100  Lock_time: 0.000001 Rows_sent: 1  Rows_examined: 1
SET timestamp=1764599760;
SELECT name FROM items WHERE id = 7;
# Time: 2026-12-01T14:36:00.000100Z
# User@Host: app[app] @ localhost []  Id:    12
# Query_time: 0.000040  Lock_time: 0.000000 Rows_sent: 1  Rows_examined: 1
use stock;
SET timestamp=1764599760;
# administrator command: Init DB;
# Time: 2026-12-01T14:36:00.000200Z
# User@Host: app[app] @ localhost []  Id:    12
# Query_time: 0.000030  Lock_time: 0.000000 Rows_sent: 0  Rows_examined: 0
SET timestamp=1764599760;
# administrator command: Quit;
"""


def test_a_mysql_slow_log_gives_every_event_its_connection(tmp_path):
    """MySQL writes the connection as `Id:` on the User@Host line, padded to a column. By hand:
    connection 8 reads id 5 twice (separated only by connection 12's read), 12 reads id 5
    then id 7 after a restart's banner, then switches to schema stock (an Init DB, which MySQL
    writes as a comment line) and quits: one repeated read back to back on one connection."""
    from perflab.digest.digest import digest_logs
    from perflab.digest.parse import ParseStats, Part, read_events

    log = tmp_path / "mysql-slow.log"
    log.write_text(MYSQL_SLOW.replace(" \\\n", " "))
    stats = ParseStats()
    events = list(read_events(Part(log, "slow"), stats))
    assert [e.thread for e in events] == [8, 12, 8, 12, 12, 12] and stats.malformed == 0
    assert events[0].db == "shop" and events[0].time == pytest.approx(1764599701)
    assert [e.text for e in events][3] == "SELECT name FROM items WHERE id = 7"
    assert [(e.command, e.text) for e in events[4:]] == [("Init DB", "stock"), ("Quit", "")]
    found = digest_logs([log])
    (select,) = [c for c in found.classes if "from items" in c.fingerprint]
    assert select.calls == 4
    assert {c.fingerprint: c.calls for c in found.classes}["administrator command: Init DB"] == 1
    (repeat,) = found.findings.items["repeats"].values()
    assert repeat.connections == {8} and repeat.longest == 2 and repeat.removable == 1


MYSQL_GENERAL = """/usr/sbin/mysqld, Version: 9.7.4-2 ((Debian)). started with:
Tcp port: 0  Unix socket: /run/mysqld/mysqld.sock
Time                 Id Command    Argument
2026-12-02T04:32:49.590036Z\t    0 Execute\tCREATE TABLE performance_schema.innodb_redo_log_files(
`FILE_ID` BIGINT NOT NULL COMMENT 'Id of the file.'
)engine = 'performance_schema'
2026-12-02T04:32:49.678190Z\t    8 Connect\troot@localhost on shop using Socket
2026-12-02T04:32:49.678585Z\t    8 Execute\tSELECT name
FROM items WHERE id = 5
2026-12-02T04:32:49.678915Z\t    8 Quit\t
"""


def test_a_mysql_general_log_leaves_out_the_servers_own_statements(tmp_path):
    """Connection 0 is MySQL's own start-up DDL, which pt-query-digest leaves out too; a
    prepared statement's text spans lines as a query's does: nothing is malformed."""
    from perflab.digest.parse import ParseStats, Part, read_events

    log = tmp_path / "mysql-general.log"
    log.write_text(MYSQL_GENERAL)
    stats = ParseStats()
    events = list(read_events(Part(log, "general"), stats))
    assert [(e.thread, e.command) for e in events] == [(8, "Connect"), (8, "Execute"),
                                                       (8, "Quit")]
    assert events[1].text == "SELECT name\nFROM items WHERE id = 5" and stats.malformed == 0
