"""`dcdrill drill` and `dcdrill experiment`: their options (the drill itself is dcdrill/drill.py)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from dcdrill import drill
from dcdrill import drill_settings as settings
from dcdrill.chaos import experiment
from dcdrill.infra import stack_lock
from dcdrill.infra.schema import MAX_FACTOR
from dcdrill.record.models import PRODUCER_CLIENTS
from dcdrill.validation.workload import DEFAULT_ABORT_FRACTION, WorkloadSpec


def bounded(low: float, high: float, kind=int):
    """An argparse type: a number of `kind` (int: a whole number) in [low, high]; exit 2 naming
    the option otherwise."""
    what = "a whole number" if kind is int else "a number"

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value:g} is outside {low:g} to {high:g}")
        return value

    return parse


def register(sub) -> None:
    p = sub.add_parser(
        "drill",
        help="the full drill: lab up, experiment, verify, report",
        description=drill.__doc__.split("\n\n")[0],
        epilog=drill.__doc__.split("\n\n")[1],
    )
    p.add_argument("--stack", default="local", help="the stack to drill (Pulumi.<stack>.yaml; default local)")
    p.add_argument(
        "--experiment",
        help=f"one of: {', '.join(experiment.names())} (default: kill-dc, or kill-source-dc on a replicated stack)",
    )
    p.add_argument(
        "--failover-to",
        help="a replicated stack's cluster the consumers fail over to (default: the first the source is mirrored into)",
    )
    p.add_argument(
        "--dc",
        default=None,
        help="target DC (default: the first DC holding brokers; quorum-leader: "
        "the DC of the coordination quorum's leader as each drill starts)",
    )
    p.add_argument("--other-dc", default=None, help="slow-link: the other end (default: the next broker DC)")
    p.add_argument(
        "--latency-ms",
        type=bounded(0, 10_000, float),
        metavar="MS",
        help="slow-link: one-way delay added between the two DCs (default 50)",
    )
    p.add_argument("--jitter-ms", type=bounded(0, 10_000, float), metavar="MS", help="slow-link: jitter (default 0)")
    p.add_argument("--loss-pct", type=bounded(0, 100, float), metavar="PCT", help="slow-link: packet loss (default 1)")
    p.add_argument(
        "--hold",
        type=float,
        default=None,
        help=f"seconds the fault is held (default {settings.HOLD_S:.0f}; on availability-first stacks "
        f"{2 * settings.failover_s():.0f}, or {2 * settings.failover_s('kraft'):.0f} on KRaft: twice the failover, "
        "so writes can resume before the heal)",
    )
    p.add_argument("--rate", type=float, default=WorkloadSpec.rate, help="records/s per producer (default %(default)g)")
    p.add_argument(
        "--client",
        choices=PRODUCER_CLIENTS,
        default="confluent",
        help="the workload's producer client: confluent (librdkafka, the default), kafka-python, or java "
        "(Kafka's own Java client, with its own defaults: idempotent, retries without end, a two-minute "
        "delivery timeout)",
    )
    p.add_argument(
        "--idempotence",
        choices=["on", "off"],
        help="the idempotent producer on or off (default: java's own, on; off for confluent and kafka-python)",
    )
    p.add_argument(
        "--transactions",
        type=int,
        metavar="N",
        help="transactional producers (--client java): N records per transaction; consumers and the audit read "
        "committed records only",
    )
    p.add_argument(
        "--abort-fraction",
        type=float,
        metavar="F",
        help="with --transactions, the share of transactions each producer aborts on purpose "
        f"(default {DEFAULT_ABORT_FRACTION:g})",
    )
    p.add_argument(
        "--run-dir",
        type=Path,
        help="drill record directory (default runs/<time>-<experiment>); with --repeat or --matrix, the series folder",
    )
    p.add_argument(
        "--repeat",
        type=int,
        default=1,
        metavar="N",
        help="run the drill N times in a row, then compare them as `dcdrill history` does "
        "(text, and history.html in the series folder)",
    )
    p.add_argument("--force", action="store_true", help="allow a target holding every broker")
    p.add_argument(
        "--keep-topic",
        action="store_true",
        help="keep the drill's topic on the cluster (by default it is deleted once the audit has "
        "copied it into the record)",
    )
    g = p.add_argument_group(
        "the drill's own settings",
        "instead of the stack's, for this drill's topic and producers "
        "(the lab is the stack's; `dcdrill plan --stack S --matrix` lists what each setting "
        "predicts and which profile's rules it meets)",
    )
    g.add_argument("--acks", choices=["0", "1", "all"])
    g.add_argument("--factor", type=bounded(1, MAX_FACTOR), metavar="N", help=f"replication factor (1 to {MAX_FACTOR})")
    g.add_argument("--min-insync", type=bounded(1, MAX_FACTOR), metavar="N", help="min.insync.replicas")
    g.add_argument("--unclean", choices=["on", "off"], help="unclean.leader.election.enable")
    g.add_argument(
        "--flush-each-write",
        action="store_true",
        help="flush.messages=1 on the drill's topic: every replica fsyncs each write (the control of a "
        "power loss, at a cost in produce latency)",
    )
    g.add_argument(
        "--profile", choices=["consistency-first", "availability-first"], help="the promise the verdict checks"
    )
    g.add_argument(
        "--matrix",
        action="store_true",
        help="a drill (--repeat: N) for every acks x minInsync x unclean setting on the stack's factor that "
        "meets a profile's rules (`dcdrill plan --matrix`), compared at the end: the predictions tested",
    )
    p.add_argument(
        "--check",
        action="store_true",
        help="preflight only: load the stack, check its rules, validate the experiment on the stack's "
        "backend (every fault exists there and applies); exit 0, or 2 naming what is wrong. "
        "Starts nothing; cheap enough for every CI run",
    )
    p.set_defaults(func=lambda args: drill.check(args) if args.check else drill.run(args))

    h = sub.add_parser(
        "heal",
        help="undo what a drill left on a stack: faults, its processes, a cut DC or shaped link",
        description="After any crash of a drill (dcdrill, chaos run or the workload killed): stops the "
        "drill's processes still running, undoes each fault its record still lists, then "
        "undoes what the stack's live state still shows (a DC cut off, a link shaped "
        "otherwise than configured). Idempotent: a second heal does nothing. "
        "`lab up` and `drill` refuse to start until it has run.",
        epilog="Exit: 0 healed (or nothing to heal), 3 something could not be healed (named), 2 bad input.",
    )
    h.add_argument("--stack", default="local", help="the stack to heal (default local)")
    h.add_argument(
        "run",
        nargs="?",
        type=Path,
        help="one drill record to heal (default: every record the stack still lists as open)",
    )
    h.add_argument(
        "--force",
        action="store_true",
        help="heal even while another command holds the stack's lock (a drill still running, or a "
        "drill's process that outlived it): the holder is named first",
    )
    h.set_defaults(func=_heal)

    e = sub.add_parser(
        "experiment",
        help="print a composed Chaos Toolkit experiment, for a plain `chaos run`",
        description=experiment.__doc__.split("\n\n")[0],
        epilog="Then: chaos run --var stack=STACK --var run_dir=runs/ID experiment.json",
    )
    e.add_argument("name", choices=experiment.names())
    e.set_defaults(func=_experiment)


def _heal(args) -> int:
    from chaoslib.exceptions import ActivityFailed

    from dcdrill.chaos.faults import recovery
    from dcdrill.exits import EXIT_NO_FAULT
    from dcdrill.infra import stack as stacks
    from dcdrill.record import DrillRecord

    stacks.load_deployment(args.stack)  # UnknownStack: exit 2 listing the stacks
    only = None
    if args.run:
        if not args.run.is_dir():
            raise ValueError(f"{args.run}: no drill record there")
        only = DrillRecord(args.run.resolve())
    say = lambda line: print(f"dcdrill: {line}", flush=True)  # noqa: E731
    with stack_lock.held(args.stack, "heal", only.path if only else None, force=args.force):
        try:
            done = recovery.heal_stack(args.stack, only, say=say)
        except ActivityFailed as exc:
            print(f"dcdrill: {exc}", file=sys.stderr)
            return EXIT_NO_FAULT
    say(f"stack {args.stack}: " + (f"healed {len(done)} thing(s)" if done else "nothing to heal"))
    return 0


def _experiment(args) -> int:
    print(json.dumps(experiment.compose(args.name), indent=2))
    return 0
