"""The user's own workload file: parsing and its errors (no server needed)."""

from pathlib import Path

import pytest

from perflab.domain import Dataset, Workload
from perflab.errors import PerflabError
from perflab.load.sqlworkload import Placeholder, load_sql_workload
from perflab.load.workloads import resolve

pytestmark = pytest.mark.fast

GOOD = """
[schema]
sql = "CREATE TABLE t (id INT PRIMARY KEY, v INT)"
[[data]]
table = "t"
rows = 10
columns = { id = "seq", v = "int:1:9" }
[[statements]]
sql = "SELECT v FROM t WHERE id = {int:1:10}"
weight = 3
[[statements]]
sql = '''UPDATE t
         SET v = {int:1:9} WHERE id = {int:1:10}'''
"""


def test_a_workload_file_parses_and_writes_its_statements(tmp_path):
    path = tmp_path / "w.toml"
    path.write_text(GOOD)
    workload = load_sql_workload(path)
    assert workload.schema == ("CREATE TABLE t (id INT PRIMARY KEY, v INT)",)
    assert workload.data[0].columns == (("id", "seq"), ("v", "int:1:9"))
    assert [w for w, _ in workload.statements] == [3, 1]
    assert [part for part in workload.entries[0].parts if not isinstance(part, str)] == \
        [Placeholder("int", 1, 10)]
    assert workload.entries[1].text == "UPDATE t\n         SET v = ? WHERE id = ?"
    assert workload.statements_file().startswith(
        "20:perflab-statements/2,1:2,1:3,28:SELECT v FROM t WHERE id = ?,1:1,1:I,1:1,2:10,1:0,")
    resolved = resolve(Workload("sql", (("file", str(path)),)))
    assert resolved.name == "sql" and resolved.writes  # the UPDATE
    resolved.family.write_files(tmp_path / "lab")
    written = resolved.family.sysbench_environment()["PERFLAB_SQL_STATEMENTS"]
    assert Path(written).read_text() == workload.statements_file()
    assert Path(written).stat().st_mode & 0o777 == 0o600
    resolved.family.write_files(tmp_path / "lab")  # the next run's file replaces it
    assert [p.name for p in (tmp_path / "lab").iterdir()] == \
        [Path(resolved.family.sysbench_environment()["PERFLAB_SQL_STATEMENTS"]).name]


def test_the_data_is_named_and_described_by_the_file_not_the_plans_rows(tmp_path):
    """The file's [[data]] makes the dataset: its key follows the file's content and engine,
    not the plan's [dataset] tables and rows (which the loader does not use), and a report
    describes the file's tables and rows."""
    path = tmp_path / "w.toml"
    path.write_text(GOOD)
    family = resolve(Workload("sql", (("file", str(path)),))).family
    assert family.describe(Dataset()) == "w.toml: t 10 rows"
    key = family.dataset_key(Dataset())
    assert key == family.dataset_key(Dataset(tables=4, rows=250_000))
    assert key != family.dataset_key(Dataset(engine="MyISAM"))
    path.write_text(GOOD.replace("rows = 10", "rows = 20000"))
    larger = resolve(Workload("sql", (("file", str(path)),))).family
    assert larger.dataset_key(Dataset()) != key
    assert larger.describe(Dataset()) == "w.toml: t 20,000 rows"
    assert larger.describe(Dataset(existing="appdb")) == "schema appdb as it is"
    sbtest = resolve(Workload("oltp_read_only")).family
    assert sbtest.describe(Dataset(tables=4, rows=250_000)) == "4 table(s) x 250000 rows"


@pytest.mark.parametrize(("edit", "message"), [
    (("weight = 3", "weight = 0"), "weight must be a positive integer"),
    (("{int:1:10}\"\nweight", "{int:10:1}\"\nweight"), "low above high"),
    (("{int:1:10}\"\nweight", "{int:1}\"\nweight"), "placeholder {int:1} is malformed"),
    (('v = "int:1:9"', 'v = "float:1:9"'), "is not a generator"),
    (("rows = 10", "rows = 0"), "rows must be a positive integer"),
    (("[schema]", "[schemas]"), "unknown key schemas"),
    (("WHERE id = {int:1:10}\"", "WHERE id = {int:1:10}; DELETE FROM t\""),
     "more than one statement"),
    (("WHERE id = {int:1:10}\"", "WHERE id = {pick:p}\"\npicks = { p = [\"'it\\\\0s'\"] }"),
     "picks.p holds a control character (U+0000)"),  # \0 stands for a NUL
    (("WHERE id = {int:1:10}\"", "WHERE id = ? AND 1 = {int:1:2}\""), "holds a '?'"),
    (("WHERE id = {int:1:10}\"", "WHERE id = '{int:1:10}'\""), "inside a string"),
])
def test_mistakes_in_a_workload_file_are_one_line(tmp_path, edit, message):
    path = tmp_path / "w.toml"
    path.write_text(GOOD.replace(*edit, 1))
    with pytest.raises(PerflabError) as err:
        load_sql_workload(path)
    assert message in err.value.message


def test_the_sql_workload_needs_its_file(tmp_path):
    with pytest.raises(PerflabError, match="options.file is required"):
        resolve(Workload("sql"))
    with pytest.raises(PerflabError, match="cannot read"):
        resolve(Workload("sql", (("file", str(tmp_path / "missing.toml")),)))


@pytest.mark.parametrize(("schema", "engines"), [
    ('"CREATE TABLE t (id INT PRIMARY KEY, v INT)"', {"InnoDB"}),
    ('"CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=myisam"', {"MyISAM"}),
    ('"create table t (id INT PRIMARY KEY, v INT) engine = `Aria` ROW_FORMAT=PAGE"', {"Aria"}),
    ('["CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE MyISAM", '
     '"CREATE TABLE u (id INT, engine VARCHAR(9) DEFAULT \'ENGINE=Aria\') '
     'COMMENT \'ENGINE=MEMORY\'", "CREATE INDEX i ON t (v)"]', {"MyISAM", "InnoDB"}),
    ('"-- the facts\\nCREATE OR REPLACE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=MyISAM"',
     {"MyISAM"}),
    ('["CREATE TABLE t (id INT PRIMARY KEY, v INT) /* not ENGINE=Aria */", '
     '"ALTER TABLE t ENGINE=MyISAM", "ALTER TABLE t ADD KEY (v)"]', {"InnoDB", "MyISAM"}),
    ('"CREATE TABLE `t#1` (id INT PRIMARY KEY, v INT DEFAULT 5--1) /*!50100 ENGINE=Aria */"',
     {"Aria"}),
])
def test_the_engines_of_a_files_tables_are_its_create_tables(tmp_path, schema, engines):
    """What tune's knob space follows: each CREATE (OR REPLACE) TABLE's ENGINE clause, the
    dataset's engine for a table without one, and an ALTER TABLE's; a column named engine, a
    default or a comment saying ENGINE are not clauses, but a comment the server runs (/*! */)
    is; a quoted name may hold a comment sign; an existing schema's engines are unknown."""
    path = tmp_path / "w.toml"
    path.write_text(GOOD.replace('sql = "CREATE TABLE t (id INT PRIMARY KEY, v INT)"',
                                 f"sql = {schema}"))
    family = resolve(Workload("sql", (("file", str(path)),))).family
    assert family.engines(Dataset()) == engines
    assert family.engines(Dataset(existing="appdb")) is None
    assert resolve(Workload("oltp_read_only")).family.engines(Dataset(engine="Aria")) == {"Aria"}
