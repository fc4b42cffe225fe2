"""The installed server's variable catalog and value checks, whatever the flavor: MariaDB's
information_schema.SYSTEM_VARIABLES, or MySQL's performance_schema.variables_metadata (types,
scopes, ranges) with its global_variables (values). MySQL's catalog names no default, no
command-line form and no read-only flag: its variables are taken as settable, and the server's
own refusal (error 1238) is what says otherwise.

Plans are validated against the catalog before any point runs, so that a misspelt variable or an
out-of-range value costs one line of error, not a failed sweep.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import asdict, dataclass

import pymysql

from perflab.domain import Scalar
from perflab.errors import PerflabError
from perflab.server.connection import query
from perflab.server.flavor import server_label

INTEGER_TYPES = ("INT", "INT UNSIGNED", "BIGINT", "BIGINT UNSIGNED")
# The suffixes the server's option parser takes after an integer (either case), each a power of
# 1024, and the 64 bits it reads the product into
SIZE_SUFFIXES = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50,
                 "E": 1 << 60}
INTEGER_TEXT = re.compile(r"([+-]?[0-9]+)([KMGTPE]?)", re.IGNORECASE)
INTEGER_RANGE = range(-(1 << 63), 1 << 64)  # the signed and the unsigned 64-bit values

CATALOG_QUERY = """
SELECT VARIABLE_NAME, VARIABLE_TYPE, VARIABLE_SCOPE, NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE,
       NUMERIC_BLOCK_SIZE, ENUM_VALUE_LIST, READ_ONLY, COMMAND_LINE_ARGUMENT, DEFAULT_VALUE,
       GLOBAL_VALUE
FROM information_schema.SYSTEM_VARIABLES
"""
MYSQL_CATALOG_QUERY = """
SELECT m.VARIABLE_NAME, m.DATA_TYPE, m.VARIABLE_SCOPE, m.MIN_VALUE, m.MAX_VALUE, g.VARIABLE_VALUE
FROM performance_schema.variables_metadata m
LEFT JOIN performance_schema.global_variables g USING (VARIABLE_NAME)
"""
# MySQL's DATA_TYPE and VARIABLE_SCOPE as MariaDB's catalog words them
MYSQL_TYPES = {"Numeric": "DOUBLE", "Boolean": "BOOLEAN", "Enumeration": "ENUM", "Set": "SET",
               "String": "VARCHAR"}
MYSQL_SCOPES = {"GLOBAL": "GLOBAL", "SESSION": "SESSION", "SESSION_ONLY": "SESSION ONLY"}
NO_SUCH_TABLE = (1109, 1146)  # unknown table in information_schema; table doesn't exist


@dataclass(frozen=True)
class VariableSpec:
    name: str
    type: str
    scope: str
    minimum: str | None
    maximum: str | None
    block_size: str | None
    values: tuple[str, ...]  # ENUM / SET / BOOLEAN choices
    read_only: bool  # not settable with SET GLOBAL: a change needs a restart
    command_line: str | None  # NULL when the variable cannot be given on the command line
    default: str | None
    startup_value: str | None  # GLOBAL_VALUE of a server started with no options

    @property
    def dynamic(self) -> bool:
        return not self.read_only and self.scope in ("GLOBAL", "SESSION")


@dataclass(frozen=True)
class Catalog:
    version: str
    variables: dict[str, VariableSpec]
    engines: tuple[str, ...]

    @classmethod
    def from_rows(cls, version: str, rows: list[tuple], engines: list[str]) -> Catalog:
        specs = {}
        for row in rows:
            name, vtype, scope, vmin, vmax, block, values, read_only, cmdline, default, value = row
            specs[name.lower()] = VariableSpec(
                name=name.lower(),
                type=vtype,
                scope=scope,
                minimum=_text(vmin),
                maximum=_text(vmax),
                block_size=_text(block),
                values=tuple(values.split(",")) if values else (),
                read_only=read_only == "YES",
                command_line=cmdline,
                default=_text(default),
                startup_value=_text(value),
            )
        return cls(version, specs, tuple(engines))

    def to_json(self) -> dict:
        return {
            "version": self.version,
            "engines": list(self.engines),
            "variables": {k: asdict(v) for k, v in self.variables.items()},
        }

    @classmethod
    def from_json(cls, data: dict) -> Catalog:
        variables = {
            k: VariableSpec(**{**v, "values": tuple(v["values"])})
            for k, v in data["variables"].items()
        }
        return cls(data["version"], variables, tuple(data["engines"]))

    def spec(self, name: str, where: str) -> VariableSpec:
        spec = self.variables.get(name)
        if spec is None:
            close = difflib.get_close_matches(name, self.variables, n=3)
            hint = f"did you mean {' or '.join(close)}?" if close else (
                "remove it, list it in only_where_present (a plan's) to set it only where a "
                "server has it, or check its name in SHOW GLOBAL VARIABLES of this server")
            raise PerflabError(
                f"{where}: unknown server variable {name!r} "
                f"(not in the catalog of {server_label(self.version)})",
                hint=hint,
            )
        return spec

    def check(self, name: str, value: Scalar, where: str) -> str:
        """The value as the server's command line takes it, or a one-line PerflabError."""
        spec = self.spec(name, where)
        if spec.command_line is None:
            raise PerflabError(f"{where}: {name} cannot be set at server start (it is read-only)",
                               hint=f"remove {name} from the plan")
        return check_value(spec, value, where)

    def require_engine(self, engine: str, where: str) -> None:
        if engine.lower() not in (e.lower() for e in self.engines):
            raise PerflabError(
                f"{where}: storage engine {engine} is not available in this server",
                hint=f"available: {', '.join(self.engines)}",
            )


def check_value(spec: VariableSpec, value: Scalar, where: str) -> str:
    label = f"{where}: {spec.name} = {value!r}"
    if spec.type in INTEGER_TYPES:
        integer = parse_integer(value)
        if integer is None:
            raise PerflabError(f"{label} is not an integer (a size may carry one suffix: "
                               f"{', '.join(SIZE_SUFFIXES)})", hint='e.g. 64M, not 64MB or 1.5G')
        least, most = int(spec.minimum or 0), int(spec.maximum or 0)
        if spec.minimum is not None and spec.maximum is not None and not least <= integer <= most:
            raise PerflabError(f"{label} is out of range (allowed: {least} to {most})")
        return str(integer)
    if spec.type == "DOUBLE":
        try:
            number = float(value) if not isinstance(value, bool) else None
        except ValueError:
            number = None
        low, high = float(spec.minimum or 0), float(spec.maximum or 0)
        bounded = spec.minimum is not None and spec.maximum is not None
        if number is None:
            raise PerflabError(f"{label} is not a number",
                               hint=f"allowed: {low:g} to {high:g}" if bounded else None)
        if bounded and not low <= number <= high:
            raise PerflabError(f"{label} is out of range (allowed: {low:g} to {high:g})")
        return repr(number)
    if spec.type == "BOOLEAN":
        return _boolean(value, label)
    if spec.type == "ENUM":
        choice = _choice(spec, str(value), label)
        return choice
    if spec.type == "SET":
        items = [item.strip() for item in str(value).split(",") if item.strip()]
        return ",".join(_choice(spec, item, label) for item in items)
    if isinstance(value, bool):
        raise PerflabError(f"{label}: {spec.name} takes a string, not a boolean",
                           hint='write the value in quotes, e.g. "ON"')
    return str(value)


def overridden(catalog: Catalog, asked: dict[str, str],
               running: dict[str, str]) -> dict[str, tuple[str, str]]:
    """The choices (ENUM and BOOLEAN variables) a server runs with another value than it was
    given, as name -> (asked, running). MariaDB overrides some: query_cache_size given at
    start-up switches query_cache_type ON even when OFF is asked with it."""
    def plain(spec: VariableSpec, value: str) -> str:
        text = str(value).strip().upper()
        if spec.type == "BOOLEAN":
            return "ON" if text in ("TRUE", "ON", "1", "YES") else "OFF"
        if text.isdigit() and int(text) < len(spec.values):  # an ENUM given by its index
            return spec.values[int(text)].upper()
        return text

    out = {}
    for name, value in asked.items():
        spec = catalog.variables.get(name)
        if spec is None or spec.type not in ("ENUM", "BOOLEAN") or name not in running:
            continue
        if plain(spec, value) != plain(spec, running[name]):
            out[name] = (str(value), str(running[name]))
    return out


def parse_integer(value: Scalar | None) -> int | None:
    """An integer variable's value as the server's option parser reads it: an int, or the text
    of one with at most one suffix of SIZE_SUFFIXES ("64M", "2g"); None for anything else, what
    the server refuses ("1.5M", "", a float, a boolean) and what it misreads rather than refuses
    (it reads the number's first letter only: "16MB" as 16M, "1e9" as 1E), so that no value is
    guessed at; None also beyond 64 bits, and for None."""
    if value is None or isinstance(value, bool | float):
        return None
    if isinstance(value, str):
        match = INTEGER_TEXT.fullmatch(value.strip(" \t"))
        if not match:
            return None
        value = int(match.group(1)) * SIZE_SUFFIXES.get(match.group(2).upper(), 1)
    return value if value in INTEGER_RANGE else None


def _boolean(value: Scalar, label: str) -> str:
    text = str(value).strip().upper()
    if text in ("TRUE", "ON", "1", "YES"):
        return "ON"
    if text in ("FALSE", "OFF", "0", "NO"):
        return "OFF"
    raise PerflabError(f"{label} is not a boolean (allowed: ON, OFF, true, false, 1, 0)")


def _choice(spec: VariableSpec, value: str, label: str) -> str:
    """One of the server's listed values, as it spells it. An ENUM whose values the server
    does not list (character_set_server, collation_server, lc_messages: the names of its
    character sets, collations and locales) takes the value as given: the server checks it at
    start, and a name it does not know fails the start with its own message."""
    if not spec.values:
        if not value.strip():
            raise PerflabError(f"{label} is empty", hint=f"give {spec.name} a name")
        return value.strip()
    for allowed in spec.values:
        if allowed.upper() == value.strip().upper():
            return allowed
    raise PerflabError(f"{label} is not allowed (allowed: {', '.join(spec.values)})")


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode()
    return str(value)


def read_catalog(conn, start_options: dict[str, str] | None = None) -> Catalog:
    """The variables and engines of the server behind `conn`. `start_options`: the options its
    binary takes at start (`start_options_of`), when known: SYSTEM_VARIABLES has no
    COMMAND_LINE_ARGUMENT for some that it does take (character_set_server, collation_server,
    default_storage_engine, autocommit), which a plan may then set (`_start_option`). On a
    server perflab did not start, the variables SET GLOBAL sets by value instead
    (existing.SET_BY_VALUE)."""
    try:
        rows = query(conn, CATALOG_QUERY)
    except pymysql.MySQLError as exc:
        if exc.args[0] not in NO_SUCH_TABLE:
            raise
        rows = [_mysql_row(*row) for row in query(conn, MYSQL_CATALOG_QUERY)]
    if start_options:
        rows = [(*row[:8], _start_option(row[0].lower(), row[1], start_options), *row[9:])
                if row[8] is None else row for row in rows]
    engines = [row[0] for row in query(conn, "SHOW ENGINES") if row[1] in ("YES", "DEFAULT")]
    return Catalog.from_rows(query(conn, "SELECT VERSION()")[0][0], rows, engines)


def _mysql_row(name: str, data_type: str, scope: str, low: str | None, high: str | None,
               value: str | None) -> tuple:
    """One of MySQL's variables as a row of CATALOG_QUERY: an Integer is signed when its
    minimum is; no block size, listed values, read-only flag, option form or default."""
    vtype = MYSQL_TYPES.get(data_type) or (
        "BIGINT" if low and low.startswith("-") else "BIGINT UNSIGNED")
    numeric = data_type in ("Integer", "Numeric")
    return (name, vtype, MYSQL_SCOPES.get(scope, scope), low if numeric else None,
            high if numeric else None, None, None, "NO", "REQUIRED", None, value)


def _start_option(name: str, vtype: str, start_options: dict[str, str]) -> str | None:
    """How the option named as variable `name` takes its value at start, when it sets that
    variable: a boolean's option that takes a value takes something else (`--log-bin[=name]`
    names the binary log, so `--log_bin=OFF` would switch it on, named OFF)."""
    kind = start_options.get(name)
    return None if vtype == "BOOLEAN" and kind not in (None, "NONE") else kind


def start_options_of(help_text: str) -> dict[str, str]:
    """The options a server binary's `--verbose --help` lists, as variable names, each with
    how it takes its value, as COMMAND_LINE_ARGUMENT says it: REQUIRED (`--name=value`),
    OPTIONAL (`--name[=value]`) or NONE (a flag). Only the options' part of the text counts,
    not the table of values after it."""
    options = help_text.split("\nVariables (--variable-name=value)")[0]
    found = {}
    for match in re.finditer(r"^ {2}(?:-\w, )?--([a-z0-9_-]+)(\[?=)?", options, re.MULTILINE):
        name, argument = match.group(1).replace("-", "_"), match.group(2)
        if name not in COMMANDS:
            found[name] = "REQUIRED" if argument == "=" else "OPTIONAL" if argument else "NONE"
    return found


# Options that make the binary do something else than serve, named as a variable is:
# `--version` prints the version and exits (the variable `version` is the server's own)
COMMANDS = {"version"}
