"""The pure-Python half of the verifier: percentiles and ack gaps from bitmap words."""

from dcdrill.spark.rollup import WORD_MS, AckTimeline, percentiles, recovery


def words(*acks_ms):
    out: dict[int, int] = {}
    for t in acks_ms:
        out[t // WORD_MS] = out.get(t // WORD_MS, 0) | 1 << (t % WORD_MS)
    return list(out.items())


def test_nearest_rank_percentiles():
    assert percentiles({5: 98, 7: 1, 900: 1}) == [5, 7]
    assert percentiles({3: 1}) == [3, 3]
    assert percentiles({}) == [None, None]


def test_max_gap_inside_and_across_words():
    assert AckTimeline(words(1000, 1001, 1040)).max_gap() == 39  # inside one word
    assert AckTimeline(words(1000, 1049, 1050, 3100)).max_gap() == 2050  # across words
    assert AckTimeline(words(1000, 1000)).max_gap() == 0
    assert AckTimeline([]).max_gap() == 0


def test_recovery_is_the_slowest_partitions_first_ack_after_the_longest_overlapping_gap():
    fault = {"start_ms": 2000, "end_ms": 4000}
    timelines = {
        ("t", 0): AckTimeline(words(1990, 1995, 5200, 5201)),  # outage 1995 -> 5200
        ("t", 1): AckTimeline(words(1999, 2600, 2601, *range(3100, 5400, 500))),
    }  # back at 2600
    [r] = recovery(timelines, 2, [fault])
    assert r == {
        "recovery_ms": 3200,
        "held_ms": 2000,
        "writes_continued": False,  # back after the heal
        "partitions_acking_after_start": 2,
        "partitions": 2,
    }
    [r] = recovery({("t", 0): timelines[("t", 0)], ("t", 1): AckTimeline(words(100))}, 2, [fault])
    assert r["recovery_ms"] is None and r["partitions_acking_after_start"] == 1 and not r["writes_continued"]
    # Held longer, the same partitions were all back before the heal; never healed, they still count.
    assert recovery(timelines, 2, [{"start_ms": 2000, "end_ms": 5201}])[0]["writes_continued"]
    assert recovery(timelines, 2, [{"start_ms": 2000, "end_ms": 5200}])[0]["writes_continued"] is False
    assert recovery(timelines, 2, [{"start_ms": 2000}])[0] == {
        "recovery_ms": 3200,
        "held_ms": None,
        "writes_continued": True,
        "partitions_acking_after_start": 2,
        "partitions": 2,
    }


def test_a_partition_that_never_stopped_recovers_at_its_first_ack_after_the_start():
    """Acks every 200 ms, a 300 ms gap across the heal: no outage, so no 'recovery' at the heal
    (this made a tiebreaker-loss drill look unwritable: recovery 12.6 s for a 12.5 s fault)."""
    fault = {"start_ms": 2000, "end_ms": 4000}
    steady = AckTimeline(words(*range(1000, 3901, 200), 4200))  # ... 3800, 4000 missing, 4200
    assert steady.max_gap(until=2000) == 200
    [r] = recovery({("t", 0): steady}, 1, [fault])
    assert r["recovery_ms"] == 0  # an ack at 2000 itself
    slow = AckTimeline(words(*range(0, 2001, 700), 2500, 4500))  # normal gap 700: 2000 -> 4500 is an outage
    assert slow.max_gap(until=2000) == 700 and slow.back_after(2000, 4000) == 4500
    calm = AckTimeline(words(1000, 1100, 1500, 1900, 2010, 2960, 3900))  # 950 ms: over twice the normal 400,
    assert calm.back_after(2000, 4000) == 2010  # but under a second: no outage


def test_a_partition_silent_from_early_in_the_fault_to_the_heal_is_not_back():
    """A confluent drill whose producers stopped hearing back 2 s into a 36 s kill-dc: the acks
    still in flight at the start made every partition 'back' 1 ms after it, so writes 'continued'."""
    fault = {"start_ms": 2000, "end_ms": 38000}
    stalled = AckTimeline(words(*range(0, 2001, 5), 2001, 2030))  # in-flight answers, then nothing
    assert stalled.back_after(2000, 38000) is None
    [r] = recovery({("t", 0): stalled}, 1, [fault])
    assert r["recovery_ms"] is None and not r["writes_continued"]
    # Never healed (no end): the same acks are no evidence of an outage yet.
    assert stalled.back_after(2000, None) == 2000
    # Silent for less than an outage before the heal: still writing.
    assert AckTimeline(words(*range(0, 2001, 5), 2500)).back_after(2000, 3000) == 2000


def test_gaps_and_recovery_match_a_plain_walk_over_every_ack():
    """The bitmap shortcuts (cached inner gaps, no bit walk once the first ack is found) against
    the definitions applied to the sorted acks, on random timelines: dense, sparse, with outages."""
    import random

    from dcdrill.spark.rollup import OUTAGE_MIN_MS, OUTAGE_OVER_NORMAL

    def plain_back_after(acks, start, end):
        pairs = [(p, t) for p, t in zip(acks, acks[1:]) if t >= start and p <= end]
        if not pairs:
            return None
        gap, nxt = max(((t - p, -t) for p, t in pairs))
        normal = max(OUTAGE_MIN_MS, OUTAGE_OVER_NORMAL * plain_max_gap([a for a in acks if a <= start]))
        if acks[-1] <= end and end - acks[-1] > max(normal, gap):
            return None
        return -nxt if gap > normal else pairs[0][1]

    def plain_max_gap(acks):
        return max((t - p for p, t in zip(acks, acks[1:])), default=0)

    rng = random.Random(11)
    for _ in range(1000):
        acks, t = [], rng.randrange(0, 500)
        for _ in range(rng.randrange(0, 400)):
            # Outages of a few fixed lengths, so that equal gaps (ties) and gaps of exactly the
            # outage threshold (1000 ms, or twice a 500 ms rhythm) come up.
            t += rng.choice((1, 1, 2, 7, 60, 300, 500)) if rng.random() > 0.02 else rng.choice((1000, 2000, 2000, 2600))
            acks.append(t)
        start = rng.randrange(0, t + 100)
        end = start + rng.randrange(0, 8000)
        tl = AckTimeline(words(*acks))
        assert tl.max_gap() == plain_max_gap(acks)
        assert tl.max_gap(until=start) == plain_max_gap([a for a in acks if a <= start])
        assert tl.back_after(start, end) == plain_back_after(acks, start, end), (acks, start, end)
