"""The lab backend: every host a network namespace on this machine, DCs joined by a router
namespace (infra/lab/netns.py), hosts reached by SSH like any machine (infra/lab/sshd.py)."""

from __future__ import annotations

import os
import secrets
import stat
from pathlib import Path

from dcdrill.infra import schema
from dcdrill.infra.backend import Backend
from dcdrill.infra.constants import cache_dir, state_dir, write_json_atomically
from dcdrill.infra.deployment import Deployment
from dcdrill.infra.inventory import Inventory
from dcdrill.infra.rules import Violation
from dcdrill.infra.schema import LabSpec
from dcdrill.infra.topology import Topology


def lab_passphrase_file(state: Path) -> Path:
    """state/secrets/lab-passphrase: 32 random bytes (URL-safe text), 0600 in a 0700 folder, made
    at the first lab stack and kept. A file anyone else may read or write is refused."""
    folder = state / "secrets"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = folder / "lab-passphrase"
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:  # made before (by this command's first run, or another's)
        pass
    else:
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_urlsafe(32))
    st = path.lstat()
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or st.st_uid != os.getuid():
        raise ValueError(f"{path}: the lab's passphrase must be a file of yours that only you read (chmod 600)")
    return path


# `dcdrill:lab`, validated by infra/schema.py and documented in README ("Stack config reference").
LabSettings = LabSpec


class LabBackend(Backend):
    name = "local"
    default_domain = "lab"

    def __init__(self, config: dict):
        self.settings: LabSettings = schema.parse(config).lab or LabSpec()

    def check(self, t: Topology) -> list[Violation]:
        return []

    def inventory(self, t: Topology) -> Inventory:
        from dcdrill.infra.lab import layout

        return layout.build_inventory(t, self.settings, cache_dir(), state=state_dir())

    def program(self, d: Deployment) -> dict:
        from dcdrill.infra.lab import program

        return program.build(d, self.settings, cache_dir(), state_dir())

    def require_support(self) -> None:
        from dcdrill.infra.lab import layout, netns

        netns.require_support()
        layout.require_reachable(cache_dir())
        layout.require_reachable(state_dir())

    def cannot(self, fault: str) -> str | None:
        if fault == "power_loss" and not self.settings.power_loss:
            return (
                "a power loss needs the lab's disks that lose what was not durable: set `dcdrill:lab` "
                "`powerLoss: true` on the stack (docs/lab.md), then `dcdrill lab up` rebuilds its hosts"
            )
        return None

    def leftovers(self) -> list[str]:
        from dcdrill.infra.lab import disk, netns

        return [f"namespace {ns}" for ns in netns.lab_namespaces()] + [f"disk mounted at {m}" for m in disk.mounts()]

    @staticmethod
    def _kept(inventory: Inventory):
        from dcdrill.infra.lab import layout

        return layout.lab_dir(state_dir()) / "fault-states" / inventory.vars["cluster_name"]

    def keep_fault_state(self, inventory: Inventory, key: str, state: dict, credentials: dict | None = None) -> None:
        path = self._kept(inventory) / f"{key}.json"
        if not state.get("active"):
            path.unlink(missing_ok=True)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomically(path, state)

    def kept_fault_states(self, inventory: Inventory, credentials: dict | None = None) -> dict[str, dict]:
        folder = self._kept(inventory)
        found = (
            {p.stem: self.parse_kept(str(p), p.read_bytes()) for p in sorted(folder.glob("*.json"))}
            if folder.is_dir()
            else {}
        )
        return {k: v for k, v in found.items() if v.get("active")}

    def forget_fault_states(self, inventory: Inventory) -> None:
        import shutil

        shutil.rmtree(self._kept(inventory), ignore_errors=True)

    def host_side_logs(self, inventory) -> dict[str, list[Path]]:
        """Each lab host's disk daemon's log (it runs on the control, beside the host's namespace)."""
        from dcdrill.infra.lab import layout

        disks = layout.lab_dir(state_dir()) / "disks"
        return {
            h.name: [disks / f"{Path(h.vars['data_root']).name}.log"]
            for h in inventory.hosts()
            if h.vars.get("data_root")
        }

    def faults_in_place(self, d: Deployment) -> list[str]:
        """A DC cut off at the router, or a link shaped otherwise than the stack configures it."""
        from dcdrill.infra.lab import layout, netns, shaper

        if not netns.ns_exists(netns.ROUTER):
            return []
        out = [f"{dc} is cut off at the router" for i, dc in enumerate(d.dc_names, 1) if netns.is_isolated(i)]
        out += [f"{short}'s disk is without power" for short in self._unpowered()]
        try:
            live = shaper.installed(layout.shaper_dir(state_dir())).current()
        except shaper.ShaperDown:
            return out
        configured = layout.link_table(d, self.settings)
        names = d.dc_names
        out += [
            f"link {names[a - 1]}->{names[b - 1]} is {live.get((a, b))}, configured {shape}"
            for (a, b), shape in sorted(configured.items())
            if live.get((a, b)) not in (None, shape)
        ]
        return out

    @staticmethod
    def _unpowered() -> list[str]:
        """The lab hosts whose power-loss disk is cut (a power-loss fault not healed)."""
        from dcdrill.infra.lab import disk, layout

        return disk.unpowered(layout.lab_dir(state_dir()))

    def heal_in_place(self, d: Deployment) -> list[str]:
        """Undo what faults_in_place finds: every disk powered, every isolation rule, every link back
        to its configured shape. Returns what it undid."""
        from dcdrill.infra.lab import disk, layout, netns, shaper

        found = self.faults_in_place(d)
        if not found:
            return []
        for short in self._unpowered():
            disk.power(layout.lab_dir(state_dir()), short)
        for i in range(1, len(d.dc_names) + 1):
            netns.heal_isolation(i)
        try:
            links = shaper.installed(layout.shaper_dir(state_dir()))
        except shaper.ShaperDown:
            return found
        links.apply(layout.link_table(d, self.settings))
        return found

    def one_way_ms(self, t: Topology) -> dict[tuple[str, str], float]:
        from dcdrill.infra.lab import layout

        names = t.dc_names
        return {
            (names[a - 1], names[b - 1]): shape.latency_ms
            for (a, b), shape in layout.link_table(t, self.settings).items()
        }

    # A lab's state names this machine's namespaces and holds its passwords: it stays here unless
    # the user says otherwise (DCDRILL_LAB_REMOTE_BACKEND=1, docs/security.md).
    remote_state_allowed = False

    def passphrase_file(self) -> Path:
        """This machine's own passphrase for the lab stacks' Pulumi secrets: random, made once,
        in a file only its owner reads (state/secrets/lab-passphrase)."""
        return lab_passphrase_file(state_dir())
