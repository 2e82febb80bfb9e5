#!/usr/bin/python
"""Ansible module: make the cluster's ACLs exactly the declared ones (add missing, remove others).

Runs on one client host with kafka-python (the agents' Python), over SASL_SSL as a super user.
cp-ansible only adds ACLs; declaring them means an ACL removed from the stack config is removed
from the cluster too.
`diff` is the whole decision, a pure function (tests/infra/test_config.py).
"""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule

# The ACL identity: (principal, resource, name, pattern, operation); host "*", permission ALLOW.
Key = tuple


def desired(acls: list[dict]) -> set[Key]:
    return {(a["principal"], a["resource"], a["name"], a["pattern"], op) for a in acls for op in a["operations"]}


def diff(existing: set[Key], wanted: set[Key]) -> tuple[list[Key], list[Key]]:
    """(to add, to remove), each sorted."""
    return sorted(wanted - existing), sorted(existing - wanted)


def _kafka(params: dict):
    from kafka.admin import KafkaAdminClient

    return KafkaAdminClient(
        bootstrap_servers=params["bootstrap"],
        security_protocol="SASL_SSL",
        ssl_cafile=params["cafile"],
        sasl_mechanism="SCRAM-SHA-512",
        sasl_plain_username=params["username"],
        sasl_plain_password=params["password"],
        client_id="dcdrill-ansible",
    )


def _acl(key: Key, cls):
    from kafka.admin import ACLOperation, ACLPermissionType, ACLResourcePatternType, ResourcePattern, ResourceType

    principal, resource, name, pattern, op = key
    return cls(
        principal,
        "*",
        ACLOperation[op.upper()],
        ACLPermissionType.ALLOW,
        ResourcePattern(ResourceType[resource.upper()], name, ACLResourcePatternType[pattern.upper()]),
    )


def existing(admin) -> set[Key]:
    from kafka.admin import (
        ACLFilter,
        ACLOperation,
        ACLPermissionType,
        ACLResourcePatternType,
        ResourcePatternFilter,
        ResourceType,
    )

    everything = ACLFilter(
        None,
        None,
        ACLOperation.ANY,
        ACLPermissionType.ANY,
        ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
    )
    acls, error = admin.describe_acls(everything)
    if error.errno:
        raise RuntimeError(f"describe_acls: {error}")
    # Declared ACLs are ALLOWs from any host; DENY and host-bound ACLs are not managed here.
    return {
        (
            a.principal,
            a.resource_pattern.resource_type.name.lower(),
            a.resource_pattern.resource_name,
            a.resource_pattern.pattern_type.name.lower(),
            a.operation.name.lower(),
        )
        for a in acls
        if a.host == "*" and a.permission_type == ACLPermissionType.ALLOW
    }


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "bootstrap": {"type": "list", "elements": "str", "required": True},
            "cafile": {"type": "str", "required": True},
            "username": {"type": "str", "required": True},
            "password": {"type": "str", "required": True, "no_log": True},
            "acls": {"type": "list", "elements": "dict", "required": True},
        },
        supports_check_mode=True,
    )
    from kafka.admin import ACL, ACLFilter

    admin = _kafka(module.params)
    try:
        add, remove = diff(existing(admin), desired(module.params["acls"]))
        if add and not module.check_mode:
            result = admin.create_acls([_acl(k, ACL) for k in add])
            if result.get("failed"):
                module.fail_json(msg=f"create_acls failed: {result['failed']}")
        if remove and not module.check_mode:
            for _, _, error in admin.delete_acls([_acl(k, ACLFilter) for k in remove]):
                if error.errno:
                    module.fail_json(msg=f"delete_acls failed: {error}")
    finally:
        admin.close()
    module.exit_json(changed=bool(add or remove), added=[list(k) for k in add], removed=[list(k) for k in remove])


if __name__ == "__main__":
    main()
