"""A benchmark's way into the lab's cluster: the lab firewall drops every dial of the control."""

from __future__ import annotations


def enter_client_namespace(inventory, dc: str | None = None) -> None:
    """Move the calling thread (and the threads it starts after) into a client host's network
    namespace: a benchmark's sampling thread then reads the cluster as an application in that DC
    does. setns(2) moves the thread alone; the rest of the process stays on the control."""
    import ctypes
    import os

    ns = next(h.netns for h in inventory.clients if dc is None or h.dc == dc)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if ctypes.CDLL(None, use_errno=True).setns(fd, 0x40000000) != 0:  # CLONE_NEWNET
            raise OSError(ctypes.get_errno(), f"setns into {ns}")
    finally:
        os.close(fd)
    _resolve_lab_names()


_NAMES: dict[str, str] = {}  # the lab's names as its hosts file says now (a lab rebuilt may differ)


def _resolve_lab_names() -> None:
    """The lab's names resolve on its hosts only (their /etc/hosts is the lab's file); a thread that
    joined a client's network namespace still reads the control's. Python's clients (kafka-python)
    look names up through socket.getaddrinfo: answer them from the lab's file, as a host would.
    The file is read again on each call, so a process that outlives one lab resolves the next."""
    import socket

    from dcdrill.infra.constants import state_dir
    from dcdrill.infra.lab import layout, netns

    names = netns.names((layout.lab_dir(state_dir()) / "hosts.txt").read_text())
    _NAMES.clear()
    _NAMES.update(names)
    if getattr(socket.getaddrinfo, "lab_names", False):
        return
    real = socket.getaddrinfo

    def getaddrinfo(host, *args, **kwargs):
        return real(_NAMES.get(host, host), *args, **kwargs)

    getaddrinfo.lab_names = True
    socket.getaddrinfo = getaddrinfo
