"""A titled table that renders as aligned text, Markdown, CSV or HTML.

Light on purpose (standard library only): health and digest print tables without loading the
statistics and chart stack.
"""

from __future__ import annotations

import csv
import html
import io
from dataclasses import dataclass


@dataclass
class Table:
    title: str
    header: list[str]
    rows: list[list[str]]
    note: str = ""

    def render(self) -> str:
        widths = [
            max(len(row[i]) for row in [self.header, *self.rows]) for i in range(len(self.header))
        ]
        widths[1:] = [max(w, 6) for w in widths[1:]]
        lines = [self.title]
        for row in [self.header, *self.rows]:
            first = row[0].ljust(widths[0])
            rest = [cell.rjust(widths[i + 1]) for i, cell in enumerate(row[1:])]
            lines.append("  ".join([first, *rest]).rstrip())
        if self.note:
            lines.append(self.note)
        return "\n".join(lines)

    def markdown(self) -> str:
        lines = [f"**{self.title}**", "", "| " + " | ".join(self.header) + " |",
                 "|" + "|".join("---" for _ in self.header) + "|"]
        lines += ["| " + " | ".join(row) + " |" for row in self.rows]
        if self.note:
            lines += ["", f"_{self.note}_"]
        return "\n".join(lines)

    def csv(self) -> str:
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow([f"# {self.title}"])
        writer.writerow(self.header)
        writer.writerows(self.rows)
        return out.getvalue()

    def html(self) -> str:
        head = "".join(f"<th>{html.escape(h)}</th>" for h in self.header)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>"
            for row in self.rows
        )
        note = f"<p class='note'>{html.escape(self.note)}</p>" if self.note else ""
        return (f"<h3>{html.escape(self.title)}</h3><table><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>{note}")
