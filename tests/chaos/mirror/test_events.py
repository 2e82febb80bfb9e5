"""MirrorMaker 2's starts and rebalances read from its log lines (chaos/mirror/events.py): times
in the role's format only, each line's own offset, and none before `since_ms`."""


def test_mirror_events_are_read_from_mm2s_log_lines():
    from dcdrill.chaos.mirror import events

    lines = [
        "[2026-11-25T15:40:01.123Z] INFO Kafka MirrorMaker initializing ... "
        "(org.apache.kafka.connect.mirror.MirrorMaker)",
        "[2026-11-25T15:40:05.000+00:00] INFO [Worker clientId=east->west] Rebalance started (WorkerCoordinator)",
        "[2026-11-25 15:40:06,000] INFO Rebalance started (an older pattern: no offset, skipped)",
        "\tat org.apache.kafka.connect.runtime.Worker.run (a stack trace line)",
        "[2026-11-25T16:40:07.000+01:00] INFO Rebalance started (WorkerCoordinator)",
    ]
    t0 = 1795621201123  # 2026-11-25T15:40:01.123Z
    assert events.parse(lines) == [("start", t0), ("rebalance", t0 + 3877), ("rebalance", t0 + 5877)]
    assert events.parse(lines, since_ms=t0 + 1) == [("rebalance", t0 + 3877), ("rebalance", t0 + 5877)]
