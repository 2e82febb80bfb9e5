"""The lab's Pulumi program: a router, then per DC a namespace with a bridge and a link, then hosts,
and the shaper that delays what crosses DCs."""
from __future__ import annotations

from pathlib import Path

import pulumi

from infra.lab import layout, netns, shaper
from infra.lab.resources import Datacenter, Host, Link, Router, Shaper
from infra.deployment import Deployment


def build(t: Deployment, settings, cache: Path) -> dict:
    """Every cluster's hosts and the MirrorMaker 2 hosts, in one lab (a DC belongs to one cluster).
    settings: infra.lab.backend.LabSettings. Returns the stack outputs (layout.build_inventories)."""
    netns.require_support()
    prefix = settings.subnet_prefix
    lab = layout.lab_dir(cache)
    hosts_file = lab / "hosts.txt"
    router = Router("router", prefix)
    links = []
    addresses = layout.addresses(t, prefix)
    for dc in t.datacenters:
        i = layout.dc_index(t, dc.name)
        dc_res = Datacenter(f"dc-{dc.name}", dc.name)
        link = Link(f"link-{dc.name}", dc.name, i, prefix, pulumi.ResourceOptions(depends_on=[router, dc_res]))
        links.append(link)
        for h in (h for h in t.hosts() if h.dc == dc.name):
            Host(f"host-{h.short}", {
                "short": h.short, "name": h.name, "dc": h.dc, "role": h.role,
                "ip": addresses[h.name], "gateway": f"{prefix}.{i}.1", "prefix": prefix,
                "lab_dir": str(lab), "hosts_file": str(hosts_file),
            }, pulumi.ResourceOptions(depends_on=[link]))
    # Shaped once every DC is linked; the table changes in place (a new latency is no new lab).
    Shaper("links", {"requested": settings.shaper, "prefix": prefix, "dcs": len(t.datacenters),
                     "state_dir": str(layout.shaper_dir(cache)),
                     "links": shaper.table_to_json(layout.link_table(t, settings))},
           pulumi.ResourceOptions(depends_on=links))
    return layout.build_inventories(t, settings, cache)
