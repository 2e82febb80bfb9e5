"""From the checker's small aggregates to the summary's tables. Pure Python, no Spark.

The checker hands over small tables (see spark/checker.py): counts at the finest grain, with
acknowledgement bitmaps (one 50-bit word per partition and 50 ms), the anomalies at the same
grain, and a latency histogram. Everything here is exact: splits add up from the fine grain, percentiles are
nearest-rank over the histogram, and ack gaps come from the bitmaps, which hold every
distinct acknowledgement millisecond.
"""

from __future__ import annotations

import functools
import math

WORD_MS = 50  # one bitmap word covers 50 ms; 1000 is a multiple, so words never straddle a second
# A gap in a partition's acknowledgements is the fault's outage only when it is longer than both
# of these: a second, and twice the longest gap the partition showed before the fault (its normal
# rhythm). DC-loss outages last many seconds; a fault that stops nothing leaves only ordinary gaps.
# A gap inside one bitmap word (under WORD_MS) is never an outage: AckTimeline.back_after relies on it.
OUTAGE_MIN_MS = 1000
OUTAGE_OVER_NORMAL = 2
ADDITIVE = (
    "produced",
    "acked",
    "failed",
    "indeterminate",
    "acked_lost",
    "acked_unseen",
    "failed_present",
    "indeterminate_present",
    "duplicates_in_log",
    "duplicates_delivered",
)


def roll(fine: list[dict], keys: tuple[str, ...]) -> list[dict]:
    """Sum the fine-grain rows up to `keys` (a row may hold only some counts); the first and last
    lost send time travel along."""
    groups: dict[tuple, dict] = {}
    for r in fine:
        k = tuple([r[c] for c in keys])
        g = groups.get(k)
        if g is None:
            g = groups[k] = {
                **dict(zip(keys, k)),
                **dict.fromkeys(ADDITIVE, 0),
                "lost_first_send_ms": None,
                "lost_last_send_ms": None,
            }
        for c in ADDITIVE:
            v = r.get(c)
            if v:
                g[c] += v
        first, last = r.get("lost_first_send_ms"), r.get("lost_last_send_ms")
        if first is not None:
            g["lost_first_send_ms"] = first if g["lost_first_send_ms"] is None else min(g["lost_first_send_ms"], first)
        if last is not None:
            g["lost_last_send_ms"] = last if g["lost_last_send_ms"] is None else max(g["lost_last_send_ms"], last)
    return list(groups.values())


def percentiles(histogram: dict[int, int], qs=(0.5, 0.99)) -> list[int | None]:
    """Nearest-rank percentiles of {latency_ms: count}."""
    n = sum(histogram.values())
    if not n:
        return [None for _ in qs]
    out, ranks = [], [max(1, math.ceil(q * n)) for q in qs]
    seen, it = 0, iter(sorted(histogram.items()))
    value = None
    for rank in ranks:
        while seen < rank:
            value, count = next(it)
            seen += count
        out.append(value)
    return out


def _bits(mask: int) -> list[int]:
    """Set bit positions of a word, lowest first."""
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


@functools.lru_cache(maxsize=1 << 16)
def _inner_max_gap(mask: int) -> int:
    """Largest distance between consecutive set bits (0 with fewer than two). Cached: a steady
    stream of acks repeats the same few words (10M records: 96k words, one distinct)."""
    runs = bin(mask)[2:].rstrip("0").split("1")[1:-1]
    return max(map(len, runs)) + 1 if runs else 0


class AckTimeline:
    """Every distinct acknowledgement millisecond of one partition, as sorted bitmap words."""

    def __init__(self, words: list[tuple[int, int]]):
        self.words = sorted((w, m) for w, m in words if m)

    def max_gap(self, until: int | None = None) -> int:
        """The longest gap between acknowledgements (at or before `until`, if given)."""
        best, prev_last = 0, None
        for word, mask in self.words:
            base = word * WORD_MS
            last_word = until is not None and base + WORD_MS > until
            if last_word:  # the word holding `until`: only its acks up to it
                mask &= (1 << max(0, until - base + 1)) - 1
                if not mask:
                    break
            if prev_last is not None:
                best = max(best, base + (mask & -mask).bit_length() - 1 - prev_last)
            inner = _inner_max_gap(mask)
            if inner > best:
                best = inner
            prev_last = base + mask.bit_length() - 1
            if last_word:
                break
        return best

    def back_after(self, start: int, end: int | None) -> int | None:
        """The partition's first ack "again": the end of the longest gap overlapping the fault when
        that gap is an outage (OUTAGE_MIN_MS, OUTAGE_OVER_NORMAL), else its first ack at or after
        the start (it never stopped). Without the outage test, a partition that never stopped
        would "recover" at the end of whichever ordinary gap happened to be longest, as late as
        the heal. The gaps are those between consecutive acks with the later one at or after the
        start and the earlier one at or before the end; once the first is found, only gaps into a
        new word can be an outage (a gap inside a word is under WORD_MS < OUTAGE_MIN_MS), so
        words are not walked bit by bit (a long fault holds many words of acks). A partition
        that falls silent for good before the heal (`end`; None: never healed) is not back."""
        healed = end is not None
        end = end if healed else 2**62
        best = first = prev = None
        for word, mask in self.words:
            if prev is not None and prev > end:
                break
            base = word * WORD_MS
            if base + WORD_MS <= start:  # wholly before the fault: only its last ack matters
                prev = base + mask.bit_length() - 1
                continue
            if first is None:
                for b in _bits(mask):
                    t = base + b
                    if prev is not None and t >= start and prev <= end:
                        first = t if first is None else first
                        if best is None or t - prev > best[0]:  # ties: the earliest
                            best = (t - prev, t)
                    prev = t
                    if prev > end:
                        break
                continue
            t = base + (mask & -mask).bit_length() - 1
            if t - prev > best[0]:
                best = (t - prev, t)
            prev = base + mask.bit_length() - 1
        if best is None:
            return None
        normal = max(OUTAGE_MIN_MS, OUTAGE_OVER_NORMAL * self.max_gap(until=start))
        if healed and prev <= end and end - prev > max(normal, best[0]):
            return None  # silent from its last ack to the heal: an outage it never came back from
        return best[1] if best[0] > normal else first


def recovery(timelines: dict[tuple, AckTimeline], partitions: int, faults: list[dict]) -> list[dict]:
    """Per fault: the slowest partition's first ack again minus the fault start (None when some
    partition acknowledged nothing after the fault started), how long the fault was held, and
    whether writes continued during it: every partition acknowledged again before the heal. The
    verdict's availability rule and the prediction checks both read `writes_continued`: one
    definition, so they cannot disagree about the same drill."""
    out = []
    for f in faults:
        start, end = f["start_ms"], f.get("end_ms")
        backs = [b for b in (t.back_after(start, end) for t in timelines.values()) if b is not None]
        rec = (max(backs) - start) if backs and len(backs) == partitions else None
        held = None if end is None else end - start
        out.append(
            {
                "recovery_ms": rec,
                "held_ms": held,
                "writes_continued": rec is not None and (held is None or rec < held),
                "partitions_acking_after_start": len(backs),
                "partitions": partitions,
            }
        )
    return out
