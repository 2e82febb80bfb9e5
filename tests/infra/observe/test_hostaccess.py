"""One host-access model on both backends (issue 40): the inventory's ansible_host is an id only the
connection understands, the login is unprivileged and plays become root, and service addresses
are the inventory's DNS names. The lab takes the same path as AWS, so these hold for both."""

import ipaddress
import json
import re
from pathlib import Path

import pytest
import yaml

from dcdrill.infra import ansible, stack
from dcdrill.infra.constants import KAFKA_VERSIONS, SHIPPED
from dcdrill.infra.lab import layout
from tests import ansible_localhost

ROLE_FILES = sorted(p for p in (SHIPPED / "roles").rglob("*") if p.suffix in (".yml", ".j2"))


@pytest.mark.parametrize("path", ROLE_FILES, ids=lambda p: str(p.relative_to(SHIPPED)))
def test_roles_dial_dns_names_never_the_connection_id(path):
    # On AWS ansible_host is an instance id (SSM): a task dialing it, or a listener bound to it,
    # fails there; on the lab it is a namespace id, so it fails here too.
    assert not re.search(r"\bansible_host\b", path.read_text()), f"{path} uses ansible_host"


def test_every_play_on_cluster_hosts_becomes_root():
    plays = yaml.safe_load((SHIPPED / "site.yml").read_text())
    remote = [p for p in plays if p["hosts"] != "localhost"]
    assert remote and all(p.get("become") is True for p in remote), [p["name"] for p in remote if not p.get("become")]


@pytest.mark.parametrize("name", ["local", "local-replicated"])
def test_the_lab_logs_in_unprivileged_by_an_id_only_ssh_resolves(name):
    d = stack.load_deployment(name)
    outs = layout.build_inventories(d, stack.backend(name).settings, Path("/tmp/cache"))
    for inv in [outs["inventory"], *outs.get("inventories", {}).values(), *filter(None, [outs.get("mirrors")])]:
        assert inv["all"]["vars"]["ansible_user"] not in ("root", "0")
        for group in inv["all"]["children"].values():
            for dns, hv in group["hosts"].items():
                with pytest.raises(ValueError):
                    ipaddress.ip_address(hv["ansible_host"])
                assert "." not in hv["ansible_host"] and hv["ansible_host"] != dns
                ipaddress.ip_address(hv["ansible_ssh_extra_args"].removeprefix("-o HostName="))


def test_the_jars_come_from_this_controls_cache(tmp_path, monkeypatch):
    # An installed wheel has no .cache beside its playbook: the inventory names the control's.
    # So do the client hosts' Python packages (infra/agent_runtime.py), which setup downloads.
    from dcdrill.infra import agent_runtime, pulumi_passwords

    monkeypatch.setenv("DCDRILL_CACHE", str(tmp_path))
    d = stack.load_deployment("local-replicated")
    outs = layout.build_inventories(d, stack.backend("local-replicated").settings, tmp_path, tmp_path)
    made = {
        c: {kind: {u: f"{c}-{u}" for u in users} for kind, users in kinds.items()}
        for c, kinds in pulumi_passwords.wanted(d).items()
    }  # what the stack's Pulumi output holds
    with pytest.raises(FileNotFoundError, match="dcdrill setup"):
        ansible.write_inventory("local-replicated", ansible.Inventory(outs["inventory"]), None, made["east"])
    wheels = agent_runtime.wheels_dir(tmp_path)
    wheels.mkdir(parents=True)
    (wheels / ".complete").write_text("")
    for cluster, data in (
        ("east", outs["inventory"]),
        ("west", outs["inventories"]["west"]),
        (ansible.MIRRORS, outs["mirrors"]),
    ):
        path = ansible.write_inventory(
            "local-replicated", ansible.Inventory(data), None if cluster == "east" else cluster, made.get(cluster)
        )
        av = json.loads(path.read_text())["all"]["vars"]
        assert av["java_kafka_libs_source"] == str(tmp_path / KAFKA_VERSIONS[d.mirror_kafka_version] / "libs")
        if cluster != ansible.MIRRORS:  # MM2's hosts run no agent
            assert av["dcdrill_agent_wheels"] == str(wheels)
            assert Path(av["dcdrill_agent_bundle"]).parent == tmp_path / "agent"


def test_every_host_a_slow_link_shapes_gets_tc_and_netem():
    # AWS's slow-link runs `tc qdisc ... netem` through SSM on these hosts; Amazon Linux 2023 has
    # neither tc nor sch_netem until the link_shaping role installs them.
    from dcdrill.chaos.faults.aws import SHAPED_ROLES

    plays = yaml.safe_load((SHIPPED / "site.yml").read_text())
    [play] = [p for p in plays if "link_shaping" in p.get("roles", [])]
    assert set(play["hosts"].split(":")) == set(SHAPED_ROLES) and play["become"] is True
    tasks = yaml.safe_load((SHIPPED / "roles" / "link_shaping" / "tasks" / "main.yml").read_text())
    defaults = yaml.safe_load((SHIPPED / "roles" / "link_shaping" / "defaults" / "main.yml").read_text())
    assert "iproute-tc" in defaults["link_shaping_packages"]
    assert tasks[1]["ansible.builtin.dnf"]["name"] == "{{ link_shaping_packages + [link_shaping_modules_package] }}"
    # sch_netem's package follows the running kernel: both kernels the AMI filter matches (issue 69, item 3)
    defaults_file = SHIPPED / "roles" / "link_shaping" / "defaults" / "main.yml"
    for kernel, package in (
        ("6.1.147-172.266.amzn2023.x86_64", "kernel-modules-extra"),
        ("6.12.40-63.114.amzn2023.x86_64", "kernel6.12-modules-extra"),
    ):
        res = ansible_localhost(
            "ansible.builtin.debug",
            "msg={{ link_shaping_modules_package }}",
            f"@{defaults_file}",
            f"link_shaping_kernel_release={kernel}",
        )
        assert f'"msg": "{package}"' in res.stdout, res.stdout + res.stderr
