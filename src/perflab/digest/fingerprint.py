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
    # A rule whose pattern needs a text the statement lacks is skipped (a cheap `in` test
    # instead of a regex scan): the result is the same, and most statements skip most rules.
    if query[:6].upper() == "INSERT" or query[:7].upper() == "REPLACE":
        multi = MULTI_INSERT.match(query)
        if multi:
            query = multi.group(1)
    if "/*" in query:
        query = MULTI_LINE_COMMENT.sub("", query)
    if "--" in query or "#" in query:
        query = ONE_LINE_COMMENT.sub("", query)
    if USE.match(query):
        return "use ?"
    if "\\" in query:
        query = ESCAPED_QUOTE.sub("", query)
    if '"' in query:
        query = DOUBLE_QUOTED.sub("?", query)
    if "'" in query:
        query = SINGLE_QUOTED.sub("?", query)
    query = BOOLEAN.sub("?", query)
    query = NUMBER.sub("?", query)
    query = NUMBER_TAIL.sub("?", query)
    query = query.lstrip()
    if query.endswith("\n"):
        query = query[:-1]  # Perl's chomp: one newline only
    query = WHITESPACE.sub(" ", query).lower()
    if "null" in query:
        query = NULL.sub("?", query)
    query = IN_LIST.sub(r"\1(?+)", query)
    if "union" in query:
        query = UNION.sub(r"\1 /*repeat\2*/", query)
    if "limit" in query:
        query = LIMIT.sub("limit ?", query, count=1)
    anchor = ORDER_BY.search(query)
    if anchor:
        query = query[:anchor.end()] + _drop_asc(query[anchor.end():])
    return query


DIGITS_TO_ZERO = bytes.maketrans(b"123456789", b"000000000")
# A quoted string none of whose characters can change how pt's earlier rules see the
# statement: no quote or newline (the string rules), no /* or */ (the comment rule, which knows
# no strings), no parenthesis (the multi-row INSERT cut, CALL), no escaped quote or backslash
# (pt drops \' and \" first). A -- or # inside is harmless: pt's one-line comment must run to
# the end of the line without meeting a quote.
_PLAIN = r"""(?:[^'"\\/*()\r\n]++|\\[^'"\\\r\n]|/(?!\*)|\*(?!/))*+"""  # possessive: no
# backtracking state is kept, so a giant unterminated string costs no memory
PLAIN_SINGLE = re.compile(f"'{_PLAIN}'")
PLAIN_DOUBLE = re.compile(f'"{_PLAIN}"')
QUOTE_LEFT = re.compile(r"""['"\\]""")
DIGIT_RUN = re.compile(r"[0-9]+")
_ITEM = r"""\s*(?:[-+]?0(?:\.0)?|''|"")\s*"""
KEY_IN_LIST = re.compile(rf"(?i)\bin\s*\((?:{_ITEM},)*+{_ITEM}\)")


class Fingerprinter:
    """fingerprint() with a bounded cache keyed by the statement's shape.

    The key is the statement with every run of digits made one 0, every plain quoted string
    emptied (`'abc'` -> `''`) and every IN list of such literals made one: `in (0)`. Sound
    because pt's rules turn every quoted string and every digit run into ? whatever they hold
    and every IN list of ?s into in(?+), and a plain string holds nothing that an earlier rule
    reads (comment marks, parentheses, quotes, backslashes); a statement with any other quoted
    string keys on its text with each digit made 0, as before. Results that keep digits
    (`call p1(...)` -> `call p1`) are not cached, and the statements of pt's special rules
    (mysqldump's /*!40001 */, the toolkit's own) are recognised before the cache is read.
    """

    def __init__(self, size: int = 100_000):
        self.size = size
        self.cache: dict[str | bytes, str] = {}
        self.calls = 0
        self.hits = 0  # calls answered from the cache (bench/digest prints the share)

    def __call__(self, query: str) -> str:
        self.calls += 1
        if query.startswith("SELECT /*!40001") or "/*" in query and TOOLKIT.search(query):
            return fingerprint(query)
        key = self.key(query)
        found = self.cache.get(key)
        if found is not None:
            self.hits += 1
            return found
        result = fingerprint(query)
        if not ANY_DIGIT.search(result) and result not in SPECIAL:
            if len(self.cache) >= self.size:
                self.cache.clear()
            self.cache[key] = result
        return result

    @staticmethod
    def key(query: str) -> str | bytes:
        emptied = PLAIN_DOUBLE.sub('""', PLAIN_SINGLE.sub("''", query))
        if QUOTE_LEFT.search(emptied.replace("''", "").replace('""', "")):
            return query.encode("utf-8", "surrogatepass").translate(DIGITS_TO_ZERO)
        return KEY_IN_LIST.sub("in (0)", DIGIT_RUN.sub("0", emptied))


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
