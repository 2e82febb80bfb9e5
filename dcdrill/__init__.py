"""dcdrill: multi-datacenter Kafka drills. This package is the `dcdrill` command itself, the
composition root that puts the layers below it together (pyproject.toml [tool.importlinter])."""

__all__ = ["discover"]


def discover(discover_system: bool = True) -> dict:
    """`chaos discover --no-install dcdrill`: Chaos Toolkit looks for discover() in one of the
    distribution's top-level packages, whichever it finds first; this one answers as chaos does."""
    from chaos import discover as chaos_discover

    return chaos_discover(discover_system)
