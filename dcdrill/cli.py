"""The `dcdrill` command: plan, lab, status, workload, verify, history, experiment, drill.

Exit codes shared by every subcommand: 0 ok / verdict pass, 1 verdict fail, 2 bad input,
3 fault not injected or heal failed, 4 steady state not met before the fault.
"""
from __future__ import annotations

import argparse
import sys

from chaos import cli as chaos_cli
from infra import cli as infra_cli
from infra.ansible import AnsibleFailed
from infra.constants import EXIT_BAD_INPUT, EXIT_FAIL
from infra.lab.netns import LabUnavailable
from infra.pulumi_cli import PulumiError
from spark import cli as spark_cli
from validation import cli as validation_cli

# Each package registers the subcommands that live next to its code, in the order --help lists them.
SUBCOMMANDS = (infra_cli.register, validation_cli.register, spark_cli.register, chaos_cli.register)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="dcdrill", description=__doc__.split("\n\n")[0],
                                epilog="Exit codes: " + __doc__.split("Exit codes shared by every subcommand: ")[1])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in SUBCOMMANDS:
        register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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
