"""Nothing secret leaves perflab (issue 29): a second, independent secrets log through every
output of `perflab digest`, secret server variables in a lab and its reports, and the URL of a
tune storage. No server is needed."""

import json
import re
import sqlite3
import subprocess

import pytest

from conftest import PERFLAB
from perflab.digest.fingerprint import fingerprint, query_id
from perflab.digest.redact import redact
from perflab.server.secrets import is_secret_variable, masked_variables
from perflab.store import ResultStore
from perflab.tune.workers import open_storage, shown_url
from test_digest_input import HEADER, general
from test_store import PLAN

pytestmark = pytest.mark.fast

# (statement, its secret): letters only where the secret is a string, since a fingerprint
# lower-cases it and turns its digits and dashes into ?; hex and numbers where the key is one.
FORMS = [
    ("CREATE USER 'bob'@'%' IDENTIFIED BY 'QuokkaIdent'", "QuokkaIdent"),
    ("SET PASSWORD FOR 'bob'@'%' = PASSWORD('QuokkaSetpw')", "QuokkaSetpw"),
    ("SELECT PASSWORD('QuokkaFunc')", "QuokkaFunc"),
    ("CHANGE MASTER TO MASTER_HOST='db1', MASTER_PASSWORD='QuokkaMaster'", "QuokkaMaster"),
    ("CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'h', USER 'u', "
     "PASSWORD 'QuokkaServer')", "QuokkaServer"),
    ("SELECT AES_ENCRYPT(card, 'QuokkaAes') FROM cards WHERE id = 7", "QuokkaAes"),
    ("CHANGE REPLICATION SOURCE TO SOURCE_HOST='db1', SOURCE_PASSWORD='QuokkaSource'",
     "QuokkaSource"),
    ("START REPLICA USER='repl' PASSWORD='QuokkaReplica'", "QuokkaReplica"),
    ("START SLAVE USER='repl' PASSWORD = 'QuokkaSlave'", "QuokkaSlave"),
    ("SET PASSWORD FOR 'bob'@'%' = 'QuokkaNewset' REPLACE 'QuokkaOldset'", "QuokkaOldset"),
    ("ALTER USER bob IDENTIFIED BY 'QuokkaNewalter' REPLACE 'QuokkaOldalter'", "QuokkaOldalter"),
    ("CREATE USER c1 IDENTIFIED BY _utf8mb4'QuokkaIntro'", "QuokkaIntro"),
    ("CREATE USER c2 IDENTIFIED BY N'QuokkaNational'", "QuokkaNational"),
    ("CREATE USER c3 IDENTIFIED BY _latin1 X'CAFEBABEFADE'", "CAFEBABEFADE"),
    ("CREATE USER c4 IDENTIFIED BY b'0110100101110001'", "0110100101110001"),
    ("CREATE USER c5 IDENTIFIED BY 0xACCEDEDFACADE", "ACCEDEDFACADE"),
    ("CREATE USER c6 IDENTIFIED /* it's */ BY 'QuokkaComment'", "QuokkaComment"),
    ("CREATE USER c7 IDENTIFIED -- note\n BY 'QuokkaDashes'", "QuokkaDashes"),
    ("SELECT PASSWORD /* c */ ('QuokkaParen')", "QuokkaParen"),
    ("CREATE USER c8 IDENTIFIED VIA mysql_native_password USING PASSWORD('QuokkaFirst') "
     "OR ed25519 USING PASSWORD('QuokkaSecond')", "QuokkaSecond"),
    ("CREATE USER c9 IDENTIFIED VIA mysql_native_password USING 'QuokkaHash' "
     "OR ed25519 AS 'QuokkaEdhash'", "QuokkaEdhash"),
    ("SELECT AES_DECRYPT(c, 0xDEFACEDBEADED) FROM cards", "DEFACEDBEADED"),
    ("SELECT AES_ENCRYPT(c, 48151623) FROM cards", "48151623"),
    ("UPDATE mysql.user SET authentication_string='QuokkaAuthstr', "
     "plugin='mysql_native_password' WHERE user='bob'", "QuokkaAuthstr"),
    ("UPDATE `mysql`.`user` SET Password='QuokkaUserpw' WHERE User='bob'", "QuokkaUserpw"),
    ("INSERT INTO mysql.global_priv VALUES ('%', 'bob', "
     "'{\"authentication_string\":\"QuokkaPriv\"}')", "QuokkaPriv"),
    ("UPDATE accounts SET password = 'QuokkaColumn' WHERE id = 3", "QuokkaColumn"),
    ("CREATE USER c10 IDENTIFIED BY 'QuokkaSpan\nQuokkaLines'", "QuokkaLines"),
]
# The log's end cuts this one inside its password literal; a class's fingerprint keeps it.
CUT = ("SELECT PASSWORD('QuokkaCutoff", "QuokkaCutoff")
# Two runs of lines that belong to no event (each after a Quit): keyword and literal on
# neighbouring lines, a literal over two lines, a privilege table named a line before.
MALFORMED = (["garbage IDENTIFIED BY", "'QuokkaMalformed' and PASSWORD('QuokkaOpen",
              "QuokkaClose') garbage"],
             ["broken UPDATE mysql.user SET x =", "'QuokkaMalwhole'"])
# Every word that starts with Quokka is a secret too (a form may hold more than one).
SECRETS = sorted({secret for _, secret in [*FORMS, CUT]}
                 | set(re.findall(r"Quokka\w+", "\n".join(sql for sql, _ in FORMS)))
                 | set(re.findall(r"Quokka\w+", "\n".join(sum(MALFORMED, [])))))
HARMLESS = "SELECT name FROM customers WHERE email = 'alice@example.com'"


def secrets_log(path) -> None:
    """Each form twice in a row (reads become findings: repeats, constant-only), a harmless
    statement, the malformed run, and the cut statement without its end of line."""
    statements = [sql for sql, _ in FORMS for _ in range(2)] + [HARMLESS]
    runs = "".join("\t\t    5 Quit\t\n" + "".join(line + "\n" for line in run)
                   for run in MALFORMED)
    path.write_text(general(statements) + runs + general([CUT[0]])[len(HEADER):].rstrip("\n"))


def leaked(text: str) -> list[str]:
    return [secret for secret in SECRETS if secret.lower() in text.lower()]


@pytest.mark.parametrize(("statement", "secret"), [*FORMS, CUT])
def test_each_form_is_masked_in_the_statement_and_its_fingerprint(statement, secret):
    for text in (statement, fingerprint(statement)):
        shown = redact(text)
        assert secret.lower() not in shown.lower() and "quokka" not in shown.lower(), shown
        assert shown.count("\n") == text.count("\n")  # a run of lines keeps its lines
    assert "<redacted>" in redact(statement)  # the statement is still recognisable


def test_no_secret_of_the_log_reaches_any_output_of_digest(tmp_path):
    log = tmp_path / "secrets.log"
    secrets_log(log)
    assert sorted(leaked(log.read_text())) == SECRETS  # the log holds them all
    documents = {}
    for fmt in ("text", "json", "html"):
        for redacted in ([], ["--redact"]):
            workload = tmp_path / f"w-{fmt}{len(redacted)}.toml"
            result = subprocess.run([*PERFLAB, "digest", str(log), "--format", fmt, "--top",
                                     "100", "--jobs", "1", "--workload", str(workload),
                                     *redacted], capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, result.stderr
            assert leaked(result.stdout + result.stderr + workload.read_text()) == [], \
                (fmt, redacted)
            documents[fmt, bool(redacted)] = result.stdout
    plain, redacted = (json.loads(documents["json", r]) for r in (False, True))
    # the statements are still there, recognisable, and grouped under pt-query-digest's IDs
    cut_id = query_id(fingerprint(CUT[0]))
    cut = next(c for c in plain["profile"] if c["query_id"] == cut_id)
    assert cut["fingerprint"] == "select password('<redacted>'"
    assert next(c for c in redacted["profile"] if c["query_id"] == cut_id)["fingerprint"] == \
        "select password(?"
    found = [(plain, "select password('<redacted>'"), (redacted, "select password(?")]
    for document, key in found:  # a finding's fingerprint, as the profile's
        assert key in [item["key"] for item in document["findings"]["constant_only"]]
    assert "alice@example.com" in documents["json", False]
    assert "alice@example.com" not in documents["json", True]
    shown = plain["files"][0]["malformed_examples"]
    assert [m["text"] for m in shown] == [
        "garbage IDENTIFIED BY", "'<redacted>' and PASSWORD('<redacted>'", ") garbage",
        "broken UPDATE mysql.user SET x =", "'<redacted>'"]
    lines = log.read_text().splitlines()
    assert [lines[m["line"] - 1] for m in shown] == [*MALFORMED[0], *MALFORMED[1]]


SECRET_VARIABLES = ("report_password", "wsrep_sst_auth", "ssl_key", "des_key_file",
                    "file_key_management_filekey", "file_key_management_filename",
                    "hashicorp_key_management_token")
TUNED_OR_POLICY = ("key_buffer_size", "key_cache_segments", "key_cache_block_size",
                   "innodb_buffer_pool_size", "innodb_ft_max_token_size", "max_seeks_for_key",
                   "innodb_default_encryption_key_id", "default_password_lifetime",
                   "max_password_errors", "old_passwords", "secure_auth",
                   "disconnect_on_expired_password", "show_slave_auth_info",
                   "strict_password_validation", "simple_password_check_minimal_length")


def test_exactly_the_secret_variables_are_masked():
    assert [n for n in SECRET_VARIABLES if not is_secret_variable(n)] == []
    assert [n for n in TUNED_OR_POLICY if is_secret_variable(n)] == []
    assert is_secret_variable("REPORT_PASSWORD")
    variables = {"report_password": "QuokkaReport", "wsrep_sst_auth": "", "secure_auth": "ON",
                 "key_buffer_size": "16777216"}
    assert masked_variables(variables) == {**variables, "report_password": "<redacted>"}


HOST = {"hostname": "h", "cpu_model": "c", "cpu_count": 2, "memory_bytes": 1 << 30, "os": "o",
        "kernel": "k", "open_files_limit": {"soft": 1024, "hard": 4096}}


def test_a_lab_stores_and_reports_no_secret_variable(tmp_path):
    lab = tmp_path / "lab"
    lab.mkdir()
    variables = {"report_password": "QuokkaReport", "wsrep_sst_auth": "sst:QuokkaSst",
                 "key_buffer_size": "16777216"}
    with ResultStore(lab / "perflab.sqlite") as store:
        session = store.begin_session(PLAN.name, store.save_plan(PLAN), HOST)
        store.save_server_state(session, "off", "start", "10.11", variables, {})
        # a lab written before perflab masked them holds them plain
        store.db.execute("INSERT INTO server_states (session_id, config, how, version, "
                         "variables_json, process_json, created_at) VALUES (?, 'on', 'start', "
                         "'10.11', ?, '{}', 0)", (session, json.dumps(variables)))
        store.db.commit()
        store.end_session(session, "complete")
    stored = sqlite3.connect(lab / "perflab.sqlite").execute(
        "SELECT variables_json FROM server_states ORDER BY id").fetchall()
    assert "Quokka" not in stored[0][0] and "Quokka" in stored[1][0]
    with ResultStore(lab / "perflab.sqlite") as store:
        states = store.server_states([session])
    assert [s.variables["report_password"] for s in states] == ["<redacted>"] * 2
    for fmt in ("json", "html"):
        result = subprocess.run([*PERFLAB, "report", str(lab), "--format", fmt],
                                capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "Quokka" not in result.stdout and "16777216" in result.stdout


def test_a_storage_url_is_shown_without_any_credential():
    url = ("mysql+pymysql://bob:QuokkaUrlpw@127.0.0.1:1/optuna?password=QuokkaQuery"
           "&ssl_key=/QuokkaKey&charset=utf8")
    assert shown_url(url) == ("mysql+pymysql://bob:***@127.0.0.1:1/optuna"
                              "?password=***&ssl_key=***&charset=***")
    assert shown_url("sqlite:////tmp/tune.db") == "sqlite:////tmp/tune.db"
    assert shown_url("bob QuokkaUrlpw") == "<not a URL>"
    with pytest.raises(Exception) as failed:  # nothing listens on port 1
        open_storage(url)
    assert "Quokka" not in str(failed.value) and "127.0.0.1:1" in str(failed.value)
