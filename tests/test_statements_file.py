"""What perflab classifies is what the Lua driver prepares, byte for byte: the statements file
is framed by lengths, so no byte of a statement or a value (NUL, a line break, a quote) can end
a record or join two, and the driver prepares the text perflab checked, with a `?` per
placeholder, and binds the values as data. sysbench reads the file here as a Lua interpreter:
no server, no load (tests/test_existing.py prepares the same kinds of statements on a real
server and reads its general log)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from perflab.errors import PerflabError
from perflab.load.classify import Kind, classify
from perflab.load.sqlworkload import load_sql_workload
from perflab.load.sysbench import LUA_PATH

pytestmark = pytest.mark.fast

DUMP = Path(__file__).parent / "lua" / "dump_statements.lua"
CONTROLS = [chr(c) for c in (*range(0, 9), *range(11, 32), 127, 0x85)]
PIECES = ["SELECT ", "1", " ", "'", '"', "`", "/*", "*/", "-- ", "#", ";", "\\", "\t", "\n",
          "FROM t", " WHERE id = ", "SET GLOBAL max_connections=77", "é", "\u2028", "\ufeff",
          "{int:1:5}", "{int:-3:3}", "{str:0:4}", "{str:-1:3}", "{pick:p}", "{pick:q}",
          "{int:1}", "{x:1:2}", *CONTROLS]
# pieces of statements that load: the property is about what reaches the driver, so most
# examples should get that far
SOUND = ["1", ", ", " + ", "'a'", "'it''s'", "'a;b'", "'/*'", "/* c */", "-- c\n", "# c\n", "\t",
         "\n", "'é\u2028'", '"q"', "`c`", "{int:1:5}", "{int:-3:3}", "{str:0:4}", "{pick:p}",
         "{pick:q}", "'*/; SET GLOBAL max_connections=77; #'"]
VALUES = ["1", "-7", "'a'", "'it''s'", "'*/; SET GLOBAL max_connections=77; #'", "'x\ny'",
          "'é\u2028'", '"q"', "NULL", "'a\\'", *[f"'a{c}b'" for c in CONTROLS[:3]]]


def toml(text: str) -> str:
    return json.dumps(text)  # JSON's escapes are TOML's


def workload_file(path: Path, statements: list[tuple[str, list[str]]]) -> Path:
    lines = []
    for sql, values in statements:
        lines += ["[[statements]]", f"sql = {toml(sql)}", "weight = 2"]
        used = [name for name in ("p", "q") if f"{{pick:{name}}}" in sql]
        if used:
            lines.append("picks = { " + ", ".join(
                f"{name} = [{', '.join(toml(v) for v in values)}]" for name in used) + " }")
    path.write_text("\n".join(lines) + "\n")
    return path


def read_by_lua(statements_file: str, directory: Path) -> str:
    """What the driver's reader makes of a statements file: the file again, in its own
    framing."""
    path = directory / "statements"
    path.write_bytes(statements_file.encode())
    env = {**os.environ, "LUA_PATH": f"{DUMP.parent}/?.lua;{LUA_PATH}",
           "PERFLAB_SQL_STATEMENTS": str(path)}
    out = subprocess.run(["sysbench", str(DUMP), "dump"], env=env, capture_output=True,
                         check=True, timeout=30).stdout.decode()
    return _fields(out.split("\nPERFLAB-DUMP\n", 1)[1])


def _fields(framed: str) -> str:
    data, fields, at = framed.encode(), [], 0
    while at < len(data):
        colon = data.index(b":", at)
        length = int(data[at:colon])
        fields.append(data[colon + 1:colon + 1 + length].decode())
        at = colon + length + 2
    return "".join(f"{len(f.encode())}:{f}," for f in fields)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.lists(st.sampled_from(PIECES) | st.text(max_size=4), min_size=1,
                                   max_size=12).map("".join) |
                          st.lists(st.sampled_from(SOUND), min_size=1, max_size=8).map(
                              lambda pieces: "SELECT " + "".join(pieces)),
                          st.lists(st.sampled_from(VALUES), min_size=1, max_size=3)),
                min_size=1, max_size=4))
def test_what_perflab_classifies_is_what_the_driver_prepares(tmp_path, statements):
    try:
        workload = load_sql_workload(workload_file(tmp_path / "w.toml", statements))
    except PerflabError as refused:
        assert refused.message  # named, one line, no traceback
        event("refused")
        return
    event("loaded")
    for entry in workload.entries:
        for text in (entry.sql, *[v for _, values in entry.picks for v in values]):
            assert not any(c in text for c in CONTROLS), "a control character was accepted"
    written = workload.statements_file()
    assert read_by_lua(written, tmp_path) == written  # every field read back as written
    for entry, kind in zip(workload.entries, workload.kinds, strict=True):
        assert entry.text.count("?") >= len(entry.parameters)
        assert f"{len(entry.text.encode())}:{entry.text}," in written  # the text, whole
        assert classify(entry.text) == kind  # what was judged is what the server prepares


@pytest.mark.parametrize("bad", ["\x00", "\r", "\x1b", "\x7f", "\x85"])
def test_a_control_character_in_a_statement_or_a_value_is_refused_with_the_entry(tmp_path, bad):
    path = workload_file(tmp_path / "w.toml", [("SELECT 1", []), (f"SELECT 1 /*{bad}*/", [])])
    with pytest.raises(PerflabError, match=r"statements\[2\]\.sql holds a control character"):
        load_sql_workload(path)
    path = workload_file(tmp_path / "w.toml", [("SELECT {pick:p}", ["1", f"'a{bad}'"])])
    with pytest.raises(PerflabError, match=r"statements\[1\]\.picks\.p holds a control"):
        load_sql_workload(path)


def test_the_nul_that_joined_two_statements_is_refused(tmp_path):
    """Issue 42's first form: a NUL in a comment cut the line, and the next entry's string
    became SQL."""
    path = workload_file(tmp_path / "w.toml", [
        ("SELECT 1 /*\x00*/", []),
        ("SELECT '*/; SET GLOBAL max_connections=77; #'", [])])
    with pytest.raises(PerflabError, match="U\\+0000"):
        load_sql_workload(path)


@pytest.mark.parametrize("placeholder", ["{str:-1:3}", "{int:1}", "{int:5:1}", "{x:1:2}",
                                         "{pick:}", "{int:0:9999999999}", "{str:1:99999}"])
def test_a_placeholder_the_driver_would_not_fill_is_refused(tmp_path, placeholder):
    path = workload_file(tmp_path / "w.toml", [(f"SELECT {placeholder}", [])])
    with pytest.raises(PerflabError, match="placeholder"):
        load_sql_workload(path)


def test_line_breaks_and_tabs_travel_inside_a_statement_and_a_value(tmp_path):
    """A line break and a tab reach the driver as they are: in the text it prepares, and in
    a value it binds (never in the text)."""
    path = workload_file(tmp_path / "w.toml", [("SELECT 1,\n 'a\tb', {pick:p}",
                                                 ["'x\ny'", "'it''s'", "NULL", "'a\\\\b'"])])
    workload = load_sql_workload(path)
    entry = workload.entries[0]
    assert entry.text == "SELECT 1,\n 'a\tb', ?"
    assert entry.values("p") == ("x\ny", "it's", None, "a\\b")
    written = workload.statements_file()
    assert read_by_lua(written, tmp_path) == written
    assert "4:vx\ny," in written and ",1:n," in written
    assert workload.kinds[0].kind is Kind.READ
