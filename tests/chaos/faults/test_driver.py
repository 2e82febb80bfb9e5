"""The fault driver protocol (chaos/faults/driver.py): every backend's driver has every fault
with the protocol's parameters (and only defaulted ones of its own), an Undo is saved at each
note, and a bad direction is named."""

import inspect

import pytest

from dcdrill.chaos.faults import DRIVERS, driver_class
from dcdrill.chaos.faults.driver import DIRECTIONS, FaultDriver, Undo
from dcdrill.infra import stack

FAULTS = [
    name
    for name, member in vars(FaultDriver).items()
    if inspect.isfunction(member) and not name.startswith("_") and name != "check_direction"
]


@pytest.mark.parametrize("backend", sorted(DRIVERS))
def test_each_backends_driver_implements_the_protocol_with_its_parameters(backend):
    driver = DRIVERS[backend]
    assert not inspect.isabstract(driver), driver.__abstractmethods__
    for name in FAULTS:
        ours, protocol = inspect.signature(getattr(driver, name)), inspect.signature(getattr(FaultDriver, name))
        own = list(ours.parameters.values())
        assert [p.name for p in own[: len(protocol.parameters)]] == list(protocol.parameters), (backend, name)
        # anything more is the backend's own, with a default: a caller of the protocol never passes it
        assert all(p.default is not p.empty for p in own[len(protocol.parameters) :]), (backend, name)


def test_the_lab_can_cut_power_and_kill_mirrormaker_where_the_protocol_leaves_it_out():
    lab = DRIVERS["local"]
    for name in ("power_loss", "kill_mirror", "mirror_log"):
        assert getattr(lab, name) is not getattr(FaultDriver, name), name


def test_each_stack_gets_its_backends_driver():
    assert driver_class(stack.backend("local")) is DRIVERS["local"]
    assert driver_class(stack.backend("aws-3az")) is DRIVERS["aws"]


def test_an_undo_is_saved_at_every_note_and_its_lists_grow():
    saved = []
    undo = Undo(save=lambda data: saved.append(repr(data)))
    undo.add(restart=[["b1", "spec", "ns"]], killed_ms=5)
    undo.add(restart=[["b2", "spec", "ns"]])
    assert undo.data == {"restart": [["b1", "spec", "ns"], ["b2", "spec", "ns"]], "killed_ms": 5}
    assert len(saved) == 2 and "b2" not in saved[0]  # each note written as it was made


def test_a_direction_outside_the_protocols_is_named():
    for direction in DIRECTIONS:
        FaultDriver.check_direction(direction)
    with pytest.raises(ValueError, match="direction must be one of both, ingress, egress, not 'sideways'"):
        FaultDriver.check_direction("sideways")
