"""A digest as a terminal report, JSON or a self-contained HTML page."""

from __future__ import annotations

import html
import json

from perflab.digest.digest import Digest
from perflab.digest.findings import RUNS_OF, FindingKind
from perflab.output.page import page
from perflab.output.table import Table

FINDING_TITLES = {
    FindingKind.REPEATS: "Identical reads repeated back to back on one connection",
    FindingKind.SCHEMA_REDUNDANT: "Init DB / USE to the schema the connection is already on",
    FindingKind.SCHEMA_UNUSED: "Init DB / USE followed by no statement before the next switch",
    FindingKind.SCHEMA_BACK_AND_FORTH: "Switches back to the schema the connection last "
    "worked in",
    FindingKind.CONSTANT_ONLY: "Constant-only SELECTs (no table: the client can compute them)",
    FindingKind.N_PLUS_ONE: "N+1: one read fingerprint run in bursts by one connection",
}


def profile_table(digest: Digest, top: int) -> Table:
    data = digest.to_json(top)
    timed = any(row["total_time"] is not None for row in data["profile"])
    total_time = sum(c.total_time for c in digest.classes) or 1.0
    header = ["Rank", "Query ID", "Calls", "Calls %"]
    if timed:
        header += ["Time s", "Time %", "Mean ms", "p95 ms", "Rows sent", "Rows exam."]
    header.append("Fingerprint")
    rows = []
    for row in data["profile"]:
        cells = [str(row["rank"]), row["query_id"], f"{row['calls']:,}",
                 f"{100 * row['share']:.1f}"]
        if timed:
            cells += _timing(row, total_time)
        cells.append(_short(row["fingerprint"], 70))
        rows.append(cells)
    order = "total query time" if timed else "calls (a general log has no times)"
    return Table(f"Profile: top {len(rows)} of {len(digest.classes)} fingerprints by {order}",
                 header, rows)


def _timing(row: dict, total_time: float) -> list[str]:
    if row["total_time"] is None:
        return ["-"] * 6
    return [f"{row['total_time']:.3f}", f"{100 * row['total_time'] / total_time:.1f}",
            f"{1000 * row['mean_time']:.3f}", f"{1000 * row['p95_time']:.3f}",
            f"{row['rows_sent']:,.0f}", f"{row['rows_examined']:,.0f}"]


def findings_tables(digest: Digest, top: int = 10) -> list[Table]:
    found = digest.findings.to_json()
    out = []
    for kind, title in FINDING_TITLES.items():
        items = found[kind][:top]
        if not items:
            continue
        rows = [[_short(i["key"], 60), f"{i['calls']:,}", f"{i['removable']:,}",
                 f"{i['runs']:,}" if kind in RUNS_OF else "-",
                 f"{i['longest']:,}" if kind in RUNS_OF else "-",
                 ", ".join(str(c) for c in i["connections"]) or "-",
                 ", ".join(str(e["line"]) for e in i["examples"])]
                for i in items]
        out.append(Table(title, ["Statement / schema", "Calls", "Removable", "Runs", "Longest",
                                 "Connections", "Example lines"], rows))
    return out


def summary_lines(digest: Digest) -> list[str]:
    found = digest.findings.to_json()
    lines = []
    for info in digest.files:
        lines.append(f"{info.path}: {info.format} log, {info.lines:,} lines, "
                     f"{info.events:,} events, {info.malformed:,} malformed lines")
        lines += [f"  malformed line {m.line}: {m.text[:100]}" for m in info.malformed_examples]
        if info.long_lines:
            lines.append(f"  {info.long_lines:,} line(s) longer than 1 MiB: their first MiB "
                         "was read, the rest skipped")
        if info.damaged:
            lines.append(f"  warning: {info.damaged}; this report covers what was read")
    rate = digest.events / digest.seconds if digest.seconds else 0
    lines.append(f"{digest.events:,} events in {digest.seconds:.1f} s ({rate:,.0f} events/s), "
                 f"{len(digest.classes):,} fingerprints")
    if found["statements"]:
        lines.append(f"Removable: {found['removable']:,} of {found['statements']:,} statements "
                     f"({100 * found['removable_share']:.1f}%) could be avoided by the "
                     "findings below")
    return lines


def render_text(digest: Digest, top: int = 20) -> str:
    parts = ["perflab digest", *summary_lines(digest), "", profile_table(digest, top).render(),
             ""]
    tables = findings_tables(digest)
    parts += [t.render() + "\n" for t in tables] or ["No findings."]
    return "\n".join(parts)


def render_json(digest: Digest, top: int | None = None) -> str:
    """Indented like json.dumps(indent=2), except that each class is one line: a log's tens of
    thousands of classes stay greppable, and Python's C encoder, which does not indent, writes
    them (indenting the whole document took longer than fingerprinting on 2 cores)."""
    fields = []
    for key, value in digest.to_json(top).items():
        if key == "profile" and value:
            text = "[\n" + ",\n".join("    " + json.dumps(c) for c in value) + "\n  ]"
        else:
            text = json.dumps(value, indent=2).replace("\n", "\n  ")
        fields.append(f"  {json.dumps(key)}: {text}")
    return "{\n" + ",\n".join(fields) + "\n}"


def render_html(digest: Digest, top: int = 50) -> str:
    parts = ["<h1>perflab digest</h1>",
             "<ul>" + "".join(f"<li>{html.escape(line)}</li>"
                              for line in summary_lines(digest)) + "</ul>",
             "<h2>Profile</h2>", profile_table(digest, top).html(), "<h2>Findings</h2>"]
    tables = findings_tables(digest, top)
    parts += [t.html() for t in tables] or ["<p>No findings.</p>"]
    return page("perflab digest", "\n".join(parts))


def _short(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."
