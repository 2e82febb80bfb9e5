"""What a drill runs with, beyond the stack: how long the fault is held, and the settings a drill
may have of its own (`dcdrill drill --acks --factor --min-insync --unclean --flush-each-write --profile`, or every
setting of the matrix with `--matrix`). dcdrill/drill.py runs the drills; Topology.with_settings()
applies the settings; chaos/context.deployment() reads them back inside the experiment."""

from __future__ import annotations

import sys

from dcdrill.infra import rules
from dcdrill.infra.ports import role_defaults

HOLD_S = 30.0  # consistency-first: writes stop; 30 s shows that they do and that they come back


# What tells the cluster a broker is gone (roles/kafka_broker/defaults): its ZooKeeper session
# expiring, or in KRaft mode the controllers fencing it.
LIVENESS_TIMEOUT = {
    "zookeeper": ("kafka_broker_zookeeper_mode_properties", "zookeeper.session.timeout.ms"),
    "kraft": ("kafka_broker_kraft_properties", "broker.session.timeout.ms"),
}
# KRaft also elects an out-of-sync leader only on its cycle (roles/kafka_broker/defaults).
UNCLEAN_CYCLE = {"kraft": "kafka_broker_kraft_unclean_election_interval_ms"}


def failover_s(coordination: str = "zookeeper") -> float:
    """How long a partition led in a lost DC goes without acks at most before failing over: the
    dead brokers' ZooKeeper sessions expire (zookeeper.session.timeout.ms) or the controllers fence
    them (broker.session.timeout.ms), then the producers' requests to the old leaders time out
    (request_timeout_ms, validation/workload). On KRaft a partition that needs an out-of-sync
    leader also waits for the controller's next unclean-election cycle. docs/evidence.md has the
    failover times measured on the lab."""
    from dcdrill.validation.workload import WorkloadSpec

    defaults = role_defaults("kafka_broker")
    group, key = LIVENESS_TIMEOUT[coordination]
    cycle = int(defaults[UNCLEAN_CYCLE[coordination]]) if coordination in UNCLEAN_CYCLE else 0
    return (int(defaults[group][key]) + cycle + WorkloadSpec.request_timeout_ms) / 1000


def default_hold(t) -> float:
    """availability-first promises that writes go on while the DC is gone: every partition must
    acknowledge again before the heal (the writes-continued rule). A hold near the failover time
    can end before the failover on a loaded host, so those stacks hold the fault twice the failover."""
    return max(HOLD_S, 2 * failover_s(t.coordination)) if t.profile == "availability-first" else HOLD_S


def hold(args, t) -> float:
    """--hold, or the default for the drill's profile; a warning when it is too short to see
    availability-first's writes fail over."""
    if args.hold is None:
        return default_hold(t)
    if t.profile == "availability-first" and args.hold < 2 * failover_s(t.coordination):
        print(
            f"dcdrill: warning: a {args.hold:g} s hold is short for availability-first: failing over takes up "
            f"to ~{failover_s(t.coordination):.0f} s here (the dead brokers' session expiry, then the producers' "
            f"request timeout), and writes that resume only after the heal fail the writes-continued rule "
            f"(default hold {default_hold(t):.0f} s)",
            file=sys.stderr,
        )
    return args.hold


def given(args) -> dict:
    """The settings given on the command line, as Topology.with_settings() takes them."""
    values = {
        "profile": args.profile,
        "acks": args.acks,
        "factor": args.factor,
        "min_insync": args.min_insync,
        "unclean_leader_election": None if args.unclean is None else args.unclean == "on",
        "flush_each_write": args.flush_each_write or None,
    }
    return {k: v for k, v in values.items() if v is not None}


def plans(args, t) -> list[tuple[str, dict]]:
    """(folder name, settings) of each setting to drill: the command line's, or with --matrix every
    row of the settings matrix that meets a profile, checked against that profile (the stack's
    own where the row meets it)."""
    if not args.matrix:
        return [("", given(args))]
    out = []
    for row in rules.matrix(t):
        if row["profiles"]:
            profile = t.profile if t.profile in row["profiles"] else row["profiles"][0]
            name = (
                f"acks-{row['acks']}_min-insync-{row['min_insync']}_"
                f"unclean-{'on' if row['unclean_leader_election'] else 'off'}"
            )
            out.append(
                (
                    name,
                    {
                        "profile": profile,
                        "acks": row["acks"],
                        "min_insync": row["min_insync"],
                        "unclean_leader_election": row["unclean_leader_election"],
                    },
                )
            )
    return out
