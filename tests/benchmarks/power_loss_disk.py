"""What the power-loss disks cost (`dcdrill:lab` `powerLoss: true`, infra/lab/disk): the same
stack brought up without them and with them, one after the other in one run, each measured at the
default drill load (3 producers x 200 records/s, 2 consumers, acks=all) after a warm-up load.

    .venv/bin/python tests/benchmarks/power_loss_disk.py [--stack local] [--seconds 40]
                                                         [--warmup 10] [--warm-load 60]

Each variant runs in a project of its own (`dcdrill init` into a temporary folder, the stack's
file copied in with `powerLoss` set), so the two differ in that key only. Brings the stack's lab
down first and leaves it down. Prints produce latency (p50, p99), the machine's idle share, and
CPU by process kind, the disks' daemons included.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # run as a script: the checkout's tests/ importable

from dcdrill.infra import lifecycle  # noqa: E402
from tests.benchmarks import quiet_lab, variant  # noqa: E402

quiet_lab.KINDS["disk"] = b"dcdrill-disk"
DEFAULT_LOAD = {"broker_opts": None, "spec": {}}


def variant_project(stack: str, power_loss: bool) -> Path:
    return variant.project_with(
        stack,
        f"dcdrill-disk-bench-{'on' if power_loss else 'off'}-",
        lambda cfg: cfg.setdefault("dcdrill:lab", {}).update(powerLoss=power_loss),
    )


def main() -> None:
    args = quiet_lab.load_arguments(__doc__.split("\n\n")[0], 60.0, "lab up").parse_args()
    results = []
    lifecycle.down(args.stack)
    for power_loss in (False, True):
        os.environ["DCDRILL_PROJECT"] = str(variant_project(args.stack, power_loss))
        name = f"powerLoss: {str(power_loss).lower()}"
        try:
            lifecycle.up(args.stack, quiet=True)
            inv = lifecycle.inventory(args.stack)
            if args.warm_load > 0:
                quiet_lab.warm(inv, DEFAULT_LOAD, args.warm_load)
            results.append(quiet_lab.measure(inv, name, DEFAULT_LOAD, args.seconds, args.warmup))
            print(json.dumps(results[-1]), flush=True)
        finally:
            lifecycle.down(args.stack)
    print(
        f"\n{args.stack}, default drill load, {args.seconds:g} s each after {args.warm_load:g} s of load, "
        f"latency after a {args.warmup:g} s warm-up:"
    )
    quiet_lab.print_table(results, 20)


if __name__ == "__main__":
    main()
