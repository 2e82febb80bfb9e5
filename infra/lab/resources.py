"""Pulumi dynamic resources for the lab: Router, Datacenter, Link, Shaper, Host and Firewall.

Each provider is a thin shell over the plain functions in `infra.lab.netns`, so the same
operations are usable (and tested) without Pulumi. Every create cleans up after itself when
it fails halfway: Pulumi records nothing for a failed create, so whatever it left behind
would be out of `pulumi destroy`'s reach.

Paths in inputs (PATH_KEYS) are relative to the state folder (infra.constants.state_dir),
resolved when a provider acts: a checkout moved elsewhere is the same lab, not a new one.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, Resource, ResourceProvider

from dcdrill.infra.constants import state_dir
from dcdrill.infra.lab import disk, firewall, netns, shaper, sshd

PATH_KEYS = ("lab_dir", "hosts_file", "state_dir")


def in_state(path: str) -> Path:
    """An input's path: relative to the state folder (what the program gives), or absolute (state
    written before paths were relative)."""
    p = Path(path)
    return p if p.is_absolute() else state_dir() / p


def _same(key: str, old, new) -> bool:
    if key in PATH_KEYS and isinstance(old, str) and isinstance(new, str):
        return in_state(old) == in_state(new)
    return old == new


def _replace_on_change(olds: dict, news: dict, in_place: tuple[str, ...] = ()) -> DiffResult:
    changed = sorted(
        k
        for k in set(olds) | set(news)
        if not k.startswith("__") and k != "ns" and not _same(k, olds.get(k), news.get(k))
    )
    replaces = [k for k in changed if k not in in_place]
    return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=True)


def _created(ns: str, props: dict, undo, make) -> CreateResult:
    try:
        make()
    except BaseException:
        undo()
        raise
    return CreateResult(id_=ns, outs={**props, "ns": ns})


class RouterProvider(ResourceProvider):
    def create(self, props):
        return _created(
            netns.ROUTER,
            props,
            lambda: netns.delete_router(props["prefix"]),
            lambda: netns.create_router(props["prefix"]),
        )

    def delete(self, id_, props):
        netns.delete_router(props["prefix"])

    def read(self, id_, props):
        return ReadResult(id_ if netns.ns_exists(netns.ROUTER) else "", props)

    def diff(self, id_, olds, news):
        return _replace_on_change(olds, news)


class DatacenterProvider(ResourceProvider):
    def create(self, props):
        return _created(
            netns.dc_ns(props["dc"]), props, lambda: netns.delete_dc(props["dc"]), lambda: netns.create_dc(props["dc"])
        )

    def delete(self, id_, props):
        netns.delete_dc(props["dc"])

    def read(self, id_, props):
        return ReadResult(id_ if netns.ns_exists(id_) else "", props)

    def diff(self, id_, olds, news):
        return _replace_on_change(olds, news)


class LinkProvider(ResourceProvider):
    """DC bridge <-> router."""

    def create(self, props):
        index = int(props["index"])  # the engine hands numbers back as floats
        return _created(
            f"{netns.ROUTER}/{netns.router_dev(index)}",
            props,
            lambda: netns.delete_link(index),
            lambda: netns.create_link(props["dc"], index, props["prefix"]),
        )

    def delete(self, id_, props):
        netns.delete_link(int(props["index"]))

    def read(self, id_, props):
        alive = netns.link_exists(netns.router_dev(int(props["index"])), netns.ROUTER)
        return ReadResult(id_ if alive else "", props)

    def diff(self, id_, olds, news):
        return _replace_on_change(olds, news)


class ShaperProvider(ResourceProvider):
    """Every DC pair's delay, jitter, loss and bandwidth (infra/lab/shaper.py). A changed table is
    applied in place; `kind` says which shaper runs (netem or the forwarder)."""

    @staticmethod
    def _shaper(props) -> shaper.Shaper:
        return shaper.for_kind(props["requested"], in_state(props["state_dir"]), props["prefix"], int(props["dcs"]))

    def create(self, props):
        s = self._shaper(props)
        table = shaper.table_from_json(props["links"])
        result = _created(f"{netns.ROUTER}/shaper", props, s.remove, lambda: s.install(table))
        result.outs["kind"] = s.kind
        return result

    def update(self, id_, olds, news):
        from pulumi.dynamic import UpdateResult

        s = shaper.installed(in_state(news["state_dir"]))
        s.apply(shaper.table_from_json(news["links"]))
        return UpdateResult(outs={**news, "ns": id_, "kind": s.kind})

    def delete(self, id_, props):
        try:
            shaper.installed(in_state(props["state_dir"])).remove()
        except shaper.ShaperDown:
            pass  # never installed, or already gone with the router

    def read(self, id_, props):
        try:
            shaper.installed(in_state(props["state_dir"])).check()
        except (shaper.ShaperDown, OSError):
            return ReadResult("", props)
        return ReadResult(id_, props)

    def diff(self, id_, olds, news):
        return _replace_on_change({k: v for k, v in olds.items() if k != "kind"}, news, in_place=("links",))


class HostProvider(ResourceProvider):
    """A lab machine: its own namespace on its DC's bridge, a lab name, and sshd; with
    `disk_writeback_s`, its data root on a disk that can lose power (infra/lab/disk.py)."""

    @staticmethod
    def _data_root(props) -> Path:
        return in_state(props["lab_dir"]) / "hosts" / props["short"]

    def create(self, props):
        def make():
            if props.get("disk_writeback_s") is not None:  # before sshd, which writes its pid file there
                disk.start(
                    in_state(props["lab_dir"]), props["short"], self._data_root(props), float(props["disk_writeback_s"])
                )
            netns.create_host(
                props["short"],
                props["dc"],
                props["ip"],
                props["gateway"],
                props["prefix"],
                in_state(props["hosts_file"]),
            )
            netns.set_names({props["name"]: props["ip"]}, in_state(props["hosts_file"]))
            sshd.start(props["short"], props["ip"], in_state(props["lab_dir"]))

        return _created(netns.host_ns(props["short"]), props, lambda: self.delete("", props), make)

    def delete(self, id_, props):
        netns.delete_host(props["short"])  # kills every process in it: sshd, JVMs, clients
        netns.set_names({props["name"]: None}, in_state(props["hosts_file"]))
        lab_dir = in_state(props["lab_dir"])
        if props.get("disk_writeback_s") is not None:
            disk.stop(lab_dir, props["short"], self._data_root(props))
            shutil.rmtree(disk.backing(lab_dir, props["short"]), ignore_errors=True)
        shutil.rmtree(self._data_root(props), ignore_errors=True)

    def read(self, id_, props):
        alive = netns.host_address(props["short"]) == props["ip"]
        if props.get("disk_writeback_s") is not None:
            alive = alive and disk.mounted(self._data_root(props))
        return ReadResult(id_ if alive else "", props)

    def diff(self, id_, olds, news):
        return _replace_on_change(olds, news)


class FirewallProvider(ResourceProvider):
    """Every host's inbound rules (infra/lab/firewall.py), applied in place when the table changes."""

    def create(self, props):
        for short, rules in sorted(props["rules"].items()):
            firewall.apply(short, rules)
        return CreateResult(id_="firewall", outs={**props, "ns": "firewall"})

    def update(self, id_, olds, news):
        from pulumi.dynamic import UpdateResult

        self.create(news)
        return UpdateResult(outs={**news, "ns": id_})

    def delete(self, id_, props):
        pass  # the rules live in the hosts' namespaces and go with them

    @staticmethod
    def _in_place(rules: dict[str, str]) -> bool:
        return all(
            netns.ns_exists(netns.host_ns(short)) and firewall.installed(short) == firewall.expected(text)
            for short, text in rules.items()
        )

    def read(self, id_, props):
        # Rules lost (a host rebuilt behind Pulumi's back) are drift, not a deleted firewall: the
        # live rules become the state, and the next `up` puts the table back in place.
        if self._in_place(props["rules"]):
            return ReadResult(id_, props)
        live = {
            short: "\n".join(firewall.installed(short)) if netns.ns_exists(netns.host_ns(short)) else ""
            for short in props["rules"]
        }
        return ReadResult(id_, {**props, "rules": live})

    def diff(self, id_, olds, news):
        # A host this run replaced came back without rules: the live rules count, not only the inputs.
        found = _replace_on_change(olds, news, in_place=("rules",))
        if not found.changes and not self._in_place(news["rules"]):
            return DiffResult(changes=True, replaces=[], delete_before_replace=True)
        return found


class Router(Resource):
    def __init__(self, name: str, prefix: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(RouterProvider(), name, {"prefix": prefix, "ns": None}, opts)


class Datacenter(Resource):
    def __init__(self, name: str, dc: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(DatacenterProvider(), name, {"dc": dc, "ns": None}, opts)


class Link(Resource):
    def __init__(self, name: str, dc: str, index: int, prefix: str, opts: pulumi.ResourceOptions | None = None):
        super().__init__(LinkProvider(), name, {"dc": dc, "index": index, "prefix": prefix, "ns": None}, opts)


class Shaper(Resource):
    def __init__(self, name: str, props: dict, opts: pulumi.ResourceOptions | None = None):
        super().__init__(ShaperProvider(), name, {**props, "ns": None, "kind": None}, opts)


class Host(Resource):
    def __init__(self, name: str, props: dict, opts: pulumi.ResourceOptions | None = None):
        super().__init__(HostProvider(), name, {**props, "ns": None}, opts)


class Firewall(Resource):
    def __init__(self, name: str, rules: dict[str, str], opts: pulumi.ResourceOptions | None = None):
        super().__init__(FirewallProvider(), name, {"rules": rules, "ns": None}, opts)
