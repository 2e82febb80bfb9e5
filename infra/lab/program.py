"""The lab's Pulumi program: a router, then per DC a namespace with a bridge and a link, then hosts,
each host's firewall (the stack's flow table), and the shaper that delays what crosses DCs."""

from __future__ import annotations

from pathlib import Path

import pulumi

from dcdrill.infra.deployment import Deployment
from dcdrill.infra.lab import firewall, layout, netns, shaper
from dcdrill.infra.lab.resources import Datacenter, Firewall, Host, Link, Router, Shaper

DISK_ROLES = ("zookeeper", "kafka_controller", "kafka_broker", "kafka_mirror")


class Lab(pulumi.ComponentResource):
    """The whole lab: its router, one LabDatacenter per DC, and the shaper between them."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:lab:Lab", name, None, opts)


class LabDatacenter(pulumi.ComponentResource):
    """One DC of the lab: its namespace, its link to the router and its hosts."""

    def __init__(self, name: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__("dcdrill:lab:Datacenter", name, None, opts)


def _child(parent: pulumi.Resource, depends_on: list | None = None) -> pulumi.ResourceOptions:
    # The alias keeps a lab built before the components were there: same resources, no replacement.
    return pulumi.ResourceOptions(
        parent=parent, depends_on=depends_on, aliases=[pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)]
    )


def build(t: Deployment, settings, cache: Path, state: Path) -> dict:
    """Every cluster's hosts and the MirrorMaker 2 hosts, in one lab (a DC belongs to one cluster).
    settings: infra.lab.backend.LabSettings. Returns the stack outputs (layout.build_inventories).
    Paths in the resources' inputs are relative to `state`, the state folder (infra/lab/resources.py)."""
    netns.require_support()
    prefix = settings.subnet_prefix
    lab_dir = layout.lab_dir(state).relative_to(state)
    lab = Lab("lab")
    router = Router("router", prefix, _child(lab))
    links, hosts = [], []
    addresses = layout.addresses(t, prefix)
    for dc in t.datacenters:
        i = layout.dc_index(t, dc.name)
        group = LabDatacenter(f"datacenter-{dc.name}", pulumi.ResourceOptions(parent=lab))
        dc_res = Datacenter(f"dc-{dc.name}", dc.name, _child(group))
        link = Link(f"link-{dc.name}", dc.name, i, prefix, _child(group, [router, dc_res]))
        links.append(link)
        for h in (h for h in t.hosts() if h.dc == dc.name):
            # A power-loss disk under every host a DC loss stops; clients are the observers.
            disk = {"disk_writeback_s": settings.writeback_s} if settings.power_loss and h.role in DISK_ROLES else {}
            hosts.append(
                Host(
                    f"host-{h.short}",
                    {
                        "short": h.short,
                        "name": h.name,
                        "dc": h.dc,
                        "role": h.role,
                        "ip": addresses[h.name],
                        "gateway": f"{prefix}.{i}.1",
                        "prefix": prefix,
                        "lab_dir": str(lab_dir),
                        "hosts_file": str(lab_dir / "hosts.txt"),
                        **disk,
                    },
                    _child(group, [link]),
                )
            )
    # Default-deny on every host, as AWS's security groups: rendered from the same flow table.
    Firewall("firewall", firewall.render(t, addresses, prefix), _child(lab, hosts))
    # Shaped once every DC is linked; the table changes in place (a new latency is no new lab).
    Shaper(
        "links",
        {
            "requested": settings.shaper,
            "prefix": prefix,
            "dcs": len(t.datacenters),
            "state_dir": str(layout.shaper_dir(state).relative_to(state)),
            "links": shaper.table_to_json(layout.link_table(t, settings)),
        },
        _child(lab, links),
    )
    return layout.build_inventories(t, settings, cache, state)
