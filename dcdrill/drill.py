"""The drill, in one command (`dcdrill drill`; its options are in dcdrill/drill_command.py):

preflight (the stack's rules, the experiment on the stack's backend) -> lab up if needed ->
`chaos run` of the composed experiment (journal kept in the drill record) -> check the fault
really happened and healed -> Spark verifier -> report.
Exit: 0 verdict pass, 1 verdict fail, 2 bad input, 3 fault not injected or heal failed,
4 steady state not met before the fault. With --repeat N or --matrix: the worst of the drills'
exit codes (the series stops at the first 2, 3 or 4: the setup is wrong, not the cluster).
"""

from __future__ import annotations

import math
import signal
import subprocess
import sys
import time
from pathlib import Path

from dcdrill import drill_settings as settings
from dcdrill.chaos import experiment
from dcdrill.chaos.faults import recovery
from dcdrill.exits import EXIT_BAD_INPUT, EXIT_NO_FAULT, EXIT_NOT_STEADY, missing_extras, verdict_code
from dcdrill.infra import lifecycle, mirror_rules, rules, stack_lock
from dcdrill.infra import stack as stacks
from dcdrill.infra.constants import child_env
from dcdrill.infra.observe import hostaccess, status, status_text
from dcdrill.record import DrillRecord, models
from dcdrill.record.contents import CHAOS_LOG, CONVERGENCE, EXPERIMENT, JOURNAL, PHASES, PLAN
from dcdrill.validation.workload import DEFAULT_ABORT_FRACTION

LINK_SHAPE = ("latency_ms", "jitter_ms", "loss_pct")  # slow-link's variables, floats
TARGETS_A_DC = {"kill-dc", "stop-dc", "power-loss", "isolate-dc", "slow-link"}
DC_LOSSES = {"kill-dc", "stop-dc", "power-loss", "isolate-dc"}
# A fault is held at most 50 minutes: the workload's processes end an hour after they start
# (validation/workload.py AGENT_LIFETIME_S), and the drain and audit come after the heal.
QUORUM_LEADER = "quorum-leader"  # --dc: the DC of the coordination quorum's leader, when each drill starts
STRETCHED_DEFAULT, REPLICATED_DEFAULT = "kill-dc", "kill-source-dc"  # --experiment when none is given


class Plan:
    """What the command line asks for, checked: the stack's topology under the drill's settings,
    its backend, the composed experiment and the variables `chaos run` gets."""

    def __init__(self, args):
        own = settings.given(args)
        self.deployment = stacks.load_deployment(args.stack).with_settings(own)  # UnknownStack lists the valid stacks
        self.topology = self.deployment.home
        self.backend = stacks.backend(args.stack)
        args.experiment = args.experiment or (REPLICATED_DEFAULT if self.deployment.replicated else STRETCHED_DEFAULT)
        self.experiment = experiment.compose(args.experiment)
        broker_dcs = [dc.name for dc in self.topology.broker_dcs]
        self.leader_dc = args.dc == QUORUM_LEADER  # resolved per drill (_quorum_leader_dc); checked as any DC here
        self.dc = None if self.leader_dc else args.dc or (broker_dcs[0] if broker_dcs else None)
        self.other = args.other_dc or next((d for d in broker_dcs if d != self.dc), None)
        self.variables = {
            k: v for k, v in (("dc", self.dc or self.topology.dc_names[0]), ("other_dc", self.other)) if v
        }
        into = [f.target for f in self.deployment.flows if f.source == self.topology.name]
        if "failover_to" in self.experiment["configuration"] and into:
            self.variables["failover_to"] = args.failover_to or into[0]
        for key in LINK_SHAPE:  # slow-link's shape; the experiment's own defaults otherwise
            if getattr(args, key, None) is not None:
                self.variables[key] = getattr(args, key)
        self.problems = self._problems(args, own, broker_dcs)

    def _problems(self, args, own: dict, broker_dcs: list[str]) -> list[str]:
        t, d = self.topology, self.deployment
        # The stack's own settings were checked at `lab up`; --check and a drill's own settings are
        # checked here: every cluster's rules, and on a replicated stack every mirror's.
        violations = self.backend.deployment_violations(d) if (own or args.check) else []
        out = [f"[{v.rule}] {v.message}" for v in rules.blocking(t, violations)]
        if out and own:
            out.append(f"(`dcdrill plan --stack {args.stack} --matrix` lists the settings each profile allows)")
        if d.replicated and "failover_to" in self.variables:
            out += mirror_rules.failover_problems(d, self.variables["failover_to"])
        if not d.replicated and experiment.needs_mirrors(self.experiment):
            out.append(
                f"{args.experiment} drills a replicated stack (dcdrill:clusters joined by dcdrill:mirrors); "
                f"{args.stack} is one stretched cluster"
            )
        out += experiment.preflight(self.experiment, t, self.backend, self.variables, d.dc_names)
        if self.leader_dc and args.experiment not in DC_LOSSES:
            out.append(
                f"--dc {QUORUM_LEADER} is for the loss of a DC ({', '.join(sorted(DC_LOSSES))}), not {args.experiment}"
            )
        if args.experiment in TARGETS_A_DC and broker_dcs == [self.dc] and not args.force and not d.replicated:
            out.append(
                f"{self.dc} holds every broker: the drill would take the whole cluster down "
                "(pass --force to do it anyway)"
            )
        if args.repeat < 1:
            out.append(f"--repeat must be at least 1, got {args.repeat}")
        if len(d.datacenters) < 2 and not args.force:
            out.append("the stack has a single DC: a DC drill would take everything down (--force)")
        if args.hold is not None and not (math.isfinite(args.hold) and 0 < args.hold <= models.MAX_HOLD_S):
            out.append(f"--hold must be > 0 seconds and at most {models.MAX_HOLD_S:.0f}, got {args.hold:g}")
        rate = getattr(args, "rate", None)
        if rate is not None and not (math.isfinite(rate) and 0 < rate <= models.MAX_RATE):
            out.append(f"--rate must be > 0 records/s and at most {models.MAX_RATE:.0f}, got {rate:g}")
        size, aborts = getattr(args, "transactions", None), getattr(args, "abort_fraction", None)
        if size is not None and (size < 1 or args.client != "java"):
            out.append(f"--transactions needs a size of at least 1 and --client java, got {size} on {args.client}")
        if aborts is not None and (not size or not (math.isfinite(aborts) and 0 <= aborts < 1)):
            out.append(f"--abort-fraction must be in [0, 1) and needs --transactions, got {aborts:g}")
        if args.matrix and own:
            out.append(
                "--matrix drills every setting itself: leave out --acks/--factor/--min-insync/--unclean/--profile"
            )
        return out


def check(args) -> int:
    """`dcdrill drill --check`: the preflight alone. Starts nothing, reaches no cluster. On AWS it
    also checks what the control needs to reach the hosts (infra/aws/prerequisites.py) and reads
    what the account lacks for the stack (infra/aws/account.py), so a drill never stops halfway
    for want of them."""
    plan = Plan(args)
    if plan.problems:
        raise ValueError(f"{args.experiment} on {args.stack}: " + "; ".join(plan.problems))
    if plan.backend.name == "aws":
        plan.backend.require_support()
        print("dcdrill: reading the account (EC2 vCPU quota, FIS's role, SSM endpoints): read-only", flush=True)
        from dcdrill.infra.aws.account import Unread

        found = plan.backend.account_findings(plan.deployment)
        for line in (f for f in found if isinstance(f, Unread)):
            print(f"dcdrill: warning: {line}", file=sys.stderr)
        if lacking := [f for f in found if not isinstance(f, Unread)]:
            raise ValueError(f"the AWS account cannot run stack {args.stack} yet: " + "; ".join(lacking))
    print(
        f"dcdrill: {args.experiment} can run on stack {args.stack} ({plan.backend.name} backend)"
        + (f", target {plan.dc or 'the DC of the quorum leader'}" if args.experiment in TARGETS_A_DC else "")
    )
    return 0


def _require_verifier() -> None:
    """The verdict needs the checker (pyspark and friends, the `verify` extra): say so before any
    fault, not after."""
    if missing := missing_extras("verify"):
        raise ValueError(
            f"the drill's verdict needs the verifier ({', '.join(missing)} missing): pip install 'dcdrill[verify]'"
        )


def run(args) -> int:
    plan = Plan(args)
    if plan.problems:
        raise ValueError(f"{args.experiment} on {args.stack}: " + "; ".join(plan.problems))
    plan.backend.require_support()
    _require_verifier()
    # The stack's lock for the whole command, kept by its chaos run too (pass_fds): taken before
    # the check that nothing is left, so no other command starts between the check and the drill.
    with stack_lock.held(args.stack, "drill", args.run_dir) as lock_fd:
        args.stack_lock_fd = lock_fd
        recovery.require_healed(args.stack)
        return _drills(args, plan)


def _drills(args, plan: Plan) -> int:
    from dcdrill.spark import session  # the `verify` extra: only a drill that runs needs it

    stamp = time.strftime("%Y%m%d-%H%M%S")
    # One Spark session for the whole command, started at once in the background at the lowest
    # CPU priority (session.start_early): the first verify finds it started, and the drills after
    # the first verify in a warm JVM, a fraction of the first's time. The idle JVM between
    # verifies costs memory (its heap), not CPU.
    plans = settings.plans(args, plan.topology)
    own_process = getattr(args, "own_process", False)
    with session.spark_scope(end_jvm=own_process):
        session.start_early()  # while the lab comes up and the drill runs, at the lowest priority
        if args.repeat == 1 and not args.matrix:
            return _drill(
                args,
                plan,
                plans[0][1],
                (args.run_dir or Path("runs") / f"{stamp}-{args.experiment}").resolve(),
                last=own_process,
            )
        kind = "matrix" if args.matrix else f"x{args.repeat}"
        series = (args.run_dir or Path("runs") / f"{stamp}-{args.experiment}-{kind}").resolve()
        drills = [(name, own, i) for name, own in plans for i in range(1, args.repeat + 1)]
        codes = []
        for n, (name, own, i) in enumerate(drills, 1):
            lifecycle.say(f"drill {n} of {len(drills)}" + (f": {name}" if name else ""))
            codes.append(_drill(args, plan, own, series / name / f"drill-{i}", last=own_process and n == len(drills)))
            if codes[-1] >= EXIT_BAD_INPUT:
                break
    _compare(series)
    return max(codes)


def _compare(series: Path) -> None:
    """The series' drills side by side (spark/history.py), on screen and in history.html."""
    from dcdrill.spark import history

    try:
        summaries = history.load([str(series)])
    except history.BadHistory as exc:  # no drill got as far as its report
        print(f"dcdrill: nothing to compare: {exc}", file=sys.stderr)
        return
    groups = history.groups(summaries)
    (series / "history.html").write_text(history.render_html(groups, summaries))
    print(history.render_text(groups))
    print(f"history: {series / 'history.html'}")


def _drill(args, plan: Plan, own: dict, run_dir: Path, last: bool = False) -> int:
    """One drill into `run_dir` with its `own` settings (if any): lab up if needed, experiment,
    checks, verify. `last`: the command's last use of Spark, whose JVM may end while the report
    is drawn."""
    from dcdrill.spark import junit, memory, report_files, session, stopped_report, verify

    phases: dict[str, float] = {}
    clock = started = time.monotonic()

    def phase(name: str) -> None:
        nonlocal clock
        phases[name] = phases.get(name, 0) + time.monotonic() - clock
        clock = time.monotonic()

    record = DrillRecord(run_dir)

    def stop(code: int, message: str) -> int:
        """Exit before a verdict: say why, and leave CI a junit.xml with the drill in error and a
        report page with the causes and the hosts' logs."""
        print(f"dcdrill: {message}", file=sys.stderr)
        record.write_report_file(
            "junit.xml", junit.error_xml(args.stack, args.experiment, code, message, time.monotonic() - started)
        )
        page = stopped_report.render(record, args.stack, args.experiment, code, message)
        print(f"report: {record.write_report_file('index.html', page)}", file=sys.stderr)
        return code

    record.write_topology(stacks.drill_topology(args.stack, plan.deployment.with_settings(own)))
    record.write_json(EXPERIMENT, plan.experiment)
    try:
        if not lifecycle.is_up(args.stack):
            lifecycle.up(args.stack)
        # Every host answers on host access, or no fault starts: a drill that could not heal or
        # observe a host proves nothing.
        lifecycle.require_hosts_answer(args.stack)
    except hostaccess.HostUnreachable as exc:
        return stop(EXIT_NO_FAULT, f"{exc}; nothing was injected")
    phase("lab up")
    variables = dict(plan.variables)
    if plan.leader_dc:
        variables["dc"] = _quorum_leader_dc(args.stack)
        if variables["dc"] is None:
            return stop(EXIT_NOT_STEADY, "--dc quorum-leader: the quorum has no leader now; nothing was injected")
        lifecycle.say(f"the quorum's leader is in {variables['dc']}: the drill's target")
    record.write_plan(resolved_plan(args, plan, own, variables, record.path))  # the experiment's var file
    code = _chaos_run(args, record)
    phase("experiment")
    fault_problem = _fault_problem(record)
    journal = record.journal()
    lifecycle.say(f"drill record: {run_dir}")
    if journal is None:
        return stop(EXIT_NO_FAULT, f"chaos run left no journal (exit {code}); see {record.file(CHAOS_LOG)}")
    if not journal.get("steady_states", {}).get("before", {}).get("steady_state_met", False):
        return stop(
            EXIT_NOT_STEADY,
            "steady state not met before the fault; nothing was injected. Cluster now:\n"
            + status_text.render(status.cluster_status(lifecycle.inventory(args.stack))),
        )
    if bad := _bad_input(journal):
        return stop(EXIT_BAD_INPUT, bad)
    if fault_problem:
        return stop(EXIT_NO_FAULT, f"the drill proves nothing: {fault_problem}")
    session.await_early()
    try:
        summary = verify.verify(record, when_spark_done=session.begin_ending_jvm if last else None)
    except verify.BadInput as exc:
        return stop(EXIT_BAD_INPUT, f"the drill record cannot be verified: {exc}")
    except Exception as exc:  # noqa: BLE001 - exit 1 would read as a verdict
        heap = session.heap_given({}, memory.plan([record.location]))
        return stop(EXIT_BAD_INPUT, f"verify {run_dir}: {memory.failure(exc, heap, session.jvm_process())}")
    phase("verify")
    print(report_files.one_screen(summary))
    print(f"report: {record.report_dir / 'index.html'}")
    record.write_json(PHASES, {k: round(v, 2) for k, v in phases.items()})
    return verdict_code(summary)


def resolved_plan(args, plan: Plan, own: dict, variables: dict, run_dir: Path) -> models.Plan:
    """plan.json of one drill: the command line resolved (`own`: its settings, `variables`: its
    DCs and link shape), typed as the activities take it."""
    return models.Plan(
        experiment=args.experiment,
        configuration=models.PlanConfiguration(
            stack=args.stack,
            run_dir=str(run_dir),
            hold_s=float(settings.hold(args, plan.topology.with_settings(own))),
            rate=float(args.rate),
            keep_topic=bool(args.keep_topic),
            client=args.client,
            idempotence=args.idempotence or "default",
            transaction_size=args.transactions or 0,
            abort_fraction=args.abort_fraction
            if args.abort_fraction is not None
            else (DEFAULT_ABORT_FRACTION if args.transactions else 0.0),
            observers_avoid=experiment.observers_avoid(plan.experiment, variables),
            **variables,
        ),
        settings=models.DrillSettings(**own),
    )


def _quorum_leader_dc(stack: str) -> str | None:
    """The DC of the ZooKeeper ensemble's leader, or of the active KRaft controller; None without one."""
    inv = lifecycle.inventory(stack)
    leader = status.cluster_status(inv)["quorum"]["leader"]
    return next((h.dc for h in inv.hosts("zookeeper", "kafka_controller") if h.name == leader), None)


def _chaos_run(args, record: DrillRecord) -> int:
    """The experiment, given plan.json as its var file: its configuration arrives typed."""
    chaos = Path(sys.executable).parent / "chaos"
    argv = [
        str(chaos),
        "--no-version-check",
        "--log-file",
        str(record.file(CHAOS_LOG)),
        "run",
        "--journal-path",
        str(record.file(JOURNAL)),
        "--var-file",
        str(record.file(PLAN)),
    ]
    argv.append(str(record.file(EXPERIMENT)))
    lock_fd = getattr(args, "stack_lock_fd", None)
    proc = subprocess.Popen(
        argv, env=child_env(), start_new_session=True, pass_fds=() if lock_fd is None else (lock_fd,)
    )

    def forward(signum, _frame):  # Chaos Toolkit plays the rollbacks (strategy: always) on SIGINT
        proc.send_signal(signal.SIGINT)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        # Whatever happened to chaos run: its processes stopped, each fault its state lists undone.
        recovery.heal_stack(args.stack, record, say=lifecycle.say)
    return code


BAD_INPUT_MARKS = ("[failover-no-offsets]",)  # activity failures that are the stack's setup, not the fault's


def _bad_input(journal: dict) -> str | None:
    """An activity that failed because the stack cannot do what the drill asks (exit 2): a
    consumer failover with no translated offsets to start from."""
    for r in journal.get("run", []):
        text = "".join(r.get("exception") or [])
        for mark in BAD_INPUT_MARKS:
            if r.get("status") != "succeeded" and mark in text:
                return text[text.index(mark) :].splitlines()[0]
    return None


def _convergence(record: DrillRecord) -> str:
    """The causes a failed wait read from the cluster and its hosts' logs (convergence.json), with
    where those logs are in the record; empty when no wait gave up."""
    kept = record.read_json(CONVERGENCE)
    if not isinstance(kept, dict) or not kept.get("causes"):
        return ""
    causes = "\n".join(f"  {c}" for c in kept["causes"] if isinstance(c, str))
    return f"\nwhy the cluster did not converge (the hosts' logs: {record.file('logs')}):\n{causes}"


def _fault_problem(record: DrillRecord) -> str | None:
    """Trust faults.jsonl, the journal and the fault state, not chaos run's exit code alone."""
    faults = record.faults()
    if not faults:
        return "faults.jsonl records no fault: the fault action did not run or failed"
    journal = record.journal() or {}
    failed = [
        r["activity"]["name"]
        for r in journal.get("run", []) + journal.get("rollbacks", [])
        if r.get("status") != "succeeded"
    ]
    if failed:
        return f"activities failed: {', '.join(failed)} (see {record.file(JOURNAL)})" + _convergence(record)
    open_faults = [f"{f['fault']} {f['target']}" for f in faults if not f.get("end_ms")]
    if open_faults:
        return f"not healed: {', '.join(open_faults)}"
    return None
