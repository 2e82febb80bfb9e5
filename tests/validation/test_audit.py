"""The final audit's rows (validation/audit.py): each, as written, is an audit row of
record/models.py; on a replicated stack it names its cluster and the cluster its producer wrote to."""

from dcdrill.record import models
from dcdrill.validation import audit


def test_an_audited_record_is_an_audit_row_and_a_copy_names_its_origin():
    row = audit._audited("dcdrill-t", 1, 9, "p1", 4, 1000, {}, origin="east")
    models.validated(models.Audited, row, "row")
    assert "origin" not in row and "cluster" not in row
    copy = audit._audited("east.dcdrill-t", 1, 9, "p1", 4, 1000, {"cluster": "west"}, origin="east")
    models.validated(models.Audited, copy, "row")
    assert (copy["cluster"], copy["origin"]) == ("west", "east")
