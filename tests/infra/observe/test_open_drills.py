"""The records heal must look at (infra/observe/open_drills.py): noted once, oldest first,
forgotten one by one or all with the stack, and no note lost when drills note at once."""

import multiprocessing

from dcdrill.infra.observe import open_drills


def _note(state: str, location: str) -> None:
    import os

    os.environ["DCDRILL_STATE"] = state
    open_drills.note("local", location)


def test_notes_are_kept_once_in_order_and_forgotten_one_by_one_or_all(tmp_path, monkeypatch):
    monkeypatch.setenv("DCDRILL_STATE", str(tmp_path / "state"))
    assert open_drills.listed("local") == []
    for location in ("runs/a", "s3a://drills/runs/b", "runs/a"):
        open_drills.note("local", location)
    assert open_drills.listed("local") == ["runs/a", "s3a://drills/runs/b"]
    open_drills.forget("local", "runs/a")
    open_drills.forget("local", "runs/never-noted")
    assert open_drills.listed("local") == ["s3a://drills/runs/b"] and open_drills.listed("local-kraft") == []
    open_drills.forget_all("local")
    assert open_drills.listed("local") == []


def test_drills_noting_at_once_lose_no_note(tmp_path, monkeypatch):
    state = str(tmp_path / "state")
    monkeypatch.setenv("DCDRILL_STATE", state)
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(4) as pool:
        pool.starmap(_note, [(state, f"runs/{i}") for i in range(40)])
    assert sorted(open_drills.listed("local")) == sorted(f"runs/{i}" for i in range(40))
