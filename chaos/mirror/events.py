"""MirrorMaker 2's starts and rebalances, read from its log (roles/kafka_mirror logs each line
with an ISO 8601 time and offset). A start is MM2's `MirrorMaker initializing` (the process began:
a restart after the first); a rebalance is Connect's `Rebalance started`, once per herder (one
per flow the node drives) each time its group rebalances."""

from __future__ import annotations

import re
from datetime import datetime

NEEDLES = {"Kafka MirrorMaker initializing": "start", "Rebalance started": "rebalance"}
STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}(?:Z|[+-]\d\d:\d\d))\]")


def parse(lines: list[str], since_ms: int = 0) -> list[tuple[str, int]]:
    """(event, at_ms) for each line holding a needle, at or after `since_ms`. Lines without a
    time in the role's format (an older pattern, a stack trace) are skipped, not guessed."""
    out = []
    for line in lines:
        m = STAMP.match(line)
        kind = next((k for needle, k in NEEDLES.items() if needle in line), None)
        if not m or kind is None:
            continue
        at = int(datetime.fromisoformat(m.group(1).replace("Z", "+00:00")).timestamp() * 1000)
        if at >= since_ms:
            out.append((kind, at))
    return out
