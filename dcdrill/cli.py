"""The `dcdrill` command: init, setup, plan, lab, status, workload, verify, history, experiment, drill.

Exit codes shared by every subcommand: 0 ok / verdict pass, 1 verdict fail, 2 bad input,
3 fault not injected or heal failed, 4 steady state not met before the fault.
"""
from __future__ import annotations

import argparse
import importlib
import sys

from infra.constants import EXIT_BAD_INPUT, EXIT_FAIL, EXTRAS

# Each package registers the subcommands that live next to its code, in the order --help lists them.
SUBCOMMANDS = ("infra.cli", "validation.cli", "spark.cli", "chaos.cli")
# Subcommands whose package's parser is all they need: `dcdrill verify` imports neither the lab's
# nor the drill's modules (pydantic, Pulumi, Ansible: 0.2 s of every verify).
STANDALONE = {"verify": "spark.cli", "history": "spark.cli"}


def version() -> str:
    """The installed distribution's version (pyproject.toml)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("dcdrill")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


def build_parser(modules=SUBCOMMANDS) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dcdrill", description=__doc__.split("\n\n")[0],
                                epilog="Exit codes: " + __doc__.split("Exit codes shared by every subcommand: ")[1])
    p.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in modules:
        importlib.import_module(name).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    try:
        return _main(sys.argv[1:] if argv is None else argv)
    except ModuleNotFoundError as exc:  # an extra not installed: named with its install command
        extra = EXTRAS.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        print(f"dcdrill: {exc.name} is not installed: pip install 'dcdrill[{extra}]'", file=sys.stderr)
        return EXIT_BAD_INPUT


def _main(argv: list[str]) -> int:
    standalone = STANDALONE.get(argv[0]) if argv else None  # (--version is the full parser's)
    args = build_parser((standalone,) if standalone else SUBCOMMANDS).parse_args(argv)
    if standalone:
        try:
            return args.func(args)
        except ValueError as exc:  # BadInput, BadHistory
            print(f"dcdrill: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    from infra.ansible import AnsibleFailed
    from infra.lab.netns import LabUnavailable
    from infra.pulumi_cli import PulumiError
    try:
        return args.func(args)
    except (ValueError, LabUnavailable) as exc:  # ConfigError, BadInput and the rules' refusals are ValueErrors
        print(f"dcdrill: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (AnsibleFailed, PulumiError) as exc:  # the stack could not be built: its logs are named
        print(f"dcdrill: {exc}", file=sys.stderr)
        return EXIT_FAIL


if __name__ == "__main__":
    sys.exit(main())
