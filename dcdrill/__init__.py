"""dcdrill: multi-datacenter Kafka drills, one import package.

Its own modules are the command layer: the `dcdrill` command (cli.py and a module per group of
subcommands), the drill's orchestration (drill.py), the user's project (project.py) and the exit
codes (exits.py). Below them, the layers keep the design card's folders at the top of a checkout,
and this package reaches them through links of the same names (dcdrill/infra -> ../infra, ...):
`import dcdrill.infra` works in a checkout as installed, and a wheel, whose builder follows the
links, holds them as real subpackages, so `pip install` adds `dcdrill` and nothing else.
The layers, top to bottom (pyproject.toml [tool.importlinter] checks them): chaos (Chaos Toolkit
extension, fault drivers), spark (the checker) | validation (the workload), record (the drill
record), infra (topology model, rules, provisioning).
"""

import os

# gRPC (Pulumi's Automation API, in this process) restarts its poller threads in every forked
# child, where subprocess then closes their epoll descriptor: the child can abort before it execs
# (SIGABRT, "epoll_wait error: Bad file descriptor"; docs/benchmarks.md has how often).
# pyspark starts the verifier's JVM with a fork, so a drill's verify died that way now and then.
# Set before anything imports grpc; a user's own setting stands.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "0")

__all__ = ["discover"]


def discover(discover_system: bool = True) -> dict:
    """`chaos discover --no-install dcdrill`: Chaos Toolkit imports the distribution's name as a
    module and calls its discover(); this one answers as dcdrill.chaos does."""
    from dcdrill.chaos import discover as chaos_discover

    return chaos_discover(discover_system)
