"""dcdrill's Chaos Toolkit extension: DC-aware faults (one set of actions, a driver per backend),
Kafka-aware probes and waits, and the workload as activities. `chaos discover --no-install dcdrill`
lists them (through dcdrill.discover); the experiments in chaos/experiments/ use them."""

__version__ = "0.1.0"
__all__ = ["discover"]

ACTIVITY_MODULES = {
    "action": ("dcdrill.chaos.faults.actions", "dcdrill.chaos.kafka.actions", "dcdrill.chaos.workload.actions"),
    "probe": ("dcdrill.chaos.kafka.probes", "dcdrill.chaos.workload.probes"),
}


def discover(discover_system: bool = True) -> dict:
    """What `chaos discover` reports: every exported action and probe of the extension."""
    from chaoslib.discovery.discover import discover_actions, discover_probes, initialize_discovery_result

    result = initialize_discovery_result("dcdrill", __version__, "kafka-multi-dc")
    for module in ACTIVITY_MODULES["action"]:
        result["activities"].extend(discover_actions(module))
    for module in ACTIVITY_MODULES["probe"]:
        result["activities"].extend(discover_probes(module))
    return result
