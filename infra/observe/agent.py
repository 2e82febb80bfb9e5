"""An agent on one of a stack's client hosts: what observes the cluster runs here, inside its DCs,
started by the control through host access (infra/observe/hostaccess.py), never on the control.

    python -m dcdrill.infra.observe.agent CALL    < {"inventory": {...}, "args": {...}} (one JSON line)

A call writes its JSON answer to stdout; one the cluster refuses as the caller's mistake writes
{"refused": why} and exits REFUSED. `watch` writes one coordination sample per line until
its stdin closes (the control closed it, or went away and its session with it) or its deadline
passes, so it never outlives the drill that started it.
"""

from __future__ import annotations

import json
import sys
import threading
import time

from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import host_probes, kafka_admin
from dcdrill.infra.observe.hostaccess import REFUSED

WATCH_DEADLINE_S = 3600.0


def _watch(
    inventory: Inventory, interval_s: float = 1.0, deadline_s: float = WATCH_DEADLINE_S, topic: str | None = None
) -> None:
    closed = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), closed.set()), daemon=True).start()
    end = time.monotonic() + deadline_s
    while not closed.is_set() and time.monotonic() < end:
        began = time.monotonic()
        try:
            sample = host_probes.coordination_sample_here(inventory, topic=topic)
        except Exception as exc:  # noqa: BLE001 - a missed sample is a gap in the log, said as such
            sample = {"agent_error": f"{type(exc).__name__}: {exc}"}
        try:
            print(json.dumps(sample), flush=True)
        except BrokenPipeError:
            return
        # Start to start: a sample's own time (slower on a busy machine) does not stretch the series.
        closed.wait(max(0.0, interval_s - (time.monotonic() - began)))


CALLS = {
    **kafka_admin.CALLS,
    "coordination_sample": lambda inv, a: host_probes.coordination_sample_here(inv, float(a.get("timeout_s", 2.0))),
    "cluster_status": lambda inv, a: host_probes.cluster_status_here(inv, float(a.get("timeout_s", 5.0))),
    "mirror_status": lambda inv, a: host_probes.mirror_status_here(
        Inventory(a["mirrors"]), float(a.get("timeout_s", 2.0))
    ),
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1 or argv[0] not in (*CALLS, "watch"):
        print(
            f"usage: python -m dcdrill.infra.observe.agent {{{'|'.join([*CALLS, 'watch'])}}} < request.json",
            file=sys.stderr,
        )
        return 2
    request = json.loads(sys.stdin.readline())
    inventory, args = Inventory(request["inventory"], secrets=request.get("secrets") or {}), request.get("args", {})
    if argv[0] == "watch":
        _watch(
            inventory,
            float(args.get("interval_s", 1.0)),
            float(args.get("deadline_s", WATCH_DEADLINE_S)),
            args.get("topic"),
        )
        return 0
    try:
        print(json.dumps(CALLS[argv[0]](inventory, args)))
    except ValueError as exc:
        print(json.dumps({"refused": str(exc)}))
        return REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main())
