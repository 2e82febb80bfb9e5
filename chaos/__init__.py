"""dcdrill's Chaos Toolkit extension: DC-aware faults (one set of actions, a driver per backend),
Kafka-aware probes and waits, and the workload as activities. `chaos discover --no-install dcdrill`
lists them (through dcdrill.discover); the experiments in chaos/experiments/ use them."""

__version__ = "0.1.0"
__all__ = ["discover"]


def activity_modules() -> dict[str, list[str]]:
    """Every `actions` and `probes` module under this package (chaos/<target>/actions.py and
    probes.py, the Chaos Toolkit extension layout), found by walking it: a new target is
    discovered without a list to keep."""
    import pkgutil

    found: dict[str, list[str]] = {"action": [], "probe": []}
    for info in pkgutil.walk_packages(__path__, prefix=__name__ + "."):
        leaf = info.name.rsplit(".", 1)[-1]
        if leaf in ("actions", "probes"):
            found["action" if leaf == "actions" else "probe"].append(info.name)
    return {kind: sorted(names) for kind, names in found.items()}


def discover(discover_system: bool = True) -> dict:
    """What `chaos discover` reports: every exported action and probe of the extension."""
    from chaoslib.discovery.discover import discover_actions, discover_probes, initialize_discovery_result

    result = initialize_discovery_result("dcdrill", __version__, "kafka-multi-dc")
    modules = activity_modules()
    for module in modules["action"]:
        result["activities"].extend(discover_actions(module))
    for module in modules["probe"]:
        result["activities"].extend(discover_probes(module))
    return result
