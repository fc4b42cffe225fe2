"""Figures rendered off-screen (matplotlib's Agg backend) to PNG bytes and SVG text.

Importing this module loads matplotlib, so only the commands that draw import it.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

SIZE = (7.5, 4.2)


def new_figure(title: str, xlabel: str, ylabel: str, log2_x: bool = False
               ) -> tuple[Figure, Axes]:
    fig, ax = plt.subplots(figsize=SIZE)
    ax.set_title(title)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, alpha=0.3)
    if log2_x:
        ax.set_xscale("log", base=2)
    return fig, ax


def render(fig: Figure) -> tuple[bytes, str]:
    """PNG bytes and SVG text of a figure, which is closed afterwards."""
    png, svg = io.BytesIO(), io.StringIO()
    fig.savefig(png, format="png", dpi=110, bbox_inches="tight")
    fig.savefig(svg, format="svg", bbox_inches="tight")
    plt.close(fig)
    return png.getvalue(), svg.getvalue()


def png_data_uri(fig: Figure) -> str:
    """The figure as an inline PNG for a self-contained HTML page."""
    png, _ = render(fig)
    return "data:image/png;base64," + base64.b64encode(png).decode()
