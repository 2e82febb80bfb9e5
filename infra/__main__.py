"""The Pulumi program (`main: infra/` in Pulumi.yaml): one program, the backend picks lab or AWS.

The stack's config becomes the topology model first; rule violations stop here, before any
resource is registered, naming the rule and the numbers.
"""
import pulumi

from infra import rules, stack
from infra.topology import from_config

raw = pulumi.Config("dcdrill")
config = {f"dcdrill:{k}": raw.get_object(k) if k in ("cluster", "acceptRisks", "lab", "aws") else raw.get(k)
          for k in ("backend", "profile", "cluster", "acceptRisks", "lab", "aws")}
config = {k: v for k, v in config.items() if v is not None}
topology = from_config(config, pulumi.get_stack())
problems = rules.blocking(topology)
if problems:
    raise pulumi.RunError("refusing to build stack {}: {}".format(
        pulumi.get_stack(), "; ".join(f"[{v.rule}] {v.message}" for v in problems)))

if topology.backend == "local":
    from infra.lab import program as lab_program

    inventory = lab_program.build(topology, stack.lab_settings(config), stack.cache_dir())
else:
    from infra.aws import program as aws_program

    inventory = aws_program.build(topology, config)

pulumi.export("inventory", inventory)
pulumi.export("topology", topology.to_record())
