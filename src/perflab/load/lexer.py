"""A statement's text read as the server reads it, in the subset of SQL where that is provable.

perflab's checks are only as good as its reading of a statement: a character the server takes
for code where perflab saw a comment or a space lets the server run what perflab never judged.
So on a server perflab did not start it reads only the lexical forms whose reading does not
depend on the server, its version or its sql_mode, and refuses the rest with the position:

- outside quotes, printable ASCII, tab and line breaks only: no Unicode space or letter (which
  a server's collations may fold onto another name), nothing a multi-byte connection
  character set could read as a quote;
- no comments: `#`, `-- ` and `/* */` differ between servers and versions (`--x` is code in
  MariaDB, `/*!50700 ... */` and `/*M! ... */` are code to the servers they name);
- no double quote (a string, or a name under sql_mode ANSI_QUOTES), no backslash (an escape,
  or a character under NO_BACKSLASH_ESCAPES), no `{` `}` (ODBC escapes), no `$` (part of a
  name to the server), no `;` but one at the very end;
- strings in single quotes (`''` for a quote), names in backquotes (`` `` `` for one), `?`
  a parameter marker: the server binds a value there, it never becomes text.

The statements a user writes must also be ASCII inside their quotes (`strict`): a value outside
ASCII travels as a bound parameter. Text the server itself stores (a view's definition, a
function's body) was lexed by the server when it was made, and may hold any character inside
its quotes and backquotes.

Each word and quoted name is a candidate name (`names`) and each one followed by `(` a
candidate call (`calls`), however the parse would read it: load/reach.py looks every candidate
up, so that no name the server may resolve is left out by a reading of perflab's own.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

WORD_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")
PUNCTUATION = frozenset("(),.=<>!+-*/%&|^~@:")
LINE_SPACE = frozenset(" \t\n\r")
# why each character outside quotes is refused
REFUSED = {
    "#": "starts a comment",
    '"': "quotes a string, or a name under sql_mode ANSI_QUOTES",
    "\\": "is an escape character in some servers' sql_mode and not in others'",
    "{": "starts an ODBC escape", "}": "ends an ODBC escape",
    "$": "is part of a name to the server",
    ";": "ends a statement (one statement per entry)",
}


class LexicalRefusal(ValueError):
    """Text outside the subset perflab reads as the server does: the reason and the position
    (0-based character offset)."""

    def __init__(self, reason: str, position: int, text: str):
        line = text.count("\n", 0, position) + 1
        column = position - (text.rfind("\n", 0, position) + 1) + 1
        super().__init__(f"{reason} at line {line}, column {column}")
        self.reason, self.position = reason, position


class TokenKind(StrEnum):
    WORD = "word"  # letters, digits, _
    NAME = "name"  # backquoted, its text unquoted
    STRING = "string"  # its text with the quotes
    PARAM = "param"  # ?
    PUNCT = "punct"  # one character


NAMING = (TokenKind.WORD, TokenKind.NAME)  # the tokens that may name something


@dataclass(frozen=True)
class Token:
    """One token of a statement, of one kind."""

    kind: TokenKind
    text: str
    start: int
    end: int  # just past its last character


@dataclass(frozen=True)
class Lexed:
    """A statement's tokens and what they may name."""

    tokens: tuple[Token, ...]

    def _qualified(self, n: int) -> tuple[str, str]:
        """(schema or "", name) of the name token at `n`: `a.b` is schema a, name b."""
        tokens = self.tokens
        if n >= 2 and tokens[n - 1].text == "." and tokens[n - 1].kind == TokenKind.PUNCT and \
                tokens[n - 2].kind in NAMING:
            return tokens[n - 2].text, tokens[n].text
        return "", tokens[n].text

    @property
    def names(self) -> tuple[tuple[str, str], ...]:
        """Every word and quoted name, with the name before a `.` as its schema: each may name
        a table or a view (digits alone are a number to the server, never a name)."""
        return tuple(sorted({self._qualified(n) for n, t in enumerate(self.tokens)
                             if t.kind == TokenKind.NAME or
                             t.kind == TokenKind.WORD and not t.text.isdigit()}))

    @property
    def calls(self) -> tuple[tuple[str, str], ...]:
        """Every word or quoted name followed by `(` (spaces between allowed), with its schema:
        each may call a function."""
        tokens = self.tokens
        return tuple(sorted({self._qualified(n) for n, t in enumerate(tokens[:-1])
                             if t.kind in NAMING and tokens[n + 1].text == "(" and
                             tokens[n + 1].kind == TokenKind.PUNCT}))


def lex(text: str, strict: bool = True, several: bool = False) -> Lexed:
    """`text` as tokens, or a LexicalRefusal naming the first character perflab cannot read as
    the server would. A final `;` (and spaces around it) is allowed and dropped. `strict`: the
    whole text ASCII, quotes included (a statement a user wrote, not one the server stored);
    `several`: statements separated by `;` tokens (a stored function's body)."""
    end = len(text.rstrip())
    if text[:end].endswith(";"):
        end = len(text[:end - 1].rstrip())
    tokens: list[Token] = []
    at = 0
    while at < end:
        char = text[at]
        if char in LINE_SPACE:
            at += 1
        elif char in WORD_CHARACTERS:
            stop = at
            while stop < end and text[stop] in WORD_CHARACTERS:
                stop += 1
            tokens.append(Token(TokenKind.WORD, text[at:stop], at, stop))
            at = stop
        elif char in "'`":
            stop = _closing(text, at, end, strict)
            body = text[at + 1:stop - 1]
            if char == "`":
                tokens.append(Token(TokenKind.NAME, body.replace("``", "`"), at, stop))
            else:
                tokens.append(Token(TokenKind.STRING, text[at:stop], at, stop))
            at = stop
        elif char == "-" and text.startswith("--", at):
            raise LexicalRefusal("'--' starts a comment on some servers and is code on others "
                                 "(write '- -' for minus minus)", at, text)
        elif char == "/" and text.startswith("/*", at):
            raise LexicalRefusal("'/*' starts a comment, which some servers run as code", at,
                                 text)
        elif char == "?":
            tokens.append(Token(TokenKind.PARAM, "?", at, at + 1))
            at += 1
        elif char in PUNCTUATION or char == ";" and several:
            tokens.append(Token(TokenKind.PUNCT, char, at, at + 1))
            at += 1
        elif char in REFUSED:
            raise LexicalRefusal(f"{char!r} {REFUSED[char]}", at, text)
        else:
            raise LexicalRefusal(f"the character U+{ord(char):04X} stands outside quotes, "
                                 "where perflab reads only printable ASCII", at, text)
    return Lexed(tuple(tokens))


def _closing(text: str, at: int, end: int, strict: bool) -> int:
    """The offset just past the quote that closes the one at `at` (a doubled quote is one
    character of the string or name)."""
    quote = text[at]
    n = at + 1
    while n < end:
        char = text[n]
        if char == quote:
            if n + 1 < end and text[n + 1] == quote:
                n += 2
                continue
            return n + 1
        if char == "\\" and quote == "'":
            raise LexicalRefusal("a backslash in a string is an escape under some sql_modes "
                                 "and a character under others (write a quote doubled: '')",
                                 n, text)
        if ord(char) < 32 and char not in "\t\n\r" or 0x7f <= ord(char) <= 0x9f:
            raise LexicalRefusal(f"the control character U+{ord(char):04X} stands in quotes",
                                 n, text)
        if strict and ord(char) > 0x7e:
            raise LexicalRefusal(f"the character U+{ord(char):04X} stands in quotes, where "
                                 "perflab sends only ASCII (a value outside ASCII is a pick: "
                                 "it travels as a bound parameter)", n, text)
        n += 1
    raise LexicalRefusal(f"the quote {quote} is never closed", at, text)
