"""`dcdrill init`, `setup`, `plan`, `schema`, `lab` and `status`: the project and its stacks,
before and after they exist."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from dcdrill import project
from dcdrill.exits import EXIT_BAD_INPUT, EXIT_FAIL, EXIT_PASS
from dcdrill.infra import ansible, lifecycle, mirror_rules, pulumi_cli, rules, schema, stack_lock, transaction_rules
from dcdrill.infra import stack as stacks
from dcdrill.infra.observe import status, status_text


def register(sub) -> None:
    sp = sub.add_parser(
        "init",
        help="make a dcdrill project here: Pulumi.yaml, the example stacks, a CI recipe",
        description="Writes Pulumi.yaml (dcdrill's program), one Pulumi.<stack>.yaml per shipped "
        "example, a CI recipe and a .gitignore. Then: dcdrill setup; dcdrill plan --stack local.",
    )
    sp.add_argument("dir", nargs="?", type=Path, default=Path("."), help="the project folder (default: this one)")
    sp.add_argument(
        "--ci",
        choices=sorted(project.CI_TARGETS),
        default="github",
        help="the CI recipe: github (.github/workflows/dcdrill.yml) or gitlab (ci/dcdrill.gitlab-ci.yml)",
    )
    sp.add_argument("--force", action="store_true", help="overwrite files that are there with other content")
    sp.set_defaults(func=_init)

    sp = sub.add_parser(
        "setup",
        help="install what the lab and verifier need (apt, Maven jars, Pulumi CLI, kernels)",
        description="Idempotent; the Pulumi CLI is built from the Go module proxy only when no "
        "`pulumi` is on PATH. Needs root for apt-get on a bare machine.",
    )
    sp.set_defaults(func=lambda _args: project.setup())

    sp = sub.add_parser("plan", help="check a stack against the multi-DC rules and predict each DC loss (offline)")
    sp.add_argument("--stack", required=True, help=f"stack name; one of: {', '.join(stacks.stack_names())}")
    sp.add_argument("--json", action="store_true", help="print {inventory, violations, predictions} as JSON")
    sp.add_argument(
        "--matrix",
        action="store_true",
        help="every acks x minInsync x unclean-election setting on this stack's DCs and replication "
        "factor: what losing each DC does, and which profile's rules it meets",
    )
    sp.add_argument(
        "--fault",
        choices=sorted(rules.FAULT_KINDS),
        default=None,
        help="with --matrix: how the DC is lost, which decides what an ISR shrunk into it keeps "
        "(default kill-dc; `dcdrill drill --matrix --experiment power-loss` drills it)",
    )
    sp.set_defaults(func=_plan)

    sp = sub.add_parser("schema", help="print the stack config's JSON Schema (docs/stack.schema.json), for editors")
    sp.set_defaults(func=_schema)

    sp = sub.add_parser("lab", help="bring a local stack up (pulumi up + Ansible until healthy) or down")
    sp.add_argument("action", choices=["up", "down", "refresh"])
    sp.add_argument("--stack", default="local")
    sp.add_argument("--quiet", action="store_true", help="no progress lines")
    sp.set_defaults(func=_lab)

    sp = sub.add_parser("status", help="brokers, ZooKeeper quorum and partitions (with the DC of every replica)")
    sp.add_argument("--stack", default="local")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=_status)


def _init(args) -> int:
    written = project.init(args.dir, args.ci, args.force)
    for path in written:
        print(f"wrote {path}")
    if project.install_spec() is None:
        print(
            f"note: set DCDRILL_PIP in {project.CI_TARGETS[args.ci][1]} to where CI installs dcdrill from (a git URL "
            "at a commit, or a wheel's URL): this one came from a local path or an index pip did not record"
        )
    print(
        f"dcdrill project in {args.dir.resolve()}"
        + ("" if written else " (nothing to change)")
        + "\nnext: dcdrill setup; dcdrill plan --stack local; "
        'sudo "$(command -v dcdrill)" drill --stack local (root for the lab; sudo resets PATH)'
    )
    return EXIT_PASS


def _plan(args) -> int:
    if args.fault and not args.matrix:
        print("dcdrill: --fault goes with --matrix (the plan without it lists every fault)", file=sys.stderr)
        return EXIT_BAD_INPUT
    t = stacks.load(args.stack)
    violations = lifecycle.violations(args.stack)
    if args.matrix:
        # The matrix varies the risk rules' settings; any other broken rule makes it meaningless.
        shape = [v for v in violations if v.rule not in schema.RISK_RULES]
        for v in shape:
            print(f"dcdrill: [{v.rule}] {v.message}", file=sys.stderr)
        return EXIT_BAD_INPUT if shape else _matrix(args.stack, t, args.json, args.fault or "kill-dc")
    backend = stacks.backend(args.stack)
    d = stacks.load_deployment(args.stack)
    if d.replicated:
        return _plan_replicated(args, d, violations)
    inv = backend.inventory(t)
    one_way = backend.one_way_ms(t)
    out = {
        "inventory": inv.data,
        "violations": [v.as_dict() for v in violations],
        "predictions": rules.predictions(t),
        "transactions": transaction_rules.transactions(t),
        "produce_latency": rules.produce_latency(t, one_way) if one_way is not None else None,
    }
    blocking = rules.blocking(t, violations)
    if args.json:
        print(json.dumps(out, indent=2, sort_keys=True))
    else:
        print(
            f"stack {args.stack}: {t.backend}, Kafka {t.kafka_version} on {t.coordination}"
            + (f" ({rules.quorum_summary(t)})" if t.total_voters else "")
            + f", {t.profile}, factor {t.replication.factor}, "
            f"minInsync {t.replication.min_insync}, unclean {t.replication.unclean_leader_election}, acks {t.acks}, "
            f"listeners {'TLS' if t.tls else 'PLAINTEXT'}{' + SASL/SCRAM' if t.sasl else ''}"
            + (f", {len(t.acls)} ACLs" if t.acls else "")
        )
        for h in t.hosts():
            print(f"  {h.role:<16} {h.name}")
        print("rules:" + (" all pass" if not violations else ""))
        for v in violations:
            waived = " (accepted risk)" if v not in blocking else ""
            print(f"  [{v.rule}] {v.message}{waived}")
        print("losing one DC (acked loss after a kill, a clean stop, a power loss):")
        for dc, p in out["predictions"].items():
            loss = " / ".join(
                "POSSIBLE" if p["faults"][f]["acked_loss_possible"] else "impossible"
                for f in ("kill-dc", "stop-dc", "power-loss")
            )
            print(
                f"  {dc:<8} quorum {'survives' if p['quorum_survives'] else 'LOST':<9} "
                f"writes {'continue' if p['writable'] else 'STOP':<9} acked loss {loss}"
            )
            print(f"           writes: {p['writes_why']}")
            if p["writable"] and not p["visible"]:
                print(f"           INVISIBLE while {dc} is gone: {p['visible_why']}")
            whys = {f: p["faults"][f]["why"] for f in ("kill-dc", "stop-dc", "power-loss")}
            for why in dict.fromkeys(whys.values()):  # each reason once, with the faults it decides
                print(f"           {', '.join(f for f, w in whys.items() if w == why)}: {why}")
        _print_transactions(out["transactions"])
        _print_latency(out["produce_latency"])
    return EXIT_BAD_INPUT if blocking else EXIT_PASS


def _print_transactions(tx: dict) -> None:
    """What losing each DC does to transactional producers (acks=all, idempotent, whatever the stack's acks)."""
    log = tx["state_log"]
    print(
        f"transactions (transaction.version {tx['transaction_version']}; __transaction_state factor "
        f"{log['factor']}, min.isr {log['min_insync']}; commit loss after a kill, a clean stop, a power loss):"
    )
    print(f"  {tx['version_why']}")
    faults = ("kill-dc", "stop-dc", "power-loss")
    for dc, p in tx["per_dc"].items():
        loss = " / ".join("POSSIBLE" if p["faults"][f]["commit_loss_possible"] else "impossible" for f in faults)
        print(f"  {dc:<8} transactions {'continue' if p['writable'] else 'STOP':<9} commit loss {loss}")
        print(f"           {p['writable_why']}")
        whys = {f: p["faults"][f]["why"] for f in faults if p["faults"][f]["commit_loss_possible"]}
        for why in dict.fromkeys(whys.values()):
            print(f"           {', '.join(f for f, w in whys.items() if w == why)}: {why}")


def _plan_replicated(args, d, violations) -> int:
    """`dcdrill plan` of a replicated stack: each cluster, each mirror flow and what each fault does to it."""
    if shape := [v for v in violations if v.rule in mirror_rules.SHAPE_RULES]:  # nothing to predict on
        for v in shape:
            print(f"dcdrill: [{v.rule}] {v.message}", file=sys.stderr)
        return EXIT_BAD_INPUT
    resolved = stacks.resolved(d)
    blocking = rules.blocking(d.home, violations)
    if args.json:
        print(
            json.dumps(
                {
                    "violations": [v.as_dict() for v in violations],
                    "clusters": resolved["clusters"],
                    "mirrors": resolved["mirrors"],
                },
                indent=2,
                sort_keys=True,
            )
        )
        return EXIT_BAD_INPUT if blocking else EXIT_PASS
    print(f"stack {args.stack}: {d.home.backend}, {d.home.profile}, {len(d.clusters)} replicated clusters")
    for c in d.clusters:
        print(
            f"  cluster {c.name}: {', '.join(c.dc_names)}; Kafka {c.kafka_version} on {c.coordination}, "
            f"{c.total_brokers} brokers, factor {c.replication.factor}, minInsync {c.replication.min_insync}, "
            f"acks {c.acks}, listeners {'TLS' if c.tls else 'PLAINTEXT'}{' + SASL/SCRAM' if c.sasl else ''}"
        )
    for name, m in resolved["mirrors"].items():
        print(
            f"  mirror {name}: MirrorMaker 2 ({m['mode']}) on {m['host']} ({m['placement']} DC), topics "
            f"{m['topics']!r} -> {m['remote_topic_prefix']}<topic>, "
            f"offset syncs at the {m['offset_syncs_topic_location']}"
        )
    for h in d.hosts():
        print(f"  {h.role:<16} {h.name}")
    print("rules:" + (" all pass" if not violations else ""))
    for v in violations:
        print(f"  [{v.rule}] {v.message}" + ("" if v in blocking else " (accepted risk)"))
    print("faults, per mirror flow:")
    for name, m in resolved["mirrors"].items():
        for fault, p in m["predictions"].items():
            print(
                f"  {name:<12} {fault:<15} source writes {'continue' if p['source_writable'] else 'STOP':<9} "
                f"target writable {'yes' if p['target_writable'] else 'NO':<4} "
                f"acked records missing from the target {'POSSIBLE' if p['acked_loss_possible'] else 'impossible'}"
            )
    return EXIT_BAD_INPUT if blocking else EXIT_PASS


def _print_latency(latency: dict | None) -> None:
    if latency is None:
        print("produce latency: not predicted (this backend does not set its inter-DC delay)")
        return
    print("produce latency the network adds (round trips; jitter, queueing and the brokers' own time on top):")
    for lead, ms in latency["acks_all_adds_ms"].items():
        print(
            f"  leader in {lead:<8} acks=all adds {ms:g} to {2 * ms:g} ms over acks=1 (one or two round trips "
            "to its farthest replica)"
        )
    for r in latency["routes"]:
        print(
            f"  producer in {r['producer_dc']:<6} -> leader in {r['leader_dc']:<6} acks=1 {r['acks_1_ms']:g} ms, "
            f"acks=all {r['acks_all_ms']:g} to {r['acks_all_max_ms']:g} ms"
        )


def _schema(args) -> int:
    print(json.dumps(schema.json_schema(), indent=2, sort_keys=True))
    return EXIT_PASS


def _matrix(stack: str, t, as_json: bool, fault: str) -> int:
    """`dcdrill plan --matrix`: every acks x minInsync x unclean setting on this stack's layout, the
    acknowledged loss as `fault` decides it (the JSON holds every fault's)."""
    rows = rules.matrix(t)
    if as_json:
        print(json.dumps(rows, indent=2, sort_keys=True))
        return 0

    def cell(p: dict) -> str:
        if not p["quorum_survives"]:
            return "QUORUM LOST"
        writes = "STOP" if not p["writable"] else "continue" if p["visible"] else "continue UNREAD"
        return f"{writes}, {'LOSS possible' if p['faults'][fault]['acked_loss_possible'] else 'no loss'}"

    dcs = t.dc_names
    print(
        f"stack {stack}: replication factor {t.replication.factor}, replicas per DC: "
        + ", ".join(f"{d} {t.replicas_in(d)}" for d in dcs)
        + f". Losing one DC by {fault}, for every setting "
        "(* = the stack's own):"
    )
    header = ["acks", "minInsync", "unclean"] + [f"losing {d}" for d in dcs] + ["meets the rules of"]
    table = [
        [
            ("*" if r["current"] else " ") + r["acks"],
            str(r["min_insync"]),
            "on" if r["unclean_leader_election"] else "off",
            *[cell(r["predictions"][d]) for d in dcs],
            ", ".join(r["profiles"]) or "-",
        ]
        for r in rows
    ]
    widths = [max(len(x) for x in col) for col in zip(header, *table)]
    for line in [header] + table:
        print("  " + "  ".join(x.ljust(w) for x, w in zip(line, widths)).rstrip())
    print(
        "Predictions assume the replicas were in sync when the DC went. The rules also cover the worst "
        "case: an ISR shrunk into the lost DC (without unclean election those partitions stop until it "
        "is back), and acks=all clients (availability-first keeps factor - minInsync >= replicas per DC "
        "whatever acks the drill's producers use). UNREAD: acknowledged, but since Kafka 3.7 (KAFKA-15583, "
        "ZooKeeper and KRaft alike) the high watermark waits for min.insync replicas, so no consumer reads "
        "those writes until the DC is back."
    )
    return 0


def _lab(args) -> int:
    backend = stacks.backend(args.stack)
    backend.require_support()
    if args.action in ("up", "down"):
        with stack_lock.held(args.stack, f"lab {args.action}"):
            return _lab_action(args, backend)
    return _lab_action(args, backend)


def _lab_action(args, backend) -> int:
    if args.action == "up":
        from dcdrill.chaos.faults import recovery  # the drill's modules: only `lab up` needs them

        recovery.require_healed(args.stack)
        st = lifecycle.up(args.stack, quiet=args.quiet)
        print(status_text.render(st))
    elif args.action == "down":
        lifecycle.down(args.stack)
        left = backend.leftovers()
        if left:
            print(f"dcdrill: warning: left behind: {', '.join(left)}", file=sys.stderr)
            return EXIT_FAIL
    elif args.action == "refresh":
        pulumi_cli.refresh(args.stack)
    return EXIT_PASS


def _status(args) -> int:
    d = stacks.load_deployment(args.stack)
    if not d.replicated:
        st = status.cluster_status(lifecycle.inventory(args.stack))
        print(json.dumps(st, indent=2, sort_keys=True) if args.json else status_text.render(st))
        return EXIT_PASS if status.healthy(st) else EXIT_FAIL
    clusters = {name: status.cluster_status(inv) for name, inv in lifecycle.inventories(args.stack).items()}
    mirrors = status.mirror_status(
        lifecycle.inventory(args.stack, ansible.MIRRORS), via=lifecycle.inventory(args.stack)
    )
    if args.json:
        print(json.dumps({"clusters": clusters, "mirrors": mirrors}, indent=2, sort_keys=True))
    else:
        for name, st in clusters.items():
            print(f"cluster {name}:\n{status_text.render(st)}")
        for m in mirrors:
            print(f"MirrorMaker 2 {m['mirror']} on {m['name']} ({m['dc']}): {'running' if m['alive'] else 'DOWN'}")
    ok = all(status.healthy(st) for st in clusters.values()) and all(m["alive"] for m in mirrors)
    return EXIT_PASS if ok else EXIT_FAIL
