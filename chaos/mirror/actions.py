"""MirrorMaker 2 actions that are not faults: wait until each flow has copied the drill topic.

Before the fault, so the drill starts from a mirror that keeps up (MM2 finds a drill's new topic
on its next topic refresh, then copies what was written meanwhile: its steady lag is measured
from the end of this wait, mirror-waits.jsonl); after the heal, so the audit reads a finished
copy."""
from __future__ import annotations

import time

from chaoslib.exceptions import ActivityFailed

from chaos import context
from chaos.mirror.probes import end_offsets
from infra import lifecycle
from infra.constants import now_ms

__all__ = ["wait_mirrored"]


def wait_mirrored(timeout_s: float = 120, configuration: dict = None, secrets: dict = None) -> dict:
    """Wait until, for every flow whose source holds the drill topic, the copy in the target has at
    least the records the source had when the wait began. Returns seconds waited per flow."""
    d, stack, topic = context.deployment(configuration), context.stack_name(configuration), context.drill_topic(configuration)
    deadline, t0, out = time.monotonic() + float(timeout_s), time.monotonic(), {}
    began = now_ms()
    for m in d.mirrors:
        for f in m.flows:
            source, target = lifecycle.inventory(stack, f.source), lifecycle.inventory(stack, f.target)
            remote = m.remote_topic(topic, f.source)
            wanted = copy = None
            while time.monotonic() < deadline:
                wanted = wanted or end_offsets(source, topic)
                copy = end_offsets(target, remote) if wanted else None
                if wanted is not None and copy is not None and all(copy.get(p, 0) >= e for p, e in wanted.items()):
                    break
                time.sleep(1)
            else:
                behind = None if wanted is None or copy is None else \
                    sum(max(0, e - copy.get(p, 0)) for p, e in wanted.items())
                raise ActivityFailed(f"{f.name}: {remote} in {f.target} has not caught up with {topic} in {f.source} "
                                     f"within {float(timeout_s):.0f}s ({'no answer' if behind is None else f'{behind} records behind'}"
                                     f" what the source held when the wait began); is MirrorMaker 2 running?")
            out[f.name] = round(time.monotonic() - t0, 1)
            context.record(configuration).append_mirror_wait({"flow": f.name, "began_ms": began, "caught_up_ms": now_ms()})
    return {"waited_s": out}
