"""The one reading of an integer variable's value (server/variables.parse_integer), as the
server's option parser takes it: the plan's checks and tune's inert rule read a size alike."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perflab.errors import PerflabError
from perflab.server.variables import SIZE_SUFFIXES, VariableSpec, check_value, parse_integer
from perflab.tune.inert import inert_knobs

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

BIGINT = VariableSpec("key_buffer_size", "BIGINT UNSIGNED", "GLOBAL", "0", str((1 << 64) - 1),
                      "1", (), False, "REQUIRED", None, None)
LOW, HIGH = -(1 << 63), (1 << 64) - 1  # what 64 bits hold, signed or not


@pytest.mark.parametrize(("text", "expected"), [
    ("64M", 64 << 20), ("64m", 64 << 20), ("2G", 2 << 30), ("1k", 1024), ("3T", 3 << 40),
    ("1P", 1 << 50), ("2e", 2 << 60), ("+7", 7), ("-1", -1), ("007", 7), (" 8M ", 8 << 20),
    (1024, 1024), ("0", 0),
    ("16MB", None), ("1.5M", None), ("1e9", None), ("16 M", None), ("M", None), ("", None),
    ("0x10", None), ("16X", None), ("٣", None), (2.0, None), (True, None), (None, None),
    ("16E", None), (1 << 64, None),
])
def test_an_integer_is_read_as_the_server_reads_it_and_anything_else_is_refused(text, expected):
    """The server takes an integer with at most one suffix of K, M, G, T, P, E; of "16MB" and
    "1e9" it reads the first letter only (16M, 1 EiB), which is no reading to copy."""
    assert parse_integer(text) == expected


@given(st.integers(LOW, HIGH), st.sampled_from(["", *SIZE_SUFFIXES]), st.booleans())
def test_an_integer_with_one_suffix_is_its_power_of_1024_within_64_bits(number, suffix, lower):
    value = number * SIZE_SUFFIXES.get(suffix, 1)
    text = f"{number}{suffix.lower() if lower else suffix}"
    assert parse_integer(text) == (value if LOW <= value <= HIGH else None)


@given(st.text(st.sampled_from("0123456789+-.kKmMgGbBeExX \t"), max_size=8))
def test_any_text_read_is_one_integer_and_one_suffix_and_the_check_agrees(text):
    """Whatever the text: what is read is a signed integer followed by at most one suffix letter,
    in either case alike; and the plan's check takes exactly the texts read, in range."""
    read = parse_integer(text)
    assert read == parse_integer(text.swapcase())
    body = text.strip()
    if read is not None:
        last = body[-1].upper()
        digits = body[:-1] if last in SIZE_SUFFIXES else body
        assert re.fullmatch(r"[+-]?[0-9]+", digits)
        assert read == int(digits) * SIZE_SUFFIXES.get(last, 1)
    if read is None or not 0 <= read <= HIGH:
        with pytest.raises(PerflabError):
            check_value(BIGINT, text, "configs.x")
    else:
        assert check_value(BIGINT, text, "configs.x") == str(read)


def test_the_inert_rule_reads_a_size_as_the_plans_check_does():
    """tune's inert rule and the plan's check read one parser: a key buffer of "0K" is off, and
    a value the check refuses ("0MB") is no size to the rule either, so it switches nothing."""
    defaults = {"key_buffer_size": "134217728", "key_cache_segments": "0"}
    winner = {"key_buffer_size": "0K", "key_cache_segments": "8"}
    assert set(inert_knobs(winner, defaults)) == {"key_cache_segments"}
    assert inert_knobs({**winner, "key_buffer_size": "0MB"}, defaults) == {}
    with pytest.raises(PerflabError, match="is not an integer"):
        check_value(BIGINT, "0MB", "configs.x")
