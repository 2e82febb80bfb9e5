"""One DrillSession per drill record, found by its folder (chaos/session.py): what one activity
starts, a later one of the same drill finds, and no other drill sees it."""

from dcdrill.chaos import session


def test_each_drill_record_has_one_session_and_a_probe_alone_has_none(tmp_path):
    one = session.of({"run_dir": str(tmp_path / "a")})
    one.workload = "started"
    assert session.of({"run_dir": str(tmp_path / "a" / ".." / "a"), "stack": "local"}) is one  # the same folder
    assert session.given({"run_dir": str(tmp_path / "a")}).workload == "started"
    other = session.of({"run_dir": str(tmp_path / "b")})
    assert other is not one and other.workload is None and not other.rolling_back
    assert session.given({"stack": "local"}) is None and session.given(None) is None
