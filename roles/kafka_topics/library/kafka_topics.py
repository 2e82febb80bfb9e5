#!/usr/bin/python
"""Ansible module: create the declared topics the cluster lacks; existing ones are left alone.

Runs on one client host with kafka-python (the agents' Python), as a client of the brokers'
CLIENT listener: one process for every topic, where Kafka's TopicCommand starts a JVM per
topic, each seconds of CPU on a lab's busy cores.
`missing` is the whole decision, a pure function (tests/infra/test_config.py).
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule


def missing(declared: list[dict], existing: set[str], replication_factor: int, min_insync: int) -> list[dict]:
    """The declared topics the cluster lacks, sorted by name, each with its replication settings
    (its own, or the stack's)."""
    return sorted(
        (
            {
                "name": t["name"],
                "partitions": int(t["partitions"]),
                "replication_factor": int(t.get("replication_factor") or replication_factor),
                "min_insync": int(t.get("min_insync") or min_insync),
            }
            for t in declared
            if t["name"] not in existing
        ),
        key=lambda t: t["name"],
    )


def _admin(params: dict):
    from kafka.admin import KafkaAdminClient

    protocol = params["security_protocol"]
    tls = {"ssl_cafile": params["cafile"]} if protocol in ("SSL", "SASL_SSL") else {}
    sasl = (
        {
            "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": params["username"],
            "sasl_plain_password": params["password"],
        }
        if protocol.startswith("SASL")
        else {}
    )
    return KafkaAdminClient(
        bootstrap_servers=params["bootstrap"], security_protocol=protocol, client_id="dcdrill-ansible", **tls, **sasl
    )


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "bootstrap": {"type": "list", "elements": "str", "required": True},
            "security_protocol": {"type": "str", "required": True, "choices": ["PLAINTEXT", "SSL", "SASL_SSL"]},
            "cafile": {"type": "str"},
            "username": {"type": "str"},
            "password": {"type": "str", "no_log": True},
            "topics": {"type": "list", "elements": "dict", "required": True},
            "replication_factor": {"type": "int", "required": True},
            "min_insync": {"type": "int", "required": True},
        },
        required_if=[
            ("security_protocol", "SSL", ["cafile"]),
            ("security_protocol", "SASL_SSL", ["cafile", "username", "password"]),
        ],
        supports_check_mode=True,
    )
    from kafka.admin import NewTopic
    from kafka.errors import TopicAlreadyExistsError

    admin = _admin(module.params)
    try:
        p = module.params
        create = missing(p["topics"], set(admin.list_topics()), p["replication_factor"], p["min_insync"])
        for t in create if not module.check_mode else []:
            try:  # one request per topic: one that a racing run made is not an error
                admin.create_topics(
                    [
                        NewTopic(
                            t["name"],
                            t["partitions"],
                            t["replication_factor"],
                            topic_configs={"min.insync.replicas": str(t["min_insync"])},
                        )
                    ]
                )
            except TopicAlreadyExistsError:
                pass
    finally:
        admin.close()
    module.exit_json(changed=bool(create), created=[t["name"] for t in create])


if __name__ == "__main__":
    main()
