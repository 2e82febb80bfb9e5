"""Stack lifecycle: topology -> `pulumi up` -> inventory -> Ansible -> healthy. And back down."""
from __future__ import annotations

import sys
import time

from infra import ansible, pulumi_cli, rules, status
from infra import stack as stacks
from infra.inventory import Inventory
from infra.topology import Topology


class RuleViolation(ValueError):
    def __init__(self, stack: str, violations: list[rules.Violation]):
        self.violations = violations
        super().__init__(f"stack {stack} breaks the multi-DC rules:\n" +
                         "\n".join(f"  [{v.rule}] {v.message}" for v in violations))


def say(msg: str) -> None:
    print(f"dcdrill: {msg}", file=sys.stderr, flush=True)


def violations(stack: str) -> list[rules.Violation]:
    """Every rule the stack breaks: the model's, then its backend's."""
    return stacks.backend(stack).violations(stacks.load(stack))


def checked(stack: str) -> Topology:
    t = stacks.load(stack)
    problems = rules.blocking(t, violations(stack))
    if problems:
        raise RuleViolation(stack, problems)
    return t


def inventory(stack: str) -> Inventory:
    """The configured stack's inventory (what `lab up` wrote), else its Pulumi output."""
    path = ansible.inventory_path(stack)
    if path.exists():
        return Inventory.load(path)
    return Inventory(pulumi_cli.outputs(stack)["inventory"])


def is_up(stack: str) -> bool:
    """Configured and healthy right now."""
    if not ansible.inventory_path(stack).exists():
        return False
    try:
        return status.healthy(status.cluster_status(inventory(stack)))
    except Exception:  # noqa: BLE001 - anything wrong means "not up"
        return False


def wait_healthy(inv: Inventory, timeout_s: float = 240.0, quiet: bool = False) -> dict:
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        st = status.cluster_status(inv)
        if status.healthy(st):
            return st
        line = (f"waiting for the cluster: brokers {sum(b['alive'] for b in st['brokers'])}/{len(st['brokers'])}, "
                f"{st['quorum']['kind']} {st['quorum']['alive']}/{st['quorum']['total']}, offline {st['offline_partitions']}, "
                f"under-replicated {st['under_replicated_partitions']}")
        if line != last and not quiet:
            say(line)
            last = line
        if time.monotonic() > deadline:
            raise TimeoutError(f"cluster not healthy after {timeout_s:.0f}s:\n{status.render(st)}")
        time.sleep(2)


def up(stack: str, quiet: bool = False) -> dict:
    checked(stack)
    stacks.backend(stack).require_support()
    t0 = time.monotonic()
    say(f"pulumi up --stack {stack}")
    pulumi_cli.up(stack)
    inv = Inventory(pulumi_cli.outputs(stack)["inventory"])
    ansible.write_inventory(stack, inv)
    say(f"ansible-playbook site.yml ({time.monotonic() - t0:.0f}s so far)")
    ansible.run_site(stack, quiet=quiet)
    st = wait_healthy(inv, quiet=quiet)
    say(f"stack {stack} is up and healthy in {time.monotonic() - t0:.0f}s")
    return st


def down(stack: str) -> None:
    say(f"pulumi destroy --stack {stack}")
    pulumi_cli.destroy(stack)
    ansible.inventory_path(stack).unlink(missing_ok=True)
