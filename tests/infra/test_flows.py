"""The stack's network policy (infra/flows.py): the flows follow the roles a stack has, and
`missing` names what dcdrill dials that a table lacks."""

from dcdrill.infra import flows, stack
from dcdrill.infra.ports import CLIENT_PORT, CONTROLLER_PORT, MIRROR_REST_PORT, ZOOKEEPER_CLIENT_PORT


def targets(stack_name: str) -> set[tuple[str, str, int]]:
    return {f.key for f in flows.table(stack.load_deployment(stack_name))}


def test_a_zookeeper_stack_has_zookeeper_flows_and_no_controller_or_mirror_flow():
    keys = targets("local")
    assert ("kafka_broker", "zookeeper", ZOOKEEPER_CLIENT_PORT) in keys
    assert ("client", "kafka_broker", CLIENT_PORT) in keys
    assert not {k for k in keys if "kafka_controller" in k[:2] or "kafka_mirror" in k[:2]}


def test_a_kraft_stack_has_controller_flows_and_no_zookeeper_flow():
    keys = targets("local-kraft")
    assert {
        ("kafka_broker", "kafka_controller", CONTROLLER_PORT),
        ("client", "kafka_controller", CONTROLLER_PORT),
    } <= keys
    assert not {k for k in keys if "zookeeper" in k[:2]}


def test_a_replicated_stack_lets_mm2_reach_the_brokers_and_its_peers():
    keys = targets("local-replicated")
    assert {("kafka_mirror", "kafka_broker", CLIENT_PORT), ("client", "kafka_mirror", MIRROR_REST_PORT)} <= keys


def test_the_table_is_sorted_and_says_why_for_each_flow():
    table = flows.table(stack.load_deployment("local"))
    assert table == sorted(table) and all(f.why for f in table)
    assert str(table[0]) == f"{table[0].source} -> {table[0].target}:{table[0].port}"


def test_missing_names_each_needed_flow_a_table_lacks_and_the_code_that_needs_it():
    d = stack.load_deployment("local")
    assert flows.missing(d, flows.table(d)) == []
    without = [f for f in flows.table(d) if f.key != ("client", "zookeeper", ZOOKEEPER_CLIENT_PORT)]
    assert flows.missing(d, without) == [
        f"client -> zookeeper:{ZOOKEEPER_CLIENT_PORT} (needed by infra/observe/host_probes.py zookeeper_quorum)"
    ]
