"""The lab's layout (infra/lab/layout.py): each DC pair's link shape, an address and a service uid
per host, unique in the lab, and a clear refusal when the services could not reach their files."""

import shutil
import tempfile
from pathlib import Path

import pytest

from dcdrill.infra import stack
from dcdrill.infra.lab import layout
from dcdrill.infra.lab.netns import LabUnavailable
from dcdrill.infra.lab.shaper import LinkShape
from tests.infra.lab.test_shaper import settings_and_topology


def test_every_ordered_pair_gets_the_lab_wide_shape_then_its_link_override():
    settings, t = settings_and_topology(
        latencyMs=5, jitterMs=1, links=[{"between": ["dc-a", "dc-c"], "latencyMs": 40, "rateMbit": 100}]
    )
    table = layout.link_table(t, settings)
    assert sorted(table) == [(1, 2), (1, 3), (2, 1), (2, 3), (3, 1), (3, 2)]
    assert table[(1, 2)] == table[(2, 1)] == table[(2, 3)] == LinkShape(5, 1, 0, 0)
    assert table[(1, 3)] == table[(3, 1)] == LinkShape(40, 1, 0, 100)  # unset jitter: the lab's


def test_every_host_gets_an_address_in_its_dcs_subnet_and_a_uid_of_its_own():
    d = stack.load_deployment("local-replicated")
    addresses = layout.addresses(d, "10.77")
    assert set(addresses) == {h.name for h in d.hosts()}
    for h in d.hosts():
        assert addresses[h.name].startswith(f"10.77.{layout.dc_index(d, h.dc)}.")
    assert len(set(addresses.values())) == len(addresses)
    uids = {layout.service_uid(a) for a in addresses.values()}
    assert len(uids) == len(addresses) and min(uids) > layout.SERVICE_UID_BASE


def test_a_folder_the_services_cannot_enter_is_named_with_its_fix():
    # Not under pytest's tmp_path: its folders are 0700 already.
    home = Path(tempfile.mkdtemp(dir="/tmp"))
    try:
        home.chmod(0o755)
        (home / "cache").mkdir()
        layout.require_reachable(home / "cache")
        home.chmod(0o700)
        with pytest.raises(LabUnavailable, match=f"cannot enter {home} .*chmod o\\+x {home},"):
            layout.require_reachable(home / "cache")
    finally:
        home.chmod(0o755)
        shutil.rmtree(home)
