"""`dcdrill drill`: the whole drill in one command.

lab up if needed -> `chaos run` of the experiment (journal kept in the drill record) ->
check the fault really happened and healed -> Spark verifier -> report.
Exit: 0 verdict pass, 1 verdict fail, 2 bad input, 3 fault not injected or heal failed,
4 steady state not met before the fault. With --repeat N or --matrix: the worst of the drills'
exit codes (the series stops at the first 2, 3 or 4: the setup is wrong, not the cluster).
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from chaos import drill, settings
from infra import rules
from infra import stack as stacks

EXPERIMENTS = Path(__file__).resolve().parent / "experiments"
EXIT_PASS, EXIT_FAIL, EXIT_BAD_INPUT, EXIT_NO_FAULT, EXIT_NOT_STEADY = 0, 1, 2, 3, 4
TARGETS_A_DC = {"kill-dc", "isolate-dc", "slow-link"}


def experiments() -> list[str]:
    return sorted(p.stem for p in EXPERIMENTS.glob("*.json"))


def register(sub) -> None:
    p = sub.add_parser("drill", help="the full drill: lab up, experiment, verify, report",
                       description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n")[1])
    p.add_argument("--stack", default="local", help="the stack to drill (Pulumi.<stack>.yaml; default local)")
    p.add_argument("--experiment", default="kill-dc", help=f"one of: {', '.join(experiments())}")
    p.add_argument("--dc", default=None, help="target DC (default: the first DC holding brokers)")
    p.add_argument("--other-dc", default=None, help="slow-link: the other end (default: the next broker DC)")
    p.add_argument("--hold", type=float, default=None,
                   help=f"seconds the fault is held (default {settings.HOLD_S:.0f}; on availability-first stacks "
                        f"{2 * settings.failover_s():.0f}, twice the failover, so writes can resume before the heal)")
    p.add_argument("--rate", type=float, default=200.0, help="records/s per producer (default 200)")
    p.add_argument("--run-dir", type=Path, help="drill record directory (default runs/<time>-<experiment>); "
                                                "with --repeat or --matrix, the series folder")
    p.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="run the drill N times in a row, then compare them as `dcdrill history` does "
                        "(text, and history.html in the series folder)")
    p.add_argument("--force", action="store_true", help="allow a target holding every broker")
    p.add_argument("--keep-topic", action="store_true",
                   help="keep the drill's topic on the cluster (by default it is deleted once the audit has "
                        "copied it into the record)")
    g = p.add_argument_group("the drill's own settings", "instead of the stack's, for this drill's topic and producers "
                             "(the lab is the stack's; `dcdrill plan --stack S --matrix` lists what each setting "
                             "predicts and which profile's rules it meets)")
    g.add_argument("--acks", choices=["0", "1", "all"])
    g.add_argument("--factor", type=int, metavar="N", help="replication factor")
    g.add_argument("--min-insync", type=int, metavar="N", help="min.insync.replicas")
    g.add_argument("--unclean", choices=["on", "off"], help="unclean.leader.election.enable")
    g.add_argument("--profile", choices=["consistency-first", "availability-first"], help="the promise the verdict checks")
    g.add_argument("--matrix", action="store_true",
                   help="a drill (--repeat: N) for every acks x minInsync x unclean setting on the stack's factor that "
                        "meets a profile's rules (`dcdrill plan --matrix`), compared at the end: the predictions tested")
    p.set_defaults(func=run)


def _validate(args) -> tuple:
    own = settings.given(args)
    t = stacks.load(args.stack).with_settings(own)  # UnknownStack lists the valid stacks
    broken = rules.blocking(t) if own else []  # the stack's own settings were checked at `lab up`
    if broken:
        raise ValueError(f"these settings break the {t.profile} rules: "
                         + "; ".join(f"[{v.rule}] {v.message}" for v in broken)
                         + f" (`dcdrill plan --stack {args.stack} --matrix` lists the settings each profile allows)")
    if args.experiment not in experiments():
        raise ValueError(f"unknown experiment {args.experiment!r}; valid: {', '.join(experiments())}")
    broker_dcs = [dc.name for dc in t.broker_dcs]
    dc = args.dc or (broker_dcs[0] if broker_dcs else None)
    if args.experiment in TARGETS_A_DC:
        if dc not in t.dc_names:
            raise ValueError(f"unknown DC {dc!r}; valid: {', '.join(t.dc_names)}")
        if broker_dcs == [dc] and not args.force:
            raise ValueError(f"{dc} holds every broker: the drill would take the whole cluster down "
                             f"(pass --force to do it anyway)")
    if args.repeat < 1:
        raise ValueError(f"--repeat must be at least 1, got {args.repeat}")
    if len(t.datacenters) < 2 and not args.force:
        raise ValueError("the stack has a single DC: a DC drill would take everything down (--force)")
    if args.hold is not None and args.hold <= 0:
        raise ValueError(f"--hold must be > 0 seconds, got {args.hold:g}")
    if args.matrix and own:
        raise ValueError("--matrix drills every setting itself: leave out --acks/--factor/--min-insync/--unclean/--profile")
    other = args.other_dc or next((d for d in broker_dcs if d != dc), None)
    return t, dc, other


def run(args) -> int:
    t, dc, other = _validate(args)
    from infra import lifecycle
    from infra.lab import netns

    if t.backend == "local":
        netns.require_support()
    from spark import verify

    stamp = time.strftime("%Y%m%d-%H%M%S")
    # One Spark session for the whole command, started by the first verify: the drills after the
    # first verify in a warm JVM (35k-record drills on the lab: 16.3 s, then 4.5 s). The idle JVM
    # between verifies costs memory (its heap), not CPU.
    plans = settings.plans(args, t)
    with verify.spark_scope():
        if args.repeat == 1 and not args.matrix:
            return _drill(args, t, plans[0][1], dc, other,
                          (args.run_dir or Path("runs") / f"{stamp}-{args.experiment}").resolve())
        kind = "matrix" if args.matrix else f"x{args.repeat}"
        series = (args.run_dir or Path("runs") / f"{stamp}-{args.experiment}-{kind}").resolve()
        drills = [(name, own, i) for name, own in plans for i in range(1, args.repeat + 1)]
        codes = []
        for n, (name, own, i) in enumerate(drills, 1):
            lifecycle.say(f"drill {n} of {len(drills)}" + (f": {name}" if name else ""))
            codes.append(_drill(args, t, own, dc, other, series / name / f"drill-{i}"))
            if codes[-1] >= EXIT_BAD_INPUT:
                break
    _compare(series)
    return max(codes)


def _compare(series: Path) -> None:
    """The series' drills side by side (spark/history.py), on screen and in history.html."""
    from spark import history

    try:
        summaries = history.load([str(series)])
    except history.BadHistory as exc:  # no drill got as far as its report
        print(f"dcdrill: nothing to compare: {exc}", file=sys.stderr)
        return
    groups = history.groups(summaries)
    (series / "history.html").write_text(history.render_html(groups, summaries))
    print(history.render_text(groups))
    print(f"history: {series / 'history.html'}")


def _drill(args, t, own: dict, dc, other, run_dir: Path) -> int:
    """One drill into `run_dir` with its `own` settings (if any): lab up if needed, experiment,
    checks, verify."""
    from infra import lifecycle, status

    phases: dict[str, float] = {}
    clock = time.monotonic()

    def phase(name: str) -> None:
        nonlocal clock
        phases[name] = phases.get(name, 0) + time.monotonic() - clock
        clock = time.monotonic()

    if not _is_up(args.stack):
        lifecycle.up(args.stack)
    phase("lab up")
    run_dir.mkdir(parents=True, exist_ok=True)
    if own:  # read by chaos/drill.topology() inside the experiment
        (run_dir / drill.SETTINGS_FILE).write_text(json.dumps(own, indent=2, sort_keys=True) + "\n")
    code = _chaos_run(args, t, settings.hold(args, t.with_settings(own)), dc, other, run_dir)
    phase("experiment")
    fault_problem = _fault_problem(run_dir, args.experiment)
    journal = _journal(run_dir)
    lifecycle.say(f"drill record: {run_dir}")
    if journal is None:
        print(f"dcdrill: chaos run left no journal (exit {code}); see {run_dir}/chaos.log", file=sys.stderr)
        return EXIT_NO_FAULT
    if not journal.get("steady_states", {}).get("before", {}).get("steady_state_met", False):
        print("dcdrill: steady state not met before the fault; nothing was injected. Cluster now:\n"
              + status.render(status.cluster_status(lifecycle.inventory(args.stack))), file=sys.stderr)
        return EXIT_NOT_STEADY
    if fault_problem:
        print(f"dcdrill: the drill proves nothing: {fault_problem}", file=sys.stderr)
        return EXIT_NO_FAULT
    from spark import verify

    try:
        verdict_code, summary = verify.verify(str(run_dir))
    except verify.BadInput as exc:
        print(f"dcdrill: the drill record cannot be verified: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    phase("verify")
    print(verify.one_screen(summary))
    print(f"report: {run_dir / 'report' / 'index.html'}")
    (run_dir / "phases.json").write_text(json.dumps({k: round(v, 2) for k, v in phases.items()}, indent=2))
    return verdict_code


def _is_up(stack: str) -> bool:
    from infra import configure, lifecycle, status
    if not configure.inventory_path(stack).exists():
        return False
    try:
        return status.healthy(status.cluster_status(lifecycle.inventory(stack)))
    except Exception:  # noqa: BLE001 - anything wrong means "bring it up"
        return False


def _experiment_file(t, experiment: str, run_dir: Path) -> Path:
    """The experiment as shipped; on AWS stacks its lab faults point at the AWS driver."""
    src = EXPERIMENTS / f"{experiment}.json"
    if t.backend == "local":
        return src
    text = src.read_text().replace('"chaos.lab.actions"', '"chaos.aws.actions"')
    out = run_dir / f"{experiment}.json"
    out.write_text(text)
    return out


def _chaos_run(args, t, hold: float, dc, other, run_dir: Path) -> int:
    chaos = Path(sys.executable).parent / "chaos"
    argv = [str(chaos), "--no-version-check", "--log-file", str(run_dir / "chaos.log"), "run",
            "--journal-path", str(run_dir / "journal.json"),
            "--var", f"stack={args.stack}", "--var", f"run_dir={run_dir}", "--var", f"hold_s:int={int(hold)}",
            "--var", f"rate:float={args.rate}", "--var", f"keep_topic={str(args.keep_topic).lower()}"]
    if dc:
        argv += ["--var", f"dc={dc}"]
    if other:
        argv += ["--var", f"other_dc={other}"]
    argv.append(str(_experiment_file(t, args.experiment, run_dir)))
    env = {**os.environ, "PYTHONPATH": str(stacks.ROOT)}
    proc = subprocess.Popen(argv, env=env, cwd=stacks.ROOT, start_new_session=True)

    def forward(signum, _frame):  # Chaos Toolkit plays the rollbacks (strategy: always) on SIGINT
        proc.send_signal(signal.SIGINT)

    old = {s: signal.signal(s, forward) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = proc.wait()
    finally:
        for s, h in old.items():
            signal.signal(s, h)
        _heal_anyway(args.stack, run_dir, t.backend)
    return code


def _heal_anyway(stack: str, run_dir: Path, backend: str) -> None:
    """Whatever happened to chaos run, leave nothing broken: heal what the state file lists."""
    state = run_dir / "chaos-state.json"
    if not state.exists() or not json.loads(state.read_text()).get("active"):
        return
    cfg = {"stack": stack, "run_dir": str(run_dir)}
    if backend == "local":
        from chaos.lab.actions import heal_dc
    else:
        from chaos.aws.actions import heal_dc
    heal_dc(configuration=cfg)


def _journal(run_dir: Path) -> dict | None:
    path = run_dir / "journal.json"
    return json.loads(path.read_text()) if path.exists() else None


def _fault_problem(run_dir: Path, experiment: str) -> str | None:
    """`chaos run` exits 0 even when the fault action raised: trust faults.jsonl and the state."""
    from spark.record import read_faults
    faults = read_faults(str(run_dir))
    if not faults:
        return "faults.jsonl records no fault: the fault action did not run or failed"
    journal = _journal(run_dir) or {}
    failed = [r["activity"]["name"] for r in journal.get("run", []) + journal.get("rollbacks", [])
              if r.get("status") != "succeeded"]
    if failed:
        return f"activities failed: {', '.join(failed)} (see {run_dir}/journal.json)"
    open_faults = [f"{f['fault']} {f['target']}" for f in faults if not f.get("end_ms")]
    if open_faults:
        return f"not healed: {', '.join(open_faults)}"
    return None
