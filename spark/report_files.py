"""The report's files beside the ledgers (summary.json, index.html, junit.xml), written through
the record for local folders and Hadoop URIs alike, and the one-screen summary a command prints."""

from __future__ import annotations

import json

from dcdrill.record.reader import RecordReader
from dcdrill.spark import junit, mirror_report, report


def write(record: RecordReader, summary: dict, imgs: dict[str, str] | None = None) -> None:
    """The report next to the ledgers, remote records included (`imgs`: its plots, if drawn)."""
    files = {
        "summary.json": json.dumps(summary, indent=2, sort_keys=True, default=str) + "\n",
        "index.html": report.render_html(
            summary,
            imgs,
            present={name for name in report.RECORD_LINKS if record.files.size(record.uri(name)) is not None},
        ),
        "junit.xml": junit.verdict_xml(
            summary, summary["topology"].get("stack"), summary.get("experiment"), summary["verify_seconds"]
        ),
    }
    for name, text in files.items():
        record.write_report_file(name, text)


def _beside(summary: dict) -> str:
    note = report.machine_note(summary.get("baseline"))
    return f" ({note})" if note else ""


def one_screen(summary: dict) -> str:
    c = summary["counts"]
    lines = [
        f"verdict: {summary['verdict'].upper()}  ({summary['topology'].get('profile')}, "
        f"verified in {summary['verify_seconds']}s)",
        f"  produced {c['produced']}: acked {c['acked']}, failed {c['failed']}, indeterminate {c['indeterminate']}",
        f"  acked lost {c['acked_lost']}, acked unseen {c['acked_unseen']}, failed present {c['failed_present']}, "
        f"indeterminate present {c['indeterminate_present']}",
        f"  duplicates in log {c['duplicates_in_log']}, delivered {c['duplicates_delivered']}, "
        f"phantoms {c['phantoms']}, "
        f"reordered {c['reordered']}, divergent offsets {c['divergent_offsets']}, "
        f"offset mismatches {c['ack_offset_mismatch']}",
        f"  max ack gap {c['max_ack_gap_ms']} ms, torn lines {c['torn_lines']}",
    ]
    if tx := summary.get("transactions"):
        outcomes = ", ".join(f"{o} {n}" for o, n in tx["outcomes"].items())
        lines.append(
            f"  transactions {tx['transactions']}: {outcomes}; "
            + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in tx["counts"].items())
        )
    for f in summary["faults"]:
        lines.append(
            f"  fault {f['fault']} {f['target']}: {((f.get('end_ms') or 0) - f['start_ms']) / 1000:.1f}s, "
            + (
                f"recovery {f['recovery_ms']} ms{_beside(summary)}, "
                if f["recovery_ms"] is not None
                else "no recovery measured, "
            )
            + ("writes continued" if f["writes_continued"] else "not every partition back before the heal")
        )
        if f.get("coordination"):
            lines.append(f"    coordination: {report.coordination_text(f)}")
    for p in summary["prediction_checks"]:
        lines.append(f"  losing {p['target']}: {report.prediction_text(p, summary.get('baseline'))}")
    lines += mirror_report.text(summary)
    for v in summary["violations"]:
        lines.append(f"  VIOLATION [{v['rule']}] {v['message']}")
    return "\n".join(lines)
