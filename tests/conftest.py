import pytest

from infra.topology import from_config


def make(dcs, factor=4, min_insync=3, unclean=False, acks="all", profile="consistency-first", backend="local", **kw):
    cfg = {"dcdrill:backend": backend, "dcdrill:profile": profile,
           "dcdrill:cluster": {"name": "t", "datacenters": [dict(zip(("name", "brokers", "zookeepers"), d)) if isinstance(d, tuple) else d for d in dcs],
                               "replication": {"factor": factor, "minInsync": min_insync, "uncleanLeaderElection": unclean},
                               "producer": {"acks": acks}}}
    cfg.update(kw)
    return from_config(cfg)


@pytest.fixture
def topo():
    return make
