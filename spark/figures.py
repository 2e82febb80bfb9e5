"""What every page of the report draws with: its style, a figure as an embedded PNG, the fault
band on a timeline, an HTML table. Shared by report.py, mirror_report.py and history.py."""

from __future__ import annotations

import base64
import html
import io

# A wide table scrolls inside its own box (.scroll), never the page: the by-partition table has
# 17 columns.
# Text left, numbers right (td.num); the page as wide as a laptop shows, so tables are not cut.
STYLE = (
    "body{font-family:system-ui,sans-serif;max-width:1320px;margin:2em auto;padding:0 1em;color:#222}"
    "table{border-collapse:collapse;margin:.5em 0 1.5em}td,th{border:1px solid #ccc;padding:2px 8px;"
    "text-align:left}td.num{text-align:right;white-space:nowrap}th{background:#f3f3f3}"
    "table.wide{font-size:.85em}table.wide td,table.wide th{padding:2px 5px}"
    "img{max-width:100%}.scroll{max-width:100%;overflow-x:auto}"
)
WIDE = 8  # a table of more columns than this is set smaller, so that its columns fit the page
SHORT = 24  # a word this long or shorter keeps its hyphens unbroken ("kill-dc", not "kill-/dc")
NOT_MEASURED = "–"  # a cell the record has no value for (never the word None)


def png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def shade(ax, summary: dict, t0: float) -> None:
    """Each fault as a band from its start to its heal, and a dashed line where every partition
    acknowledged again (its recovery point), on a timeline in seconds since t0 (ms)."""
    for f in summary.get("faults", []):
        end = f.get("end_ms") or (t0 + 1000 * (ax.get_xlim()[1]))
        ax.axvspan(
            (f["start_ms"] - t0) / 1000,
            (end - t0) / 1000,
            color="tab:red",
            alpha=0.15,
            label=f"{f['fault']} {f['target']} (to the heal)",
        )
        if f.get("recovery_ms") is not None:
            ax.axvline(
                (f["start_ms"] + f["recovery_ms"] - t0) / 1000,
                color="tab:green",
                linestyle="--",
                linewidth=1,
                label="every partition acking again",
            )


def html_table(rows: list[dict], cols: list[str]) -> str:
    """A table of `cols`; a column no row has a value for is left out, and a missing value is
    NOT_MEASURED."""
    cols = [c for c in cols if any(r.get(c) is not None for r in rows)] if rows else cols
    # A key like indeterminate_present may break after its underscores, so that the record's own
    # names head the columns and a table of them still fits the page without scrolling.
    head = "".join(f"<th>{html.escape(c).replace('_', '_<wbr>')}</th>" for c in cols)
    body = "".join("<tr>" + "".join(_cell(r.get(c)) for c in cols) + "</tr>" for r in rows)
    wide = " class='wide'" if len(cols) > WIDE else ""
    return f"<div class='scroll'><table{wide}><tr>{head}</tr>{body}</table></div>"


def _cell(value) -> str:
    if value is None:
        return f"<td class='num'>{NOT_MEASURED}</td>"
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if number:
        return f"<td class='num'>{value}</td>"
    # A short word keeps its hyphens unbroken, alone or in a phrase ("during kill-dc dc-a")
    words = html.escape(str(value)).split(" ")
    return "<td>" + " ".join(w.replace("-", "&#8209;") if len(w) <= SHORT else w for w in words) + "</td>"
