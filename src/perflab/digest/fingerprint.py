"""Query fingerprints by pt-query-digest's rules (Percona Toolkit 3.2.1, QueryRewriter), so that
perflab's groups are pt-query-digest's groups on the same log.

The rules, in pt-query-digest's order: multi-row INSERT/REPLACE cut to the first row; comments
stripped (not /*! version */ ones); `use db` to `use ?`; quoted strings to ?; true/false to ?;
every number (and, as pt does, digits inside names: t1 -> t?) to ?; whitespace collapsed;
lower case; NULL to ?; IN (...) and VALUES (...) lists to (?+); repeated UNIONs collapsed;
LIMIT ? [, ?| OFFSET ?] to LIMIT ?; ASC dropped after ORDER BY. The query ID is pt-query-digest's
too: the last 16 hex digits of the fingerprint's MD5.
"""

from __future__ import annotations

import hashlib
import re

MYSQLDUMP = re.compile(r"\ASELECT /\*!40001 SQL_NO_CACHE \*/ \* FROM `")
TOOLKIT = re.compile(r"/\*\w+\.\w+:[0-9]/[0-9]\*/")
CALL = re.compile(r"\A\s*(call\s+\S+)\(", re.I)
MULTI_INSERT = re.compile(r"\A((?:INSERT|REPLACE)(?: IGNORE)?\s+INTO.+?VALUES\s*\(.*?\))\s*,\s*\(",
                          re.I | re.S)
MULTI_LINE_COMMENT = re.compile(r"/\*[^!].*?\*/", re.S | re.M)
ONE_LINE_COMMENT = re.compile(r"(?:--|#)[^'\"\r\n]*(?=[\r\n]|\Z)")
USE = re.compile(r"\Ause \S+\Z", re.I)
ESCAPED_QUOTE = re.compile(r"\\[\"']")
DOUBLE_QUOTED = re.compile(r'".*?"', re.S)
SINGLE_QUOTED = re.compile(r"'.*?'", re.S)
BOOLEAN = re.compile(r"\bfalse\b|\btrue\b", re.I)
NUMBER = re.compile(r"[0-9+-][0-9a-f.xb+-]*")
NUMBER_TAIL = re.compile(r"[xb.+-]\?")
WHITESPACE = re.compile(r"[ \n\t\r\f]+")
NULL = re.compile(r"\bnull\b")
IN_LIST = re.compile(r"\b(in|values?)(?:[\s,]*\([\s?,]*\))+")
UNION = re.compile(r"\b(select\s.*?)(?:(\sunion(?:\sall)?)\s\1)+")
LIMIT = re.compile(r"\blimit \?(?:, ?\?| offset \?)?")
ORDER_BY = re.compile(r"\border by ", re.I)
ASC = re.compile(r"\s+asc", re.I)


def fingerprint(query: str) -> str:
    if MYSQLDUMP.match(query):
        return "mysqldump"
    if TOOLKIT.search(query):
        return "percona-toolkit"
    if query.startswith("administrator command: "):
        return query
    call = CALL.match(query)
    if call:
        return call.group(1).lower()
    multi = MULTI_INSERT.match(query)
    if multi:
        query = multi.group(1)
    query = MULTI_LINE_COMMENT.sub("", query)
    query = ONE_LINE_COMMENT.sub("", query)
    if USE.match(query):
        return "use ?"
    query = ESCAPED_QUOTE.sub("", query)
    query = DOUBLE_QUOTED.sub("?", query)
    query = SINGLE_QUOTED.sub("?", query)
    query = BOOLEAN.sub("?", query)
    query = NUMBER.sub("?", query)
    query = NUMBER_TAIL.sub("?", query)
    query = query.lstrip()
    if query.endswith("\n"):
        query = query[:-1]  # Perl's chomp: one newline only
    query = WHITESPACE.sub(" ", query).lower()
    query = NULL.sub("?", query)
    query = IN_LIST.sub(r"\1(?+)", query)
    query = UNION.sub(r"\1 /*repeat\2*/", query)
    query = LIMIT.sub("limit ?", query, count=1)
    anchor = ORDER_BY.search(query)
    if anchor:
        query = query[:anchor.end()] + _drop_asc(query[anchor.end():])
    return query


DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")


class Fingerprinter:
    """fingerprint() with a bounded cache keyed by the statement with every digit made 0.

    Sound because the key keeps every character's class and the text's length: pt's rules see
    the same structure in two statements that differ only in digits, and its number rule turns
    every digit into ?, so both get the same fingerprint. The exceptions are rules that return
    digits (`call p1(...)` -> `call p1`) or match literal digits (mysqldump's /*!40001 */):
    those results are not cached.
    """

    def __init__(self, size: int = 50_000):
        self.size = size
        self.cache: dict[bytes, str] = {}

    def __call__(self, query: str) -> str:
        key = query.encode("utf-8", "surrogatepass").translate(DIGITS_TO_ZERO)
        found = self.cache.get(key)
        if found is not None:
            return found
        result = fingerprint(query)
        if not ANY_DIGIT.search(result) and result not in SPECIAL:
            if len(self.cache) >= self.size:
                self.cache.clear()
            self.cache[key] = result
        return result


SPECIAL = ("mysqldump", "percona-toolkit")
ANY_DIGIT = re.compile(r"\d")


def _drop_asc(tail: str) -> str:
    """pt's `1 while s/\\G(.+?)\\s+ASC/$1/gi`: each ASC needs one character before it."""
    out = []
    position = 0
    while True:
        found = ASC.search(tail, position + 1)
        if found is None or found.start() <= position:
            break
        out.append(tail[position:found.start()])
        position = found.end()
    out.append(tail[position:])
    return "".join(out)


def query_id(fingerprint_text: str) -> str:
    """pt-query-digest's query ID: 0x + the last 16 hex digits of MD5, upper case."""
    return "0x" + hashlib.md5(fingerprint_text.encode()).hexdigest()[-16:].upper()
