"""Fault windows set on the producers' clocks. A window starts when its fault took effect
(faults.jsonl's acted_ms: FIS's start-up on AWS takes 30 s or more after the request), and
faults.jsonl's times are the control's clock, a produced row's send and ack times its producer
host's (RECORD.md, clocks.jsonl): the phases, recovery and `writes_continued` compare the two, so
the verifier moves each window by the producers' offset first. Pure functions of the record's rows."""

from __future__ import annotations

import math
import re
import statistics

# The workload names its producers p1, p2, ... (validation/workload.py): their readings are the
# clocks the produced rows were stamped with.
PRODUCER = re.compile(r"^p[0-9]+$")


def as_acted(faults: list[dict]) -> list[dict]:
    """Each fault's window from when it took effect: start_ms becomes its acted_ms (when the record
    has one), and the request's time stays as requested_ms."""
    return [
        {**f, "requested_ms": f["start_ms"], "start_ms": f["acted_ms"]} if f.get("acted_ms") is not None else f
        for f in faults
    ]


def alignment(clocks: list[dict]) -> dict:
    """{shift_ms, residual_ms, readings}: the median of the producers' offsets (host minus
    control) and how far, at most, a producer's clock may still be from the shifted windows
    (its reading's distance from the median plus half its round trip). No readings (a record
    from before clocks.jsonl, or runners that serve no clock): no shift, residual None."""
    mine = [c for c in clocks if PRODUCER.match(c["name"])]
    if not mine:
        return {"shift_ms": 0, "residual_ms": None, "readings": 0}
    shift = round(statistics.median(c["offset_ms"] for c in mine))
    residual = max(math.ceil(abs(c["offset_ms"] - shift) + c["rtt_ms"] / 2) for c in mine)
    return {"shift_ms": shift, "residual_ms": residual, "readings": len(mine)}


def on_producer_clocks(faults: list[dict], shift_ms: int) -> list[dict]:
    """The faults with start_ms and end_ms (when healed) moved onto the producers' clocks."""
    if not shift_ms:
        return faults
    return [
        {
            **f,
            "start_ms": f["start_ms"] + shift_ms,
            "end_ms": None if f.get("end_ms") is None else f["end_ms"] + shift_ms,
        }
        for f in faults
    ]
