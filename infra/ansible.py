"""The Ansible runner, the pipeline's step after Pulumi: inventory (the stack output) -> site.yml.

Runs through ansible-runner from Python, with Mitogen's strategy (strategy_env); by hand it is
the same as
    ansible-playbook -i .state/stacks/<stack>/inventory.json site.yml
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from dcdrill.infra import agent_runtime, kraft, passwords, pki
from dcdrill.infra.constants import SHIPPED, cache_dir, state_dir
from dcdrill.infra.inventory import Inventory


class AnsibleFailed(RuntimeError):
    pass


def inventory_path(stack: str, cluster: str | None = None) -> Path:
    """A stack's inventory; on a replicated stack `cluster` names one other than the home cluster
    (each keeps its KRaft ids beside its inventory), or MIRRORS for the MirrorMaker 2 hosts'."""
    base = state_dir() / "stacks" / stack
    return (base / "clusters" / cluster if cluster else base) / "inventory.json"


# The roles' shared inputs (roles/*/meta/argument_specs.yml), in every inventory even when the
# stack does not use them: the roles keep no defaults for what is the inventory's to say.
SHARED_INPUTS = {
    "kafka_tls_dir": "",
    "kafka_sasl_users": [],
    "kafka_sasl_admin": "",
    "kafka_sasl_credentials": "",
    "kafka_super_users": [],
    "zookeeper_secure": False,
    "zookeeper_credentials": "",
    "kafka_cluster_id": "",
    "kafka_initial_controllers": "",
    "kafka_coordination": "zookeeper",
}
MIRRORS = "_mirrors"  # inventory_path's name for the MM2 hosts' inventory (not a valid cluster name)


def tls_dir(stack: str, cluster: str | None = None) -> Path:
    """A cluster's own secrets: its CA, key stores and users' passwords, beside its inventory. Each
    cluster of a replicated stack has its own, so no key or password of one works on another."""
    return inventory_path(stack, cluster).parent / "tls"


def write_inventory(
    stack: str, inventory: Inventory, cluster: str | None = None, stack_passwords: dict | None = None
) -> Path:
    """The inventory Ansible and the clients read. With TLS, the cluster's CA and broker key stores
    are made first (infra/pki.py) and the inventory names their folder (kafka_tls_dir); with
    SASL, its users' passwords too (kafka_sasl_credentials, in the same folder), from
    `stack_passwords`: the cluster's part of Pulumi's `passwords` output ({"sasl": {user: pw},
    "zookeeper": {...}}). The MM2 hosts' inventory names each cluster's instead
    (mirror_security); write the clusters' first."""
    av = inventory.vars
    if av.get("aws_regions"):  # EC2 hosts: ssh through an SSM session, with this control's own key
        from dcdrill.infra.aws import ssm_tunnel

        ssm_tunnel.connect(inventory, inventory_path(stack).parent / "ssh")
    if inventory.clients:  # what roles/dcdrill_agent installs on them, from this control's files
        av.update(agent_runtime.inventory_vars(cache_dir()))
    if cluster == MIRRORS:
        mirror_security(stack, av)
    if (
        av.get("kafka_tls") and cluster != MIRRORS
    ):  # a certificate per broker and quorum voter (KRaft controller or ZooKeeper node)
        hosts = {h.name: h.address for h in inventory.brokers + inventory.voters}
        av["kafka_tls_dir"] = str(pki.ensure(tls_dir(stack, cluster), av["cluster_name"], hosts))
    if av.get("zookeeper_secure"):  # DIGEST-MD5 users: brokers (and Kafka's tools), quorum peers
        av["zookeeper_credentials"] = str(
            passwords.write(
                tls_dir(stack, cluster) / passwords.FILES["zookeeper"],
                _passwords(stack, av, stack_passwords, "zookeeper"),
            )
        )
    if av.get("kafka_sasl") and cluster != MIRRORS:
        av["kafka_sasl_credentials"] = str(
            passwords.write(
                tls_dir(stack, cluster) / passwords.FILES["sasl"], _passwords(stack, av, stack_passwords, "sasl")
            )
        )
    if inventory.kraft:  # one cluster id and one quorum, formatted once (infra/kraft.py)
        ids = kraft.ensure(
            inventory_path(stack, cluster).parent / "kraft.json", [h.name for h in inventory.controllers]
        )
        av["kafka_cluster_id"] = ids["cluster_id"]
        av["kafka_initial_controllers"] = kraft.initial_controllers(
            {h.name: h.node_id for h in inventory.controllers}, ids["directory_ids"]
        )
    # The jars the java role copies to systemd hosts: this control's cache, wherever dcdrill is
    # installed (the role's default, beside the playbook, holds only in a checkout).
    av.setdefault("java_kafka_libs_source", str(cache_dir() / av["java_kafka_libs_folder"] / "libs"))
    for key, unused in SHARED_INPUTS.items():
        av.setdefault(key, unused)
    path = inventory_path(stack, cluster)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(inventory.to_json())
    return path


def _passwords(stack: str, av: dict, stack_passwords: dict | None, kind: str) -> dict[str, str]:
    """One kind of the cluster's passwords, as Pulumi gave them: every user the inventory names."""
    given = (stack_passwords or {}).get(kind) or {}
    users = av["kafka_sasl_users"] if kind == "sasl" else list(passwords.ZOOKEEPER_USERS)
    missing = [u for u in users if not given.get(u)]
    if missing:
        raise AnsibleFailed(
            f"cluster {av['cluster_name']}: the stack's Pulumi output `passwords` has no {kind} "
            f"password for {', '.join(missing)}: run `dcdrill lab up --stack {stack}` (its pulumi up "
            "makes them)"
        )
    return {u: given[u] for u in users}


def mirror_security(stack: str, av: dict) -> None:
    """Each cluster MM2 joins, with that cluster's own CA (`tls_dir`) and the file holding MM2's
    password on it (`sasl_credentials`): MM2 reaches every cluster as that cluster's user."""
    for c in av["kafka_mirror_clusters"]:
        folder = tls_dir(stack, None if c["alias"] == av["cluster_name"] else c["alias"])
        c["tls_dir"] = str(folder) if av.get("kafka_tls") else ""
        c["sasl_credentials"] = str(folder / passwords.FILES["sasl"]) if av.get("kafka_sasl") else ""
        for needed in filter(None, (c["tls_dir"] and folder / "ca.pem", c["sasl_credentials"])):
            if not Path(needed).exists():
                raise AnsibleFailed(
                    f"{needed} is missing: MM2's inventory is written after its clusters' "
                    f"(cluster {c['alias']} was never configured)"
                )


def strategy_env() -> dict:
    """Mitogen's strategy: one Python per host for the whole play, where plain Ansible starts a
    new interpreter for every task on every host and imports its module code from a zip, compiled
    each time. On the 2-core lab the play is CPU-bound, so this shortens a bring-up and a
    re-converge (tests/benchmarks/lab_bringup.py --strategy, docs/benchmarks.md). The same
    connection settings apply: SSH on the lab, SSH over SSM on AWS. DCDRILL_ANSIBLE_STRATEGY=linear
    runs plain Ansible."""
    name = os.environ.get("DCDRILL_ANSIBLE_STRATEGY", "mitogen_linear")
    if not name.startswith("mitogen"):
        return {"ANSIBLE_STRATEGY": name}
    import ansible_mitogen

    return {
        "ANSIBLE_STRATEGY": name,
        "ANSIBLE_STRATEGY_PLUGINS": str(Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"),
    }


def run_site(stack: str, quiet: bool = False, limit: str | None = None, cluster: str | None = None) -> dict:
    """Run site.yml on the stack's inventory (`cluster`: inventory_path's); returns per-host stats
    {host: {"changed": n, "failures": n, ...}}."""
    inventory = inventory_path(stack, cluster)
    aws = bool(Inventory.load(inventory).vars.get("aws_regions"))
    return run_playbook(inventory.parent / "ansible-runner", SHIPPED / "site.yml", inventory, aws, quiet, limit)


def run_playbook(
    private: Path, playbook: Path, inventory: Path, aws: bool, quiet: bool = False, limit: str | None = None
) -> dict:
    """ansible-playbook through ansible-runner (`private`: its folder), with Mitogen's strategy
    and child_env's environment; per-host stats, or AnsibleFailed naming the play's output."""
    import ansible_runner.interface  # heavy import, only when configuring

    shutil.rmtree(private / "artifacts", ignore_errors=True)  # an older dcdrill's, with its environment
    private.mkdir(parents=True, exist_ok=True)
    # ansible-runner writes its child's whole environment into its artifacts: they go to a private
    # temporary folder (0700, outside the cache CI keeps), removed after the run; the play's
    # output is kept beside the inventory (ansible.log).
    artifacts = Path(tempfile.mkdtemp(prefix="dcdrill-ansible-"))
    log = private / "ansible.log"

    def progress(event: dict) -> bool:
        data = event.get("event_data", {})
        if not quiet and event.get("event") == "playbook_on_task_start":
            print(f"  ansible: {data.get('task')}", file=sys.stderr, flush=True)
        if event.get("event") == "runner_on_failed" and not data.get("ignore_errors"):
            res = data.get("res", {})
            print(
                f"  ansible FAILED on {data.get('host')}: {data.get('task')}: "
                f"{res.get('msg') or res.get('stderr') or res}",
                file=sys.stderr,
                flush=True,
            )
        return True

    r = ansible_runner.interface.init_runner(
        private_data_dir=str(private),
        artifact_dir=str(artifacts),
        project_dir=str(SHIPPED),
        playbook=str(playbook),
        inventory=str(inventory),
        quiet=True,
        event_handler=progress,
        limit=limit,
        envvars={
            "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
            "ANSIBLE_ROLES_PATH": str(SHIPPED / "roles"),
            "ANSIBLE_HOST_KEY_CHECKING": "True",  # the inventory names its known_hosts
            "ANSIBLE_PIPELINING": "True",
            "ANSIBLE_FORKS": "10",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            **strategy_env(),
        },
    )
    r.config.env = child_env(r.config.env, aws)
    try:
        r.run()
        stats = r.stats or {}
        _keep_output(artifacts, log)
    finally:
        shutil.rmtree(artifacts, ignore_errors=True)
    per_host: dict[str, dict] = {}
    for key in ("ok", "changed", "failures", "dark", "skipped"):
        for host, n in (stats.get(key) or {}).items():
            per_host.setdefault(host, {})[key] = n
    if r.rc != 0:
        raise AnsibleFailed(f"{playbook.name} failed (rc {r.rc}, status {r.status}); its output: {log}")
    return per_host


# What Ansible's process inherits of this one's environment: what it, ssh and Mitogen need, and
# on AWS the credentials ssh's SSM ProxyCommand uses. Nothing else (the Pulumi passphrase, a CI
# job's tokens) reaches it or ansible-runner's record of its environment.
INHERITED = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "TERM", "TMPDIR", "TZ", "SSH_AUTH_SOCK", "PYTHONPATH")
INHERITED_PREFIXES = ("LC_", "DCDRILL_", "ANSIBLE_", "MITOGEN_")
AWS_PREFIXES = ("AWS_",)
SECRET_NAMES = ("DCDRILL_PULUMI_PASSPHRASE",)  # never passed on, whatever its prefix


def child_env(env: dict, aws: bool) -> dict:
    """`env` (ansible-runner's: this process's environment with the runner's own settings on top)
    less what Ansible does not need: a variable this process has is kept only when INHERITED
    names it (or its prefix), or when the runner set or changed it."""
    prefixes = INHERITED_PREFIXES + (AWS_PREFIXES if aws else ())
    return {
        k: v
        for k, v in env.items()
        if k not in SECRET_NAMES and (os.environ.get(k) != v or k in INHERITED or k.startswith(prefixes))
    }


def _keep_output(artifacts: Path, log: Path) -> None:
    """The play's own output (its stdout, which hides no_log values) beside the inventory, 0600."""
    out = sorted(artifacts.glob("*/stdout"))
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        for path in out:
            f.write(path.read_bytes())


def changed_total(per_host: dict) -> int:
    return sum(h.get("changed", 0) for h in per_host.values())
