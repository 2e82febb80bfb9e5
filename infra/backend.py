"""Where a stack's hosts live: the lab (network namespaces on this machine) or AWS.

A `Backend` owns everything that differs between them: its typed settings (`dcdrill:lab` or
`dcdrill:aws`), the checks only it can make, the inventory it exports (offline, for `dcdrill
plan`, and from its Pulumi program), and what its Pulumi stack needs. The fault driver that
matches it is chaos.faults.driver_class(backend). Code outside the backends asks the backend;
it never asks which backend it is on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from dcdrill.infra import flows, mirror_rules, rules
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.rules import Violation
from dcdrill.infra.topology import Topology


class Backend(ABC):
    name: str  # the `dcdrill:backend` value
    default_domain: str  # the hosts' DNS domain unless the stack names one

    @abstractmethod
    def check(self, t: Topology) -> list[Violation]:
        """Refusals only this backend can make, before any resource exists."""

    def violations(self, t: Topology) -> list[Violation]:
        """Every rule the topology breaks on this backend: the model's, then the backend's own."""
        return rules.check(t) + self.check(t)

    def check_deployment(self, d: Deployment) -> list[Violation]:
        """This backend's refusals of the whole stack; by default each cluster's own (`check`).
        A backend whose resources the clusters share (AWS: a VPC per region) checks them at once."""
        return [v for c in d.clusters for v in self.check(c)]

    def deployment_violations(self, d: Deployment) -> list[Violation]:
        """Every rule the whole stack breaks: each mirror's (infra/mirror_rules.py, which checks
        each cluster's model rules too), then the backend's own."""
        lacking = [
            Violation("flow-missing", f"the stack's flow table (infra/flows.py) lacks {f}")
            for f in flows.missing(d, flows.table(d))
        ]
        return mirror_rules.check(d) + lacking + self.check_deployment(d)

    @abstractmethod
    def inventory(self, t: Topology) -> Inventory:
        """The inventory as planned, offline (addresses the backend cannot know yet are placeholders)."""

    @abstractmethod
    def program(self, d: Deployment) -> dict:
        """Register the stack's resources (inside a Pulumi program); returns the stack outputs
        `inventory` (and on a replicated stack `inventories` and `mirrors`, infra/lab/layout.py),
        Outputs on backends whose addresses are only known once the resources exist."""

    def require_support(self) -> None:
        """Raise a one-sentence error when this machine cannot drive the backend."""
        return None

    registry = "host registration"  # what a new host must join before host access reaches it

    def unregistered(self, inventory: Inventory) -> list[str]:
        """The inventory's hosts not yet reachable through the backend's registry (SSM on AWS):
        `lab up` waits for none to be left before host access. The lab's hosts are there once
        their namespaces are."""
        return []

    def cannot(self, fault: str) -> str | None:
        """Why this stack cannot inject `fault` (a driver method of chaos/faults/driver.py), though
        its backend's driver has it; None when it can."""
        return None

    def host_side_logs(self, inventory: Inventory) -> dict[str, list[Path]]:
        """{host: [paths on the control]}: logs of what runs beside a host rather than on it, which
        a failed wait brings into the record with the host's own (infra/observe/service_logs.py)."""
        return {}

    def leftovers(self) -> list[str]:
        """What a `lab down` should have removed and did not (names, for a warning)."""
        return []

    def faults_in_place(self, d: Deployment) -> list[str]:
        """What a fault left in the stack's live state, read from the hosts and networks themselves
        (not from any record): `lab up` and `drill` refuse to start while there is any, and `dcdrill
        heal` undoes it. The AWS backend's are the noted changes heal reads from the fault state."""
        return []

    def heal_in_place(self, d: Deployment) -> list[str]:
        """Undo what faults_in_place finds; returns what it undid."""
        return []

    # A copy of each drill's fault state outside the machine that runs the drill: the stack's own
    # bucket on AWS, a folder of the lab's on the lab. `dcdrill heal` reads it when the drill's
    # record was lost with that machine (a CI runner gone mid-drill). `key` names the drill.
    @abstractmethod
    def keep_fault_state(self, inventory: Inventory, key: str, state: dict, credentials: dict | None = None) -> None:
        """Keep `state` (the record's chaos-state.json) as `key`; with no active fault, remove it."""

    @staticmethod
    def parse_kept(where: str, text: bytes | str) -> dict:
        """One kept copy, read back: a JSON object, or ValueError naming the copy."""
        import json

        try:
            state = json.loads(text)
        except ValueError as exc:
            raise ValueError(f"the fault-state copy {where} is not JSON: {exc}") from None
        if not isinstance(state, dict):
            raise ValueError(f"the fault-state copy {where} is not a JSON object")
        return state

    @abstractmethod
    def kept_fault_states(self, inventory: Inventory, credentials: dict | None = None) -> dict[str, dict]:
        """{key: state} of every drill whose copy lists an active fault."""

    def forget_fault_states(self, inventory: Inventory) -> None:
        """The stack is gone: so is every copy (on AWS the bucket goes with it)."""
        return None

    def one_way_ms(self, t: Topology) -> dict[tuple[str, str], float] | None:
        """The configured one-way delay between each ordered pair of DCs, for the produce latency
        prediction (infra/rules.produce_latency); None where the backend does not set it."""
        return None

    def passphrase_file(self) -> Path | None:
        """A file holding the Pulumi secrets passphrase when the backend may choose one (state that
        never leaves the machine); None: the user must set PULUMI_CONFIG_PASSPHRASE(_FILE)."""
        return None

    # Whether the stack's Pulumi state may live on a backend other than this machine's files.
    remote_state_allowed = True
