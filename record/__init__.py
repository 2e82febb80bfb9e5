"""The drill record (RECORD.md): one directory per drill. `DrillRecord` owns every path and file
in it; the workload (validation/), the faults and the drill (chaos/) and the verifier (spark/)
all write and read through it. `record.ledger` is the crash-safe JSON Lines writer and reader."""
from record.drill_record import LEDGERS, DrillRecord, merge_faults, parse_faults

__all__ = ["LEDGERS", "DrillRecord", "merge_faults", "parse_faults"]
