"""Figures as words in perflab's output."""

from __future__ import annotations


def duration(seconds: float) -> str:
    """Seconds as 45s, 3m05s or 1h02m."""
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"
