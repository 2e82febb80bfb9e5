"""report/index.html of a drill that stopped before its verdict (exit 2, 3 or 4): why it stopped,
the causes a failed wait read from the cluster (convergence.json), and links to the hosts'
logs the record kept (logs/<host>/), so the reader starts from the cause, not a timeout."""

from __future__ import annotations

import html
from pathlib import Path

from dcdrill.record.contents import CHAOS_LOG, CONVERGENCE, JOURNAL
from dcdrill.record.reader import RecordReader
from dcdrill.spark.figures import STYLE

WORKLOAD = "the workload's processes (and their host sessions: *.access.log)"
MAX_LINKS = 200  # a record's logs/ holds a few files per host; more is not a page to read


def _logs(record: RecordReader) -> list[str]:
    """The record's log files, relative to it: logs/<host>/<file> (the clients' and the services')."""
    root = record.path / "logs"
    if not root.is_dir():
        return []
    found = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    return [str(p.relative_to(record.path)) for p in found[:MAX_LINKS]]


def _link(name: str) -> str:
    return f'<a href="../{html.escape(name, quote=True)}">{html.escape(name)}</a>'


def render(record: RecordReader, stack: str | None, experiment: str | None, exit_code: int, message: str) -> str:
    kept = record.read_json(CONVERGENCE)
    causes = [c for c in kept.get("causes", []) if isinstance(c, str)] if isinstance(kept, dict) else []
    why = (
        "<h2>Why the cluster did not converge</h2><ul>"
        + "".join(f"<li>{html.escape(c)}</li>" for c in causes)
        + f"</ul><p>Read from the cluster's state and the hosts' logs: {_link(CONVERGENCE)}.</p>"
        if causes
        else ""
    )
    logs = _logs(record)
    by_host: dict[str, list[str]] = {}
    for name in logs:
        by_host.setdefault(Path(name).parts[1] if len(Path(name).parts) > 2 else "", []).append(name)
    listed = "".join(
        f"<li>{html.escape(host or WORKLOAD)}: {', '.join(_link(n) for n in names)}</li>"
        for host, names in sorted(by_host.items())
    )
    present = [n for n in (JOURNAL, CHAOS_LOG) if record.file(n).exists()]
    title = html.escape(record.path.name)
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>dcdrill report {title}</title>
<style>{STYLE}.verdict{{font-size:1.6em;color:#9a6700;font-weight:bold}}</style></head><body>
<h1>dcdrill drill report</h1>
<p class="verdict">No verdict (exit {exit_code})</p>
<p>Run <code>{html.escape(str(record.path))}</code>: stack <b>{html.escape(stack or "not recorded")}</b>,
experiment <b>{html.escape(experiment or "not recorded")}</b>. The drill stopped before its verdict:
a record it cannot vouch for is not verified.</p>
<pre>{html.escape(message)}</pre>
{why}
<h2>The record</h2>
<p>{", ".join(_link(n) for n in present) or "no journal"}; <a href="junit.xml">junit.xml</a>.</p>
<h2>The hosts' logs</h2>{f"<ul>{listed}</ul>" if listed else "<p>None came back into the record.</p>"}
</body></html>"""
