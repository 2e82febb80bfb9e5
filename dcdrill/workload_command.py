"""`dcdrill workload ...`: run the workload against a stack by hand (the drill uses the same API)."""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import fields
from pathlib import Path

from dcdrill.validation import workload as wl


def register(sub) -> None:
    p = sub.add_parser(
        "workload",
        help="sequenced producers, a live consumer group and the final audit",
        description="Runs the workload against a stack and writes the drill record's ledgers "
        "(RECORD.md documents them).",
    )
    p.add_argument(
        "action",
        choices=["run", "produce", "audit"],
        help="run: producers + consumers + audit; produce: producers only; audit: read the whole log",
    )
    p.add_argument("--stack", default="local")
    p.add_argument("--run-dir", type=Path, help="drill record directory (default runs/<timestamp>)")
    p.add_argument("--topic", default=wl.WorkloadSpec.topic, help="the topic to write (default %(default)s)")
    p.add_argument("--producers", type=int, default=wl.WorkloadSpec.producers)
    p.add_argument("--consumers", type=int, default=wl.WorkloadSpec.consumers)
    p.add_argument(
        "--rate", type=float, default=wl.WorkloadSpec.rate, help="records/s per producer; 0 = as fast as possible"
    )
    p.add_argument(
        "--duration",
        type=float,
        default=wl.WorkloadSpec.duration_s,
        dest="duration_s",
        help="seconds (default %(default)s)",
    )
    p.add_argument("--count", type=int, help="records per producer instead of a duration")
    p.add_argument("--record-size", type=int, default=wl.WorkloadSpec.record_size, help="bytes per record value")
    p.add_argument("--acks", choices=["0", "1", "all"], help="default: the stack's producer.acks")
    client_default = "default: the java client's own; confluent and kafka-python %s (the drill's setting)"
    p.add_argument(
        "--idempotence",
        nargs="?",
        const="on",
        choices=["on", "off"],
        help="the idempotent producer (a bare --idempotence is on); " + client_default % "off",
    )
    p.add_argument("--retries", type=int, help=client_default % wl.WorkloadSpec.retries)
    p.add_argument("--delivery-timeout-ms", type=int, help=client_default % wl.WorkloadSpec.delivery_timeout_ms)
    p.add_argument("--linger-ms", type=int, help=client_default % wl.WorkloadSpec.linger_ms)
    p.add_argument(
        "--batch-size",
        type=int,
        default=wl.WorkloadSpec.batch_size,
        help="bytes per batch (default: the client's own: kafka-python 16384 per partition, "
        "librdkafka 1000000 per request)",
    )
    p.add_argument(
        "--client",
        choices=wl.CLIENTS,
        default=wl.WorkloadSpec.client,
        help="producer client (same ledger): confluent-kafka (librdkafka, the default) costs a "
        "fraction of kafka-python's CPU per record; java is Kafka's own Java client, with its own defaults",
    )
    p.add_argument(
        "--transactions",
        type=int,
        metavar="N",
        dest="transaction_size",
        help="transactional producers (the java client): N records per transaction; consumers and the "
        "audit read committed records only",
    )
    p.add_argument(
        "--abort-fraction",
        type=float,
        help="with --transactions, the share of transactions each producer aborts on purpose "
        f"(default {wl.DEFAULT_ABORT_FRACTION:g})",
    )
    p.add_argument("--hosts", nargs="*", default=[], help="client hosts or DCs to place producers/consumers on")
    p.add_argument(
        "--create-topic",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="create a missing topic with the stack's settings (default) or refuse",
    )
    p.add_argument("--bootstrap-timeout-ms", type=int, default=wl.WorkloadSpec.bootstrap_timeout_ms)
    p.set_defaults(func=_run)


def spec_from_args(args, stack_acks: str) -> wl.WorkloadSpec:
    names = {f.name for f in fields(wl.WorkloadSpec)}
    values = {k: v for k, v in vars(args).items() if k in names and v is not None}
    if args.idempotence is not None:
        values["idempotence"] = args.idempotence == "on"
    if args.transaction_size and args.abort_fraction is None:
        values["abort_fraction"] = wl.DEFAULT_ABORT_FRACTION
    if args.count:
        values["duration_s"] = None
    values["rate"] = args.rate or None
    if args.rate is not None and args.rate < 0:
        raise ValueError(f"rate must be >= 0 (0 = unlimited), got {args.rate}")
    values["acks"] = args.acks or stack_acks
    spec = wl.WorkloadSpec.for_client(**values)
    spec.check()
    return spec


def _run(args) -> int:
    from dcdrill.infra import lifecycle
    from dcdrill.infra import stack as stacks
    from dcdrill.record import DrillRecord

    d = stacks.load_deployment(args.stack)
    spec = spec_from_args(args, d.home.acks)  # bad flags: refused before the lab is asked
    inv = lifecycle.inventory(args.stack)
    spec.validate(inv)
    run_dir = args.run_dir or Path("runs") / time.strftime("%Y%m%d-%H%M%S")
    if args.action == "audit":
        wl.audit(run_dir, inv, spec)
        print(f"audit written to {run_dir}/audit/")
        return 0
    wl.ensure_topic(inv, spec, create=args.create_topic)
    DrillRecord(run_dir).write_topology(stacks.drill_topology(args.stack, d))
    if args.action == "produce":
        spec.consumers = 0
    w = wl.Workload(run_dir, inv, spec).start()
    try:
        w.wait_producers()
    finally:
        codes = w.stop()
    print(wl.progress_line(w.status(), spec.duration_s or 0), file=sys.stderr)
    if args.action == "run":
        wl.audit(run_dir, inv, spec)
    bad = {n: c for n, c in codes.items() if c not in (0, -15)}
    if bad:
        print(f"dcdrill: workload processes failed: {bad}; see {run_dir}/logs/", file=sys.stderr)
        return 1
    print(f"drill record: {run_dir}")
    return 0
