"""What a statement reaches on a server, not only what it names, by every name the server may
resolve.

`SELECT x FROM v` names a view; the view may call a stored function, and the function may run
`SET GLOBAL`, take a named lock or write, and a read-only session stops none of that but the
write. So every word and quoted name of a statement (load/lexer.py: however a parse would read
it) is looked up among the server's views, and every one followed by `(` among its stored
functions, in the schema it is qualified with or else the default one. Names are compared
without regard to letter case, whatever lower_case_table_names says (both `App`.`v` and
`app`.`v` are then taken as reached: a lookup too many, never one too few), a catalog name
outside ASCII (which the server's collations may fold onto an ASCII one) matches every name,
and the statement's own names hide nothing (a CTE named like a function does not stop the
server calling the function). A view is classified through its definition, a stored function
through its body statement by statement (only the forms perflab reads whole: RETURN, DECLARE
of plain variables, SET of declared variables, reads), recursively. A call that is none of the
server's stored functions must be one of its built-ins (information_schema.SQL_FUNCTIONS and
KEYWORDS) or, where the server lists its loadable functions, not one of those. What cannot be
read (a view or function this account cannot see into, a loadable function, a body with flow
control or a form perflab does not read whole) is never taken for a read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pymysql

from perflab.load.classify import Classified, Kind, classify
from perflab.load.lexer import NAMING, LexicalRefusal, Token, TokenKind, lex
from perflab.server.connection import query

# Spatial functions: built into MariaDB but not listed in SQL_FUNCTIONS (10.11). Each also
# exists with the ST_ prefix.
SPATIAL = {
    "AREA", "ASBINARY", "ASTEXT", "ASWKB", "ASWKT", "BOUNDARY", "BUFFER", "CENTROID",
    "CONTAINS", "CONVEXHULL", "CROSSES", "DIMENSION", "DISJOINT", "DISTANCE",
    "DISTANCE_SPHERE", "ENDPOINT", "ENVELOPE", "EQUALS", "EXTERIORRING", "GEOMCOLLFROMTEXT",
    "GEOMCOLLFROMWKB", "GEOMETRYCOLLECTION", "GEOMETRYCOLLECTIONFROMTEXT",
    "GEOMETRYCOLLECTIONFROMWKB", "GEOMETRYFROMTEXT", "GEOMETRYFROMWKB", "GEOMETRYN",
    "GEOMETRYTYPE", "GEOMFROMTEXT", "GEOMFROMWKB", "GEOMFROMGEOJSON", "ASGEOJSON", "GLENGTH",
    "INTERIORRINGN", "INTERSECTION", "INTERSECTS", "ISCLOSED", "ISEMPTY", "ISRING",
    "ISSIMPLE", "ISVALID", "LENGTH", "LINEFROMTEXT", "LINEFROMWKB", "LINESTRING",
    "LINESTRINGFROMTEXT", "LINESTRINGFROMWKB", "MBRCONTAINS", "MBRCOVEREDBY", "MBRDISJOINT",
    "MBREQUAL", "MBREQUALS", "MBRINTERSECTS", "MBROVERLAPS", "MBRTOUCHES", "MBRWITHIN",
    "MLINEFROMTEXT", "MLINEFROMWKB", "MPOINTFROMTEXT", "MPOINTFROMWKB", "MPOLYFROMTEXT",
    "MPOLYFROMWKB", "MULTILINESTRING", "MULTILINESTRINGFROMTEXT", "MULTILINESTRINGFROMWKB",
    "MULTIPOINT", "MULTIPOINTFROMTEXT", "MULTIPOINTFROMWKB", "MULTIPOLYGON",
    "MULTIPOLYGONFROMTEXT", "MULTIPOLYGONFROMWKB", "NUMGEOMETRIES", "NUMINTERIORRINGS",
    "NUMPOINTS", "OVERLAPS", "POINT", "POINTFROMTEXT", "POINTFROMWKB", "POINTN",
    "POINTONSURFACE", "POLYFROMTEXT", "POLYFROMWKB", "POLYGON", "POLYGONFROMTEXT",
    "POLYGONFROMWKB", "RELATE", "SIMPLIFY", "SRID", "STARTPOINT", "SYMDIFFERENCE", "TOUCHES",
    "UNION", "VALIDATE", "WITHIN", "X", "Y", "GEOHASH", "LATFROMGEOHASH", "LONGFROMGEOHASH",
    "POINTFROMGEOHASH",
}
# How much worse one kind is than another, when a statement reaches several objects.
# a SET's operator, as (kind, text) of its tokens: = or :=
EQUALS = (TokenKind.PUNCT, "=")
WALRUS = [(TokenKind.PUNCT, ":"), EQUALS]
SEVERITY = {Kind.READ: 0, Kind.LOCKS: 1, Kind.WRITES: 2, Kind.UNKNOWN: 3, Kind.NEVER: 4}
FLOW = {"BEGIN", "IF", "ELSEIF", "ELSE", "END", "WHILE", "LOOP", "REPEAT", "UNTIL", "CASE",
        "WHEN", "LEAVE", "ITERATE", "OPEN", "FETCH", "CLOSE", "RESIGNAL", "SIGNAL", "GOTO"}
DEEPEST = 32  # views over views over functions: past this, not followed (never a read)


@dataclass(frozen=True)
class Reached:
    """An object a statement reaches (a view, a stored function), how it is reached (`path`:
    "view app.v -> function app.F"), its schema and what it does."""

    path: str
    schema: str
    kind: Classified


class ServerObjects:
    """The views, stored functions and function names of one server, read once."""

    def __init__(self, conn: pymysql.Connection):
        functions = _names(conn, "SELECT FUNCTION FROM information_schema.SQL_FUNCTIONS")
        self.listed = functions is not None  # MariaDB 10.6 and later list their built-ins
        self.builtins = (functions | SPATIAL | {f"ST_{name}" for name in SPATIAL}
                         if functions is not None else set()) | \
            (_names(conn, "SELECT WORD FROM information_schema.KEYWORDS") or set())
        self.loadable = _loadable_functions(conn)
        self.views = [(schema, name, definition or "") for schema, name, definition in query(
            conn, "SELECT TABLE_SCHEMA, TABLE_NAME, VIEW_DEFINITION FROM "
                  "information_schema.VIEWS")]
        self.functions = [(schema, name, access, body or "") for schema, name, access, body in
                          query(conn, "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, SQL_DATA_ACCESS, "
                                      "ROUTINE_DEFINITION FROM information_schema.ROUTINES "
                                      "WHERE ROUTINE_TYPE = 'FUNCTION'")]

    def views_named(self, schema: str, name: str) -> list[tuple[str, str, str]]:
        """(schema, name, definition: "" when this account cannot read it) of every view the
        server may take `schema`.`name` for."""
        return [view for view in self.views if _may_be(view[0], schema) and
                _may_be(view[1], name)]

    def functions_named(self, schema: str, name: str) -> list[tuple[str, str, str, str]]:
        """(schema, name, declared data access, body: "" when unreadable) of every stored
        function the server may take `schema`.`name`() for."""
        return [found for found in self.functions if _may_be(found[0], schema) and
                _may_be(found[1], name)]

    def unknown_call(self, name: str) -> Classified | None:
        """Why an unqualified call of `name`, which is no stored function here, is not known
        to be one of the server's built-ins (None when it is)."""
        if self.loadable is not None and name in self.loadable:
            return Classified(Kind.NEVER, "is a loadable function, whose code perflab cannot "
                                          "read")
        if name in self.builtins or self.loadable is not None:
            return None  # listed as built-in, or no other kind of function by that name
        if not self.listed:
            return Classified(Kind.NEVER, "may be a loadable function: this server does not "
                                          "list its built-in ones (information_schema."
                                          "SQL_FUNCTIONS, MariaDB 10.6 and later) and this "
                                          "account cannot read its loadable ones")
        return Classified(Kind.NEVER, "is neither a built-in function of this server nor a "
                                      "stored function this account can read, and this "
                                      "account cannot read the server's loadable functions "
                                      "(mysql.func) to rule out one")


def _names(conn: pymysql.Connection, sql: str) -> set[str] | None:
    """The names one query lists, upper-case; None when this server or account has no such
    list."""
    try:
        return {str(name).upper() for (name,) in query(conn, sql)}
    except pymysql.MySQLError:
        return None


def _loadable_functions(conn: pymysql.Connection) -> set[str] | None:
    """The names of the server's loadable functions (UDFs), None when this account cannot
    read them."""
    listed = _names(conn, "SELECT UDF_NAME FROM performance_schema.user_defined_functions")
    return listed if listed is not None else _names(conn, "SELECT name FROM mysql.func")


def _folded(name: str) -> str | None:
    """A name as compared here: ASCII without letter case; None for one outside ASCII, which
    a server's collation may fold onto others."""
    return name.lower() if name.isascii() else None


def _may_be(catalog: str, written: str) -> bool:
    """Whether the server may take the name `written` for the catalog's name `catalog`."""
    a, b = _folded(catalog), _folded(written)
    return a is None or b is None or a == b


def reached(statement: Classified, schema: str, objects: ServerObjects) -> list[Reached]:
    """Every view and stored function `statement` may reach, run in default schema `schema`,
    each with what it does; nothing is run."""
    out: list[Reached] = []
    seen: set[tuple[str, str, str]] = set()
    todo = [(statement, schema, "")]
    while todo:
        current, default, via = todo.pop(0)
        for written_schema, written in current.names:
            for view_schema, view, definition in objects.views_named(written_schema or default,
                                                                    written):
                key = ("view", view_schema, view)
                if key in seen:
                    continue
                seen.add(key)
                path = f"{via}view {view_schema}.{view}"
                kind = classify(definition, strict=False) if definition else Classified(
                    Kind.NEVER, "is a view whose definition this account cannot read (it "
                                "needs SHOW VIEW)")
                out.append(Reached(path, view_schema, kind))
                todo.append((kind, view_schema, path + " -> "))
        for call_schema, name in current.calls:
            found = objects.functions_named(call_schema or default, name)
            if not found and not call_schema:
                unknown = objects.unknown_call(name)
                key = ("call", "", name)
                if unknown is not None and key not in seen:
                    seen.add(key)
                    out.append(Reached(f"{via}function {default}.{name}", default, unknown))
            for function_schema, function, access, body in found:
                key = ("function", function_schema, function.upper())
                if key in seen:
                    continue
                seen.add(key)
                path = f"{via}function {function_schema}.{function}"
                kind = function_kind(access, body)
                out.append(Reached(path, function_schema, kind))
                todo.append((kind, function_schema, path + " -> "))
        if len(seen) > DEEPEST:
            out.append(Reached(via.rstrip(" ->") or "the statement", default, Classified(
                Kind.UNKNOWN, f"reaches more than {DEEPEST} views and functions")))
            break
    return out


def prepare_refusal(conn: pymysql.Connection, text: str) -> str | None:
    """What the server says when asked to prepare `text` (None when it prepares it): one
    statement, parsed by the server's own parser; nothing is run. The text travels as a hex
    literal, so no quoting of perflab's own can change it."""
    try:
        query(conn, f"SET @perflab_check = CONVERT(X'{text.encode().hex()}' USING utf8mb4)")
        query(conn, "PREPARE perflab_check FROM @perflab_check")
        query(conn, "DEALLOCATE PREPARE perflab_check")
    except pymysql.MySQLError as exc:
        return f"is refused by the server when prepared ({exc.args[-1]})"
    finally:
        query(conn, "SET @perflab_check = NULL")
    return None


def function_kind(data_access: str, body: str) -> Classified:
    """What a stored function does, from its body: each statement read whole (RETURN, a
    DECLARE's DEFAULT and each SET of a declared variable as the SELECT of their expression,
    any other statement classified as it stands), the worst one's kind, with every table,
    name and call of them all (to follow further)."""
    if not body:
        return Classified(Kind.NEVER, "is a function whose body this account cannot read")
    if data_access == "MODIFIES SQL DATA":
        return Classified(Kind.WRITES, "is declared MODIFIES SQL DATA")
    try:
        statements = _body_statements(body)
    except LexicalRefusal as exc:
        return Classified(Kind.NEVER, f"has a body perflab cannot read as every server reads "
                                      f"it: {exc}")
    if statements is None:
        return Classified(Kind.UNKNOWN, "has flow control, handlers, cursors or labels, which "
                                        "perflab does not follow")
    declared: set[str] = set()
    kinds = [_body_statement_kind(body, tokens, declared) for tokens in statements]
    worst = max(kinds, key=lambda k: SEVERITY[k.kind])
    return replace(worst, locks=any(k.locks for k in kinds),
                   tables=tuple(sorted({t for k in kinds for t in k.tables})),
                   names=tuple(sorted({n for k in kinds for n in k.names})),
                   calls=tuple(sorted({c for k in kinds for c in k.calls})))


def _body_statements(body: str) -> list[list[Token]] | None:
    """A function body's statements as tokens (the one statement of a body without BEGIN), or
    None when it has flow control, labels or nested blocks."""
    tokens = list(lex(body, strict=False, several=True).tokens)
    if tokens and tokens[0].text.upper() == "BEGIN":
        if len(tokens) < 2 or tokens[-1].text.upper() != "END":
            return None
        tokens = tokens[1:-1]
    statements = [piece for piece in _split(tokens, ";") if piece]
    for piece in statements:
        if piece[0].text.upper() in FLOW or (len(piece) > 1 and piece[1].text == ":" and
                                            piece[1].kind == TokenKind.PUNCT):
            return None
    return statements


def _split(tokens: list[Token], separator: str, top_level: bool = False) -> list[list[Token]]:
    """`tokens` cut at each `separator` (with `top_level`, only those outside parentheses)."""
    pieces: list[list[Token]] = [[]]
    depth = 0
    for token in tokens:
        if token.kind == TokenKind.PUNCT:
            depth += {"(": 1, ")": -1}.get(token.text, 0)
            if token.text == separator and (depth == 0 or not top_level):
                pieces.append([])
                continue
        pieces[-1].append(token)
    return pieces


def _text(body: str, tokens: list[Token]) -> str:
    return body[tokens[0].start:tokens[-1].end] if tokens else ""


def _body_statement_kind(body: str, tokens: list[Token], declared: set[str]) -> Classified:
    """One body statement's kind; a DECLARE adds its variables to `declared`."""
    verb, rest = tokens[0].text.upper(), tokens[1:]
    if verb == "RETURN":
        return classify(f"SELECT {_text(body, rest)}", strict=False)
    if verb == "DECLARE":
        return _declare_kind(body, rest, declared)
    if verb == "SET":
        return _set_kind(body, rest, declared)
    return classify(_text(body, tokens), strict=False)


def _declare_kind(body: str, tokens: list[Token], declared: set[str]) -> Classified:
    """DECLARE a[, b] TYPE [DEFAULT expression]: a handler, cursor or condition is refused."""
    names: list[str] = []
    n = 0
    while n < len(tokens) and tokens[n].kind in NAMING:
        names.append(tokens[n].text)
        if n + 1 < len(tokens) and tokens[n + 1].text == ",":
            n += 2
            continue
        n += 1
        break
    following = tokens[n].text.upper() if n < len(tokens) else ""
    if not names or names[0].upper() in ("CONTINUE", "EXIT", "UNDO") or \
            following in ("CURSOR", "CONDITION"):
        return Classified(Kind.UNKNOWN, "declares a handler, cursor or condition, which perflab "
                                        "does not follow")
    declared.update(name.lower() for name in names)
    default = next((k for k in range(n, len(tokens)) if tokens[k].kind == TokenKind.WORD and
                    tokens[k].text.upper() == "DEFAULT"), None)
    if default is None:
        return Classified(Kind.READ)
    return classify(f"SELECT {_text(body, tokens[default + 1:])}", strict=False)


def _set_kind(body: str, tokens: list[Token], declared: set[str]) -> Classified:
    """SET a = x[, b = y ...]: every target must be a variable the function declared (a
    global, a session or user variable, NAMES, PASSWORD, TRANSACTION... is refused)."""
    kinds = []
    for assignment in _split(tokens, ",", top_level=True):
        operator = [(t.kind, t.text) for t in assignment[1:3]]
        width = 2 if operator == WALRUS else 1
        if not assignment or assignment[0].kind not in NAMING or \
                assignment[0].text.lower() not in declared or len(assignment) <= width or \
                operator[:width] not in ([EQUALS], WALRUS):
            return Classified(Kind.UNKNOWN, f"sets {_text(body, assignment[:3]) or 'nothing'}"
                                            ", which is not a variable the function declared")
        kinds.append(classify(f"SELECT {_text(body, assignment[1 + width:])}", strict=False))
    return max(kinds, key=lambda k: SEVERITY[k.kind])
