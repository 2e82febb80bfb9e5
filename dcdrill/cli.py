"""The `dcdrill` command: init, setup, plan, schema, lab, status, workload, verify, history,
experiment, drill. Each subcommand's options live in the module named after it; this one builds
the parser and turns the layers' errors into the shared exit codes (dcdrill/exits.py)."""

from __future__ import annotations

import argparse
import os
import signal
import sys

from dcdrill import exits, verify_command

DESCRIPTION = (
    "Drills a multi-datacenter Kafka cluster: lose a DC while a workload runs, then check what "
    "producers were told against what the cluster kept and consumers saw. The stack (a Pulumi "
    "stack) is set up by Pulumi and Ansible on the local lab or AWS, the fault is a Chaos Toolkit "
    "experiment, and the verifier is Spark. Start with `dcdrill drill --stack local`."
)
SIGPIPE_EXIT = 128 + signal.SIGPIPE  # what a shell reports for a writer whose reader went away


def version() -> str:
    """The installed distribution's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("dcdrill")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser(verifier_only: bool = False) -> argparse.ArgumentParser:
    """Every subcommand, in the order --help lists them. `verifier_only`: verify and history alone,
    so that `dcdrill verify` imports neither the lab's nor the drill's modules (pydantic, Pulumi,
    Ansible: a noticeable share of a small verify's time)."""
    p = argparse.ArgumentParser(prog="dcdrill", description=DESCRIPTION, epilog=f"Exit codes: {exits.MEANINGS}.")
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if verifier_only:
        verify_command.register(sub)
        return p
    from dcdrill import drill_command, stack_commands, workload_command

    stack_commands.register(sub)
    workload_command.register(sub)
    verify_command.register(sub)
    drill_command.register(sub)
    return p


def entry() -> None:
    """The `dcdrill` console script and `python -m dcdrill.cli`: a command in a process of its own,
    which ends what it launched (the verifier's JVM) before it returns."""
    try:
        code = main(own_process=True)
        sys.stdout.flush()
    except BrokenPipeError:  # `dcdrill plan --json | head`: the reader left, which is no error of ours
        # Python's own recipe: what is still buffered goes nowhere, so the flush at exit cannot fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = SIGPIPE_EXIT
    sys.exit(code)


def main(argv: list[str] | None = None, own_process: bool = False) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv, own_process)
    except ModuleNotFoundError as exc:  # an extra not installed: named with its install command
        if (line := exits.missing_extra(exc)) is None:
            raise
        print(f"dcdrill: {line}", file=sys.stderr)
        return exits.EXIT_BAD_INPUT


def _main(argv: list[str], own_process: bool) -> int:
    verifier_only = bool(argv) and argv[0] in verify_command.COMMANDS  # (--version is the full parser's)
    args = build_parser(verifier_only).parse_args(argv)
    args.own_process = own_process
    if verifier_only:
        try:
            return args.func(args)
        except ValueError as exc:  # BadInput, BadHistory
            print(f"dcdrill: {exc}", file=sys.stderr)
            return exits.EXIT_BAD_INPUT
    from dcdrill.infra.ansible import AnsibleFailed
    from dcdrill.infra.lab.netns import LabUnavailable
    from dcdrill.infra.observe.hostaccess import HostAccessUnavailable, HostUnreachable
    from dcdrill.infra.pulumi_cli import PulumiError

    try:
        return args.func(args)
    except (
        ValueError,
        LabUnavailable,
        HostAccessUnavailable,
    ) as exc:  # ConfigError, BadInput and the rules' refusals are ValueErrors
        print(f"dcdrill: {exc}", file=sys.stderr)
        return exits.EXIT_BAD_INPUT
    except (
        AnsibleFailed,
        PulumiError,
        HostUnreachable,
    ) as exc:  # the stack could not be built: its logs or hosts are named
        print(f"dcdrill: {exc}", file=sys.stderr)
        return exits.EXIT_FAIL


if __name__ == "__main__":
    entry()
