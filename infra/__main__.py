"""The Pulumi program (`main: infra/` in Pulumi.yaml): one program; the stack's backend builds it.

The stack's config becomes the topology model first; rule violations stop here, before any
resource is registered, naming the rule and the numbers.
"""

import pulumi

from dcdrill.infra import rules, stack
from dcdrill.infra.pulumi_passwords import StackPasswords

raw = pulumi.Config("dcdrill")
OBJECTS = ("cluster", "clusters", "mirrors", "acceptRisks", "lab", "aws")
config = {f"dcdrill:{k}": raw.get_object(k) if k in OBJECTS else raw.get(k) for k in ("backend", "profile", *OBJECTS)}
config = {k: v for k, v in config.items() if v is not None}
try:
    backend = stack.backend_of(config)
    deployment = stack.deployment_of(config, pulumi.get_stack())
except ValueError as exc:  # infra.schema.ConfigError: every bad key path, one per line
    raise pulumi.RunError(str(exc)) from None
problems = rules.blocking(deployment.home, backend.deployment_violations(deployment))
if problems:
    raise pulumi.RunError(
        "refusing to build stack {}: {}".format(
            pulumi.get_stack(), "; ".join(f"[{v.rule}] {v.message}" for v in problems)
        )
    )

for name, value in backend.program(deployment).items():  # inventory (+ inventories, mirrors)
    pulumi.export(name, value)
pulumi.export("topology", stack.resolved(deployment))
# Secrets stay in Pulumi: the state holds them encrypted, `lab up` reads them with --show-secrets.
pulumi.export("passwords", StackPasswords(deployment, raw.get_secret_object("passwords")).passwords)
