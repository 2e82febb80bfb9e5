"""Stack lifecycle: topology -> `pulumi up` -> inventory -> Ansible -> healthy. And back down."""

from __future__ import annotations

import shutil
import sys
import time

from dcdrill.infra import ansible, passwords, pulumi_cli, rules, schema
from dcdrill.infra import stack as stacks
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.observe import host_keys, hostaccess, open_drills, status, status_text
from dcdrill.infra.topology import Topology


class NotUp(ValueError):
    """A command that needs the stack's hosts, before `lab up` (exit 2, naming the command to run)."""


class RuleViolation(ValueError):
    def __init__(self, stack: str, violations: list[rules.Violation]):
        self.violations = violations
        super().__init__(
            f"stack {stack} breaks the multi-DC rules:\n" + "\n".join(f"  [{v.rule}] {v.message}" for v in violations)
        )


def say(msg: str) -> None:
    print(f"dcdrill: {msg}", file=sys.stderr, flush=True)


def violations(stack: str) -> list[rules.Violation]:
    """Every rule the stack breaks: the model's (every cluster's and mirror's), then its backend's."""
    return stacks.backend(stack).deployment_violations(stacks.load_deployment(stack))


def checked(stack: str) -> Topology:
    t = stacks.load(stack)
    problems = rules.blocking(t, violations(stack))
    if problems:
        raise RuleViolation(stack, problems)
    return t


def _key(stack: str, cluster: str | None) -> str | None:
    """inventory_path's key of a cluster: None for the home cluster (a stretched stack's only one)."""
    if cluster is None or cluster == ansible.MIRRORS:
        return cluster
    names = stacks.load_deployment(stack).cluster_names
    if cluster not in names:
        raise KeyError(f"stack {stack} has no cluster {cluster!r}; valid: {', '.join(names)}")
    return None if cluster == names[0] else cluster


def inventory(stack: str, cluster: str | None = None) -> Inventory:
    """The configured stack's inventory (what `lab up` wrote), else its Pulumi output: the home
    cluster's, or on a replicated stack that of `cluster` (ansible.MIRRORS: the MM2 hosts')."""
    path = ansible.inventory_path(stack, _key(stack, cluster))
    if path.exists():
        return Inventory.load(path)
    outs = pulumi_cli.outputs(stack)
    key = "inventory" if cluster is None else "mirrors" if cluster == ansible.MIRRORS else "inventories"
    if key not in outs:  # never brought up (or brought down): no host to ask
        raise NotUp(f"stack {stack} is not up (no inventory yet): dcdrill lab up --stack {stack}")
    return Inventory(outs[key] if key != "inventories" else outs[key][cluster])


def inventories(stack: str) -> dict[str, Inventory]:
    """Every cluster's inventory, by cluster name (one on a stretched stack)."""
    names = stacks.load_deployment(stack).cluster_names
    return {name: inventory(stack, name) for name in names}


def unanswered_hosts(stack: str) -> list[str]:
    """The configured stack's hosts that do not answer on host access (infra/observe/hostaccess.py); none
    on a stack never configured (its hosts are made by `up`)."""
    if not ansible.inventory_path(stack).exists():
        return []
    d = stacks.load_deployment(stack)
    found = [*inventories(stack).values(), *([inventory(stack, ansible.MIRRORS)] if d.mirrors else [])]
    return [name for inv in found for name in hostaccess.unanswered(inv)]


# SSM agents on new instances register within minutes; a host missing after this is named.
REGISTRATION_WAIT_S = 900.0
REGISTRATION_POLL_S = 10.0


def wait_registered(
    stack: str,
    inventories: list[Inventory],
    timeout_s: float = REGISTRATION_WAIT_S,
    poll_s: float = REGISTRATION_POLL_S,
    quiet: bool = False,
) -> None:
    """Until every host is in the backend's registry (SSM on AWS), saying how many are, bounded:
    raise HostUnreachable naming those still missing after `timeout_s`."""
    backend = stacks.backend(stack)
    total = sum(len(inv.hosts()) for inv in inventories)
    t0 = time.monotonic()
    while missing := [name for inv in inventories for name in backend.unregistered(inv)]:
        waited = time.monotonic() - t0
        if waited >= timeout_s:
            raise hostaccess.HostUnreachable(
                f"{backend.registry}: {len(missing)} of {total} hosts not registered after {waited:.0f}s: "
                + ", ".join(missing)
            )
        if not quiet:
            more = f" and {len(missing) - 4} more" if len(missing) > 4 else ""
            say(
                f"waiting for {backend.registry}: {total - len(missing)}/{total} hosts registered, "
                f"not yet {', '.join(missing[:4])}{more} ({waited:.0f}s of {timeout_s:.0f}s)"
            )
        time.sleep(min(poll_s, timeout_s - waited))


def require_hosts_answer(stack: str) -> None:
    """Raise HostUnreachable naming every host of the stack that does not answer on host access."""
    if lost := unanswered_hosts(stack):
        raise hostaccess.HostUnreachable("host access: " + "; ".join(lost) + " did not answer")


def is_up(stack: str) -> bool:
    """Configured and healthy right now: every cluster, and every MirrorMaker 2 node, with no DC
    cut off and every link as configured (a fault left in place is not up)."""
    if not ansible.inventory_path(stack).exists():
        return False
    try:
        d = stacks.load_deployment(stack)
        if stacks.backend(stack).faults_in_place(d):
            return False
        if not all(status.healthy(status.cluster_status(inv)) for inv in inventories(stack).values()):
            return False
        return not d.mirrors or all(
            m["alive"] for m in status.mirror_status(inventory(stack, ansible.MIRRORS), via=inventory(stack))
        )
    except Exception:  # noqa: BLE001 - anything wrong means "not up"
        return False


def wait_healthy(inv: Inventory, timeout_s: float = 240.0, quiet: bool = False) -> dict:
    deadline = time.monotonic() + timeout_s
    last = ""
    while True:
        st = status.cluster_status(inv)
        if status.healthy(st):
            return st
        line = (
            f"waiting for the cluster: brokers {sum(b['alive'] for b in st['brokers'])}/{len(st['brokers'])}, "
            f"{st['quorum']['kind']} {st['quorum']['alive']}/{st['quorum']['total']}, "
            f"offline {st['offline_partitions']}, "
            f"under-replicated {st['under_replicated_partitions']}"
        )
        if line != last and not quiet:
            say(line)
            last = line
        if time.monotonic() > deadline:
            raise TimeoutError(f"cluster not healthy after {timeout_s:.0f}s:\n{status_text.render(st)}")
        time.sleep(2)


def up(stack: str, quiet: bool = False) -> dict:
    checked(stack)
    stacks.backend(stack).require_support()
    if stacks.load_config(stack).get("dcdrill:passwords"):  # secrets: only Pulumi reads them
        _refuse(passwords.refusals(pulumi_cli.chosen_passwords(stack), "dcdrill:passwords"))
    t0 = time.monotonic()
    say(f"pulumi up --stack {stack}")
    pulumi_cli.up(stack, progress=not quiet)
    outs = pulumi_cli.outputs(stack)
    d = stacks.load_deployment(stack)
    # (inventory_path key, inventory): each cluster's, home first, then the MM2 hosts'
    parts = [(None, Inventory(outs["inventory"]))]
    if d.replicated:
        parts += [(name, Inventory(outs["inventories"][name])) for name in d.cluster_names[1:]]
        parts.append((ansible.MIRRORS, Inventory(outs["mirrors"])))
    made = outs.get("passwords") or {}  # secrets: Pulumi decrypted them for `stack output --show-secrets`
    _refuse(passwords.refusals(made, "the stack's Pulumi output `passwords`"))  # state is input too
    for key, inv in parts:
        ansible.write_inventory(stack, inv, key, made.get(inv.vars["cluster_name"]))
        hostaccess.close_masters(inv)  # an earlier lab's, to hosts at these addresses that are gone
    wait_registered(stack, [inv for _, inv in parts], quiet=quiet)
    for _, inv in parts:
        host_keys.learn(inv)  # a new EC2 host's key, at first contact; the lab's are pinned
    require_hosts_answer(stack)  # before Ansible, whose failure would name no host
    st = {}
    for key, inv in parts:
        what = {None: "", ansible.MIRRORS: " (MirrorMaker 2)"}.get(key, f" (cluster {key})")
        say(f"ansible-playbook site.yml{what if d.replicated else ''} ({time.monotonic() - t0:.0f}s so far)")
        ansible.run_site(stack, quiet=quiet, cluster=key)
        if key != ansible.MIRRORS:  # before MM2, which needs every cluster up
            healthy = wait_healthy(inv, quiet=quiet)
            st = st or healthy
    say(f"stack {stack} is up and healthy in {time.monotonic() - t0:.0f}s")
    return st


def _refuse(problems: list[str]) -> None:
    if problems:
        raise schema.ConfigError("; ".join(problems) + " (docs/security.md); no host was configured")


def down(stack: str) -> None:
    say(f"pulumi destroy --stack {stack}")
    home = ansible.inventory_path(stack)
    kept = Inventory.load(home) if home.exists() else None
    if kept is not None:
        hostaccess.close_masters(kept)  # the hosts are going: so are the connections to them
    try:
        pulumi_cli.destroy(stack)
    except pulumi_cli.PulumiError as failed:  # name what is still there: it costs, and may block the next up
        try:
            left = pulumi_cli.remaining(stack)
        except (pulumi_cli.PulumiError, ValueError):  # the state cannot say: the failure alone
            raise failed from None
        raise pulumi_cli.PulumiError(
            f"{failed}\n{len(left)} resources of stack {stack} could not be deleted"
            + "".join(f"\n  {r}" for r in left)
            + f"\nrun `dcdrill lab down --stack {stack}` again, or delete them by hand"
        ) from None
    open_drills.forget_all(stack)
    if kept is not None:
        stacks.backend(stack).forget_fault_states(kept)
    # The stack's state folder goes whole: its inventories, CAs and keys, passwords, KRaft ids,
    # the play's output. Nothing of a destroyed stack's secrets stays on the machine.
    shutil.rmtree(home.parent, ignore_errors=True)
