"""The report's produce-latency paragraph: the prediction, the baseline and each phase, and a
note when the baseline is queueing rather than the network (no Spark needed)."""

from dcdrill.spark import report


def summary(acks: str, p50: int) -> dict:
    return {
        "topology": {"acks": acks, "produce_latency": {"range_ms": {"1": [0.0, 10.0], "all": [10.0, 30.0]}}},
        "baseline": {"p50_ms": p50, "p99_ms": p50 * 2, "settled": True},
        "phases": [{"phase": "before", "latency_p50_ms": p50, "latency_p99_ms": p50 * 2}],
    }


def test_a_baseline_near_the_prediction_is_reported_as_it_is():
    text = report._latency(summary("all", 31))
    assert "the network adds 10 to 30 ms" in text and "baseline before the fault p50 31 ms, p99 62 ms" in text
    assert "before: p50 31 ms" in text and "queue" not in text


def test_an_acks_all_baseline_over_twice_the_network_names_the_queue():
    text = report._latency(summary("all", 130))
    assert "over twice the network&#x27;s part" in text and "max.in.flight 1" in text
    # acks=1 waits for no replication round: no such note, however slow
    assert "queue" not in report._latency(summary("1", 130))


def test_a_stack_with_no_delay_says_so_not_0_to_0_ms():
    s = summary("all", 30)
    s["topology"]["produce_latency"]["range_ms"]["all"] = [0.0, 0.0]
    text = report._latency(s)
    assert "the stack adds no delay at its links" in text and "0 to 0 ms" not in text
