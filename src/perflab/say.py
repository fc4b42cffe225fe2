"""`Say`: how perflab's core reports progress, one line at a time, to whoever called it (the
command line prints the lines with a timestamp; the API says nothing unless given one)."""

from collections.abc import Callable

Say = Callable[[str], None]


def silent(_message: str) -> None:
    """A Say that says nothing (the API's default, `perflab run --quiet`)."""
    return None
