"""The `sql` workload: the user's own statements, schema and data, from one TOML file.

    [schema]
    sql = ["CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40), price INT, KEY (price))"]

    [[data]]                          # rows made server-side from a sequence
    table = "items"
    rows = 100000
    columns = { id = "seq", name = "str:8:32", price = "int:1:1000" }

    [[statements]]                    # picked at random by weight, one per event
    sql = "SELECT name FROM items WHERE id = {int:1:100000}"
    weight = 10

Placeholders in statements: {int:LO:HI} (a uniform integer), {str:MIN:MAX} (a random string
of MIN to MAX letters) and {pick:NAME} (one of the statement's own values, e.g. those a log
used: `picks = { NAME = [42, "'Alice'"] }`, each written as an SQL literal: a number, NULL, or
a string with its quotes). Column generators: seq (1, 2, 3, ...), int:LO:HI, str:MIN:MAX.

The server decides what runs: the Lua driver (lua/perflab_sql.lua) prepares each statement on
the server once per session, its text fixed when perflab checked it, each placeholder a `?`
parameter, and binds the values per execution: a value is data, never SQL, whatever it holds,
and the server prepares exactly one statement per text. The statements file the driver reads
(lua/perflab_statements.lua) holds the texts and values as length-prefixed fields, so no byte
can end a record or join two. NUL and the other control characters but tab and newline are
refused in statements and pick values: a server, a log or a terminal may each read them
otherwise.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
import tomllib
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import sqlglot
from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import TokenType

from perflab.domain import Dataset, Scalar, canonical_engine
from perflab.errors import PerflabError
from perflab.load.classify import Classified, classify
from perflab.load.family import Family, LoadReport
from perflab.load.numbers import numbers
from perflab.server.connection import Endpoint, query

SCHEMA = "perflab_sql"
# Anything shaped like a placeholder; _slot says whether it is one.
PLACEHOLDER = re.compile(r"\{([A-Za-z_]+):([^{}]*)\}")
INT_BOUNDS = re.compile(r"^(-?\d+):(-?\d+)$")
STR_BOUNDS = re.compile(r"^(\d+):(\d+)$")
LARGEST_INTEGER = 2**53 - 1  # exact in Lua's numbers
WIDEST_INT_RANGE = 2**32 - 1  # sysbench.rand.uniform draws an unsigned 32-bit integer
LONGEST_STRING = 4096  # letters of a {str:} value
FRAME_MAGIC = "perflab-statements/2"
LARGEST_BOUND_INTEGER = 2**53 - 1  # a pick bound as BIGINT travels as a Lua number: exact here
GENERATOR = re.compile(r"^(seq|int:(-?\d+):(-?\d+)|str:(\d+):(\d+))$")
# the control characters (Unicode Cc) but tab and newline: refused in statements and values
CONTROL_CHARACTER = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
SQL_LITERAL = re.compile(  # a number, NULL, or one quoted string (either quote, SQL escapes)
    r"^(?:'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|-?\d+(?:\.\d+)?|NULL)$", re.S)
INTEGER = re.compile(r"^-?\d+$")
# what a backslash escape in a quoted literal stands for, under the servers' default sql_mode
# (MySQL's and MariaDB's table; \% and \_ keep their backslash, any other letter stands for itself)
ESCAPES = {"0": "\x00", "b": "\b", "n": "\n", "r": "\r", "t": "\t", "Z": "\x1a", "%": "\\%",
           "_": "\\_"}
IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# what table_engine reads of a schema statement: quoted text and comments set aside, a quoted
# name and an executable comment (/*! ... */, which the server runs) kept; scanned left to
# right, so a quote inside a comment or a comment sign inside quotes is not one
QUOTED_OR_COMMENT = re.compile(
    r"`(?:[^`]|``)*`|'(?:[^'\\]|\\.|'')*'|\"(?:[^\"\\]|\\.|\"\")*\"|/\*.*?\*/"
    r"|--(?=\s|$)[^\n]*|#[^\n]*", re.S)
EXECUTABLE_COMMENT = re.compile(r"/\*M?!\d*(.*)\*/", re.S)
TABLE_STATEMENT = re.compile(
    r"\s*(?:(CREATE)\s+(?:OR\s+REPLACE\s+)?(?:TEMPORARY\s+)?|ALTER\s+(?:ONLINE\s+)?(?:IGNORE\s+)?)"
    r"TABLE\b", re.I)
ENGINE_CLAUSE = re.compile(r"\bENGINE\s*=?\s*`?(\w+)", re.I)


@dataclass(frozen=True)
class DataSpec:
    table: str
    rows: int
    columns: tuple[tuple[str, str], ...]


class Slot(StrEnum):
    """What a placeholder draws, as a template names it (and a data column's generator)."""

    INT = "int"  # {int:LO:HI}: a whole number
    STR = "str"  # {str:LO:HI}: letters
    PICK = "pick"  # {pick:NAME}: a value of the statement's pick list NAME


@dataclass(frozen=True)
class Placeholder:
    """One placeholder of a template: {int:LO:HI}, {str:LO:HI} (letters) or {pick:NAME}."""

    kind: Slot
    low: int = 0
    high: int = 0
    name: str = ""


Part = str | Placeholder  # a template is text and placeholders, in order


@dataclass(frozen=True)
class Statement:
    """One [[statements]] entry, checked: its template as written, parsed once into parts, and
    its pick lists (the literals as written)."""

    weight: int
    sql: str
    parts: tuple[Part, ...]
    picks: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (name, SQL literals)

    @property
    def text(self) -> str:
        """What the server prepares: the template with a `?` parameter for each placeholder,
        without a final `;` (a prepared statement has none)."""
        text = "".join(part if isinstance(part, str) else "?" for part in self.parts).rstrip()
        return text[:-1].rstrip() if text.endswith(";") else text

    @property
    def parameters(self) -> tuple[Placeholder, ...]:
        """The placeholders, in the order of the text's `?` parameters."""
        return tuple(part for part in self.parts if isinstance(part, Placeholder))

    def values(self, name: str) -> tuple[str | None, ...]:
        """The values pick list `name` binds (None for NULL): each literal as the server reads
        it under its default sql_mode."""
        return tuple(literal_value(literal) for literal in dict(self.picks)[name])


def literal_value(literal: str) -> str | None:
    """The value an SQL literal of a pick list stands for: a number's text, None for NULL, a
    quoted string without its quotes, a doubled quote as one, backslash escapes read as the
    servers' default sql_mode reads them."""
    if literal.upper() == "NULL":
        return None
    if literal[0] not in "'\"":
        return literal
    body, quote, out, n = literal[1:-1], literal[0], [], 0
    while n < len(body):
        char = body[n]
        if char == "\\":
            out.append(ESCAPES.get(body[n + 1], body[n + 1]))
            n += 2
        elif char == quote:  # doubled (SQL_LITERAL admits no other)
            out.append(quote)
            n += 2
        else:
            out.append(char)
            n += 1
    return "".join(out)


def bound_as_integer(values: tuple[str | None, ...]) -> bool:
    """Whether a pick list is bound as BIGINT (every value a whole number Lua holds exactly,
    or NULL), else as VARCHAR (its numbers as their text, which the server converts)."""
    return all(v is None or (INTEGER.match(v) and abs(int(v)) <= LARGEST_BOUND_INTEGER)
               for v in values)


@dataclass(frozen=True)
class SqlWorkload:
    path: Path
    digest: str  # of the file's text: part of the dataset key
    schema: tuple[str, ...]
    data: tuple[DataSpec, ...]
    entries: tuple[Statement, ...]
    kinds: tuple[Classified, ...] = ()  # per statement: what it does to a server

    @property
    def statements(self) -> tuple[tuple[int, str], ...]:
        """(weight, template as written) per statement."""
        return tuple((entry.weight, entry.sql) for entry in self.entries)

    def statements_file(self) -> str:
        """What lua/perflab_statements.lua reads, as `LENGTH:BYTES,` fields (lengths in UTF-8
        bytes), so that no byte of a statement or a value can end or join a record: per
        statement its weight, the text the server prepares, its parameters ("I" low high, "S"
        low high, "P" name) and its pick lists (name, "I" or "S" and the widest value in
        bytes, the values: "n" for NULL, else "v" and the value)."""
        fields: list[str | int] = [FRAME_MAGIC, len(self.entries)]
        for entry in self.entries:
            fields += [entry.weight, entry.text, len(entry.parameters)]
            for part in entry.parameters:
                if part.kind == Slot.PICK:
                    fields += ["P", part.name]
                else:
                    fields += ["I" if part.kind == Slot.INT else "S", part.low, part.high]
            fields.append(len(entry.picks))
            for name, _ in entry.picks:
                values = entry.values(name)
                widest = max((len(v.encode()) for v in values if v is not None), default=0)
                fields += [name, "I" if bound_as_integer(values) else "S", widest, len(values),
                           *("n" if v is None else f"v{v}" for v in values)]
        return "".join(f"{len(text.encode())}:{text}," for text in map(str, fields))


class SqlFamily(Family):
    """The user's own schema, data and statements, from the file named by the `file` option,
    read and checked once."""

    schema = SCHEMA
    dataset_options = ("file",)

    def __init__(self, options: dict[str, Scalar], where: str):
        super().__init__(options, where)
        if "file" not in options:
            raise PerflabError(f"{where}.options.file is required for the sql workload",
                               hint='options = { file = "my-workload.toml" }')
        self.sql_file = load_sql_workload(str(options["file"]), f"{where}.options.file")
        self.statements_path: Path | None = None

    def dataset_settings(self) -> dict[str, Scalar]:
        return {"sql": self.sql_file.digest}  # the file's content names the data, not its path

    def dataset_key(self, dataset: Dataset) -> str:
        """The file's content and the engine name the data: the plan's tables and rows, which
        do not shape it, are left out."""
        return f"{self.schema}-{dataset.engine.lower()}-sql{self.sql_file.digest}"

    def describe(self, dataset: Dataset) -> str:
        """The file's tables and rows (the plan's [dataset] tables and rows do not apply),
        or the existing schema its statements read."""
        if dataset.existing:
            return f"schema {dataset.existing} as it is"
        tables = ", ".join(f"{spec.table} {spec.rows:,} rows" for spec in self.sql_file.data)
        return f"{self.sql_file.path.name}: {tables or 'no [[data]]'}"

    def engines(self, dataset: Dataset) -> set[str] | None:
        """The engines of the file's tables: each CREATE TABLE's ENGINE clause, and the
        dataset's engine for one without (load_sql_dataset makes them so)."""
        if dataset.existing:
            return None
        engines = set()
        for statement in self.sql_file.schema:
            code = QUOTED_OR_COMMENT.sub(_code_of, statement)
            table = TABLE_STATEMENT.match(code)
            engine = table_engine(code) if table else None
            if engine or (table and table.group(1)):  # a CREATE TABLE without one: the dataset's
                engines.add(engine or dataset.engine)
        return engines or {dataset.engine}

    def writes(self, declared: bool) -> bool:
        """Only when a statement is not a plain or locking read: a file of SELECTs runs
        read-only."""
        return any(kind.writes for kind in self.sql_file.kinds)

    def statements(self) -> tuple[tuple[str, Classified], ...]:
        """Each statement's text as the server prepares it (values are bound: no value is
        in it), and what it does."""
        return tuple((entry.text, kind) for entry, kind in zip(self.sql_file.entries,
                                                               self.sql_file.kinds, strict=True))

    def setup_statements(self) -> tuple[str, ...]:
        return self.sql_file.schema

    def write_files(self, directory: Path) -> None:
        """The statements file, readable by its owner only, at a name nobody can guess, in
        `directory` (the lab); the one an earlier run left there is removed."""
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("statements-*.txt"):
            old.unlink(missing_ok=True)
        handle, name = tempfile.mkstemp(prefix="statements-", suffix=".txt", dir=directory)
        with os.fdopen(handle, "w") as out:  # mkstemp: mode 0600, O_EXCL
            out.write(self.sql_file.statements_file())
        self.statements_path = Path(name)

    def load(self, endpoint: Endpoint, dataset: Dataset) -> LoadReport:
        started = time.monotonic()
        rows = load_sql_dataset(endpoint, self.sql_file, dataset.engine)
        return LoadReport(rows, len(self.sql_file.data), time.monotonic() - started)

    def sysbench_args(self, dataset: Dataset, writes: bool) -> list[str]:
        """Server-side prepared statements, always: sysbench's "disable" mode (and its fallback
        for a statement the server will not prepare) would put the values into the text
        unescaped. perflab asks the server to prepare each text before a run on a server it
        did not start, so the fallback never comes."""
        return ["--db-ps-mode=auto"]

    def sysbench_environment(self) -> dict[str, str]:
        if self.statements_path is None:
            raise RuntimeError("SqlFamily.write_files() was not called before sysbench")
        return {"PERFLAB_SQL_STATEMENTS": str(self.statements_path)}

    def client_files(self) -> dict[str, str]:
        return {"PERFLAB_SQL_STATEMENTS": self.sql_file.statements_file()}


def _code_of(match: re.Match) -> str:
    """What a quoted text or comment leaves of a statement's code (QUOTED_OR_COMMENT)."""
    text = match.group(0)
    if text.startswith("`"):
        return text
    executable = EXECUTABLE_COMMENT.fullmatch(text)
    return f" {executable.group(1)} " if executable else " "


def table_engine(code: str) -> str | None:
    """The engine a CREATE or ALTER TABLE statement's code (its quoted text and comments set
    aside) names, ENGINE = X, as perflab spells it; None when it names none perflab knows (a
    column called engine is no clause)."""
    return next((engine for match in ENGINE_CLAUSE.finditer(code)
                 if (engine := canonical_engine(match.group(1))) is not None), None)


def load_sql_workload(path: str | Path, where: str = "workload.options.file") -> SqlWorkload:
    path = Path(path)
    try:
        text = path.read_text()
        data = tomllib.loads(text)
    except OSError as exc:
        hint = f"check {where}" if path.is_absolute() else (
            f"a relative path is taken from the directory perflab runs in ({Path.cwd()})")
        raise PerflabError(f"{where}: cannot read {path}: {exc.strerror}", hint=hint) from None
    except UnicodeDecodeError:
        raise PerflabError(f"{where}: cannot read {path}: not UTF-8 text",
                           hint="a sql workload is a TOML text file saved as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise PerflabError(f"{where}: {path} is not valid TOML: {exc}") from None
    unknown = set(data) - {"schema", "data", "statements"}
    if unknown:
        raise PerflabError(f"{path}: unknown key {sorted(unknown)[0]} "
                           "(allowed: schema, data, statements)")
    if not isinstance(data.get("schema", {}), dict):
        raise PerflabError(f"{path}: schema must be a table",
                           hint='write [schema] then sql = ["CREATE TABLE ..."]')
    for key in ("data", "statements"):
        if not isinstance(data.get(key, []), list):
            raise PerflabError(f"{path}: {key} must be an array of tables",
                               hint=f"write each entry as [[{key}]] (double brackets)")
    schema = data.get("schema", {}).get("sql", [])
    if isinstance(schema, str):
        schema = [schema]
    if not isinstance(schema, list) or not all(isinstance(s, str) for s in schema):
        raise PerflabError(f"{path}: schema.sql must be a string or a list of strings")
    specs = tuple(_data(item, n, path) for n, item in enumerate(data.get("data", []), 1))
    entries = tuple(checked_statement(item, n, path)
                    for n, item in enumerate(data.get("statements", []), 1))
    if not entries:
        raise PerflabError(f"{path}: no [[statements]]: a workload needs at least one")
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return SqlWorkload(path.resolve(), digest, tuple(schema), specs, entries,
                       tuple(classify(entry.text) for entry in entries))


def shown(sql: str, width: int = 60) -> str:
    """A statement on one line, cut to `width` characters, for a message."""
    return " ".join(sql.split())[:width]


def load_sql_dataset(endpoint: Endpoint, workload: SqlWorkload, engine: str) -> int:
    """Create schema perflab_sql with the file's tables and rows; returns the rows made.

    Tables without an ENGINE clause get the dataset's engine."""
    rows = 0
    with endpoint.connect() as conn:
        query(conn, f"DROP DATABASE IF EXISTS {SCHEMA}")
        query(conn, f"CREATE DATABASE {SCHEMA}")
        query(conn, f"USE {SCHEMA}")
        query(conn, "SET SESSION default_storage_engine = %s", (engine,))
        for statement in workload.schema:
            _run(conn, statement, workload.path)
        for n, spec in enumerate(workload.data, 1):
            columns = ", ".join(name for name, _ in spec.columns)
            values = ", ".join(_expression(gen, seed=n * 100 + i)
                               for i, (_, gen) in enumerate(spec.columns))
            with numbers(conn, spec.rows) as seq:
                _run(conn, f"INSERT INTO {spec.table} ({columns}) SELECT {values} FROM {seq}",
                     workload.path)
            rows += spec.rows
    return rows


def _run(conn, statement: str, path: Path) -> None:
    started = time.monotonic()
    try:
        query(conn, statement)
    except Exception as exc:  # the user's SQL: report it as theirs
        raise PerflabError(f"{path}: statement failed after {time.monotonic() - started:.1f} s:"
                           f" {' '.join(statement.split())[:120]}", detail=str(exc)) from None


def _expression(generator: str, seed: int) -> str:
    if generator == "seq":
        return "seq"
    kind, low, high = generator.split(":")
    if kind == Slot.INT:
        return f"{low} + FLOOR(RAND({seed}) * ({high} - {low} + 1))"
    # letters from two MD5s, cut to a random length between low and high
    return (f"SUBSTRING(CONCAT(MD5(RAND({seed})), MD5(RAND())), 1, "
            f"{low} + FLOOR(RAND() * ({high} - {low} + 1)))")


def _data(item, n: int, path: Path) -> DataSpec:
    where = f"{path}: data[{n}]"
    if not isinstance(item, dict) or set(item) - {"table", "rows", "columns"}:
        raise PerflabError(f"{where} must be a table with table, rows and columns",
                           hint='write each as [[data]] then table = "items", rows = 1000, '
                           'columns = { id = "seq" }')
    table, rows, columns = item.get("table"), item.get("rows"), item.get("columns")
    if not isinstance(table, str) or not IDENTIFIER.match(table):
        raise PerflabError(f"{where}.table must be a table name",
                           hint="letters, digits and _, not starting with a digit")
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise PerflabError(f"{where}.rows must be a positive integer")
    if not isinstance(columns, dict) or not columns:
        raise PerflabError(f"{where}.columns must map column names to generators",
                           hint='e.g. columns = { id = "seq", price = "int:1:1000" }')
    for name, generator in columns.items():
        if not IDENTIFIER.match(name):
            raise PerflabError(f"{where}.columns: {name!r} is not a column name",
                               hint="letters, digits and _, not starting with a digit")
        match = GENERATOR.match(str(generator))
        if not match:
            raise PerflabError(f"{where}.columns.{name} = {generator!r} is not a generator "
                               "(allowed: seq, int:LO:HI, str:MIN:MAX)")
        bounds = [int(x) for x in match.groups()[1:] if x is not None]
        if bounds and bounds[0] > bounds[1]:
            raise PerflabError(f"{where}.columns.{name} = {generator!r}: low above high")
        if generator.startswith("str") and bounds[1] > 64:
            raise PerflabError(f"{where}.columns.{name} = {generator!r}: at most 64 letters")
    return DataSpec(table, rows, tuple(columns.items()))


def checked_statement(item, n: int, path: Path) -> Statement:
    """One [[statements]] entry, checked; a PerflabError names what is wrong with it (digest
    --workload leaves out what would not pass)."""
    where = f"{path}: statements[{n}]"
    if not isinstance(item, dict) or set(item) - {"sql", "weight", "picks"}:
        raise PerflabError(f"{where} must be a table with sql, weight and optional picks",
                           hint='write each as [[statements]] then sql = "SELECT ..." and '
                           "weight = 1")
    sql, weight = item.get("sql"), item.get("weight", 1)
    if not isinstance(sql, str) or not sql.strip():
        raise PerflabError(f"{where}.sql must be a statement")
    if isinstance(weight, bool) or not isinstance(weight, int) or weight < 1:
        raise PerflabError(f"{where}.weight must be a positive integer")
    refuse_controls(sql, f"{where}.sql")
    parts = template_parts(sql, where)
    _check_marks(parts, where)
    used = {part.name for part in parts if isinstance(part, Placeholder) and part.kind == Slot.PICK}
    return Statement(weight, sql, parts, _picks(item.get("picks", {}), used, where))


def refuse_controls(text: str, where: str) -> None:
    """A PerflabError if `text` holds NUL or another control character but tab and newline."""
    found = CONTROL_CHARACTER.search(text)
    if found:
        raise PerflabError(f"{where} holds a control character (U+{ord(found.group()):04X})",
                           hint="statements and pick values may hold tabs and line breaks, no "
                                "other control character")


def template_parts(sql: str, where: str) -> tuple[Part, ...]:
    """A template as text and placeholders: the one parse both perflab and the Lua driver use.
    Anything shaped like a placeholder that is not a valid one is a PerflabError."""
    parts: list[Part] = []
    at = 0
    for match in PLACEHOLDER.finditer(sql):
        if match.start() > at:
            parts.append(sql[at:match.start()])
        parts.append(_slot(match.group(1), match.group(2), where))
        at = match.end()
    if at < len(sql):
        parts.append(sql[at:])
    return tuple(parts)


def _slot(written: str, arguments: str, where: str) -> Placeholder:
    text = f"{{{written}:{arguments}}}"
    kind = Slot(written) if written in tuple(Slot) else None
    if kind is Slot.PICK:
        if not IDENTIFIER.match(arguments):
            raise PerflabError(f"{where}: placeholder {text} is malformed",
                               hint="{pick:NAME}, NAME of letters, digits and _")
        return Placeholder(kind, name=arguments)
    bounds = (INT_BOUNDS if kind is Slot.INT else STR_BOUNDS).match(arguments)
    if kind is None or not bounds:
        raise PerflabError(f"{where}: placeholder {text} is malformed",
                           hint="use {int:LO:HI}, {str:MIN:MAX} (MIN and MAX not negative) or "
                                "{pick:NAME}")
    low, high = int(bounds.group(1)), int(bounds.group(2))
    if low > high:
        raise PerflabError(f"{where}: placeholder {text} has low above high")
    if kind is Slot.INT and (max(abs(low), abs(high)) > LARGEST_INTEGER or
                             high - low > WIDEST_INT_RANGE):
        raise PerflabError(f"{where}: placeholder {text} is out of range",
                           hint=f"bounds within ±{LARGEST_INTEGER}, at most "
                                f"{WIDEST_INT_RANGE} apart")
    if kind is Slot.STR and high > LONGEST_STRING:
        raise PerflabError(f"{where}: placeholder {text} is too long",
                           hint=f"at most {LONGEST_STRING} letters")
    return Placeholder(kind, low, high)


def _check_marks(parts: tuple[Part, ...], where: str) -> None:
    """A PerflabError unless the template, each placeholder replaced by a mark, is one
    statement whose every mark stands where a value goes, as a token of its own, and whose
    only parameters are its placeholders: inside a string, a comment or a name, a placeholder
    would be no parameter, and a `?` of the user's own would be one no value is bound to.
    (The server prepares the text; this says so before a server is asked.)"""
    marks: list[str] = []
    pieces: list[str] = []
    for part in parts:
        if isinstance(part, str):
            pieces.append(part)
        else:
            marks.append(f"perflab_placeholder_{len(marks)}")
            pieces.append(marks[-1])
    try:
        tokens = MySQL().tokenize("".join(pieces))
    except sqlglot.errors.TokenError:
        return  # not SQL at all: classify() says so, and the server refuses to prepare it
    if sorted(t.text for t in tokens if t.token_type == TokenType.VAR and t.text in marks) \
            != sorted(marks):  # a string or quoted name of the mark's text is no mark
        raise PerflabError(f"{where}: a placeholder stands inside a string, a comment or a "
                           "name", hint="write it where a value goes: WHERE id = {int:1:100}, "
                                        "name = {str:3:8} (a bound value, without quotes)")
    if any(t.token_type == TokenType.PLACEHOLDER for t in tokens):
        raise PerflabError(f"{where}.sql holds a '?', a parameter marker to the server that no "
                           "value would be bound to", hint="write a placeholder where a value "
                                                           "goes: {int:1:100}, {pick:NAME}")
    ends = [n for n, t in enumerate(tokens) if t.token_type == TokenType.SEMICOLON]
    if any(n < len(tokens) - 1 for n in ends):
        raise PerflabError(f"{where}.sql holds more than one statement",
                           hint="one statement per [[statements]] entry, without a ';' between "
                                "two")


def _picks(table, used: set[str], where: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A statement's pick lists, each value an SQL literal; every {pick:NAME} needs one."""
    if not isinstance(table, dict):
        raise PerflabError(f"{where}.picks must be a table of NAME = [values]",
                           hint="""e.g. picks = { id = [1, 5, 9], name = ["'Alice'"] }""")
    missing = used - set(table)
    if missing:
        raise PerflabError(f"{where}: {{pick:{sorted(missing)[0]}}} has no list in picks")
    unused = set(table) - used
    if unused:
        raise PerflabError(f"{where}.picks.{sorted(unused)[0]} is not used by the statement")
    out = []
    for name, values in sorted(table.items()):
        if not isinstance(values, list) or not values:
            raise PerflabError(f"{where}.picks.{name} must be a non-empty list")
        literals = []
        for value in values:
            literal = str(value) if isinstance(value, int | float) and \
                not isinstance(value, bool) else value
            if isinstance(literal, str):
                refuse_controls(literal, f"{where}.picks.{name}")
            if not isinstance(literal, str) or not SQL_LITERAL.match(literal):
                raise PerflabError(f"{where}.picks.{name}: {value!r} is not an SQL literal",
                                   hint="a number, or a string with its quotes: \"'Alice'\"")
            decoded = literal_value(literal)
            if decoded is not None:
                refuse_controls(decoded, f"{where}.picks.{name}")  # an escape stands for one
            literals.append(literal)
        out.append((name, tuple(literals)))
    return tuple(out)
