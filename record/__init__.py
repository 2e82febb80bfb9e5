"""The drill record (RECORD.md): one directory per drill. `DrillRecord` owns every path and file
in it; the workload (validation/), the faults and the drill (chaos/) and the verifier (spark/)
all write and read through it. `record.contents` says what each file holds and
checks it; `record.ledger` is the crash-safe JSON Lines writer and reader; `record.files` is
where a record's bytes live (a local folder, or a Hadoop URI for the verifier)."""

from dcdrill.record.contents import LEDGERS, BadRecord, merge_faults, parse_faults
from dcdrill.record.drill_record import DrillRecord

__all__ = ["LEDGERS", "BadRecord", "DrillRecord", "merge_faults", "parse_faults"]
