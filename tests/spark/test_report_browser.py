"""The report as a person sees it: index.html rendered by headless Chromium (Debian's, installed by
`make setup`) in a 1400 px window must not scroll sideways, nor any of its tables inside its own
box, and every image must load. A probe script, appended to a copy of the page, reads the layout
once the page has loaded."""

import html
import json
import re
import shutil
import subprocess
import time
from types import SimpleNamespace

from dcdrill.spark import verify
from tests import records

PROBE = """<script>
window.addEventListener('load', () => {
  const imgs = [...document.images];
  document.body.setAttribute('data-probe', JSON.stringify({
    overflow_px: document.documentElement.scrollWidth - window.innerWidth,
    tables_scrolling: [...document.querySelectorAll('.scroll')].filter(d => d.scrollWidth > d.clientWidth)
      .map(d => (d.previousElementSibling || {}).textContent || '?'),
    images: imgs.length, broken: imgs.filter(i => !i.complete || i.naturalWidth === 0).length}));
});
</script>"""


def rendered(page, width: int = 1400) -> dict:
    chromium = shutil.which("chromium")
    assert chromium, "chromium is missing: `make setup` installs Debian's package"
    probe = page.with_name("probe.html")
    probe.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    res = subprocess.run(
        [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            f"--window-size={width},1000",
            "--virtual-time-budget=5000",
            "--dump-dom",
            probe.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    found = re.search(r'data-probe="([^"]*)"', res.stdout)
    assert found, res.stderr[-2000:]
    return json.loads(html.unescape(found.group(1)))


def test_the_report_fits_1400px_and_every_image_loads(tmp_path, spark):
    run = records.anomalies(tmp_path / "run")  # loss, duplicates, a fault: every plot drawn
    verify.verify(str(run), spark=spark)
    seen = rendered(run / "report" / "index.html")
    assert seen["images"] >= 5 and seen["broken"] == 0, seen
    assert seen["overflow_px"] <= 0, seen
    assert seen["tables_scrolling"] == [], seen  # each table read in one pass, not scrolled sideways


def test_the_probe_sees_overflow_scrolling_tables_and_broken_images(tmp_path):
    page = tmp_path / "index.html"  # the probe itself can fail: a page that does all three
    page.write_text(
        '<html><body><div style="width:3000px">wide</div>'
        '<h2>wide table</h2><div class="scroll" style="max-width:100px;overflow-x:auto">'
        '<table><tr><td style="white-space:nowrap">' + "x" * 200 + "</td></tr></table></div>"
        '<img src="data:image/png;base64,AAAA"></body></html>'
    )
    seen = rendered(page)
    assert seen["overflow_px"] > 0 and seen["broken"] == 1 and seen["tables_scrolling"] == ["wide table"], seen


def test_no_cell_reads_none_numbers_align_right_and_only_files_there_are_linked(tmp_path, spark):
    """A record from plain `dcdrill workload` (no journal, no experiment, no predictions): the
    report links only what exists, says there is nothing predicted, splits its one producer DC by
    phase, writes no "None", and keeps "kill-dc" whole."""
    run = records.anomalies(tmp_path / "run")
    topo = json.loads((run / "topology.json").read_text())
    topo.pop("predictions", None)
    (run / "topology.json").write_text(json.dumps(topo))
    (run / "experiment.json").write_text("{}")
    (run / "journal.json").write_text(json.dumps({"status": "completed"}))
    (run / "audit-end.json").write_text(
        json.dumps({"audit.jsonl": {"rows": 0, "bytes": (run / "audit" / "audit.jsonl").stat().st_size}})
    )
    records.note_agents(run)
    records.note_plan(run)
    summary = verify.verify(str(run), spark=spark)
    page = (run / "report" / "index.html").read_text()
    assert ">None<" not in page and "None ms" not in page
    assert 'href="../journal.json"' in page and 'href="../experiment.json"' in page
    assert 'href="../chaos.log"' not in page  # not in this record
    assert "This record holds no predictions" in page
    by_dc = page.split("<h2>By producer DC and phase</h2>")[1].split("</table>")[0]  # the record has a fault
    assert by_dc.count("<tr>") == 1 + len(summary["phases"]) and "latency_<wbr>p50_<wbr>ms" in by_dc
    assert "<td class='num'>" in by_dc
    assert "kill&#8209;dc" in page and "<td>during kill&#8209;dc dc&#8209;a</td>" in page  # in a phrase too
    from dcdrill.spark import report_files

    assert "recovery None" not in report_files.one_screen(summary)


def test_every_recovery_time_has_the_machines_idle_share_beside_it(tmp_path, spark):
    """baseline.json's machine_idle_pct (the latency-settled probe's /proc/stat reading) is shown
    with the baseline and beside each recovery time, marked saturated below 20 %."""
    from dcdrill.spark import report_files

    run = records.anomalies(tmp_path / "run")
    (run / "baseline.json").write_text(
        json.dumps({"settled": True, "p50_ms": 9, "p99_ms": 30, "waited_s": 10.0, "machine_idle_pct": 4.5})
    )
    summary = verify.verify(str(run), spark=spark)
    page = (run / "report" / "index.html").read_text()
    assert "baseline before the fault p50 9 ms, p99 30 ms, machine 4.5 % idle before the fault: saturated" in page
    # a fault that recovered (this record's did not): its time with the idle share, on the page and the screen
    fault = {**summary["faults"][0], "recovery_ms": 43_100}
    from dcdrill.spark import report

    row = report._fault_row(fault, {}, summary["baseline"])
    assert row["recovery"] == "43.1 s (machine 4.5 % idle before the fault: saturated)"
    screen = report_files.one_screen({**summary, "faults": [fault]})
    assert "recovery 43100 ms (machine 4.5 % idle before the fault: saturated)" in screen
    # and in the prediction check's words, where the recovery time is said again
    check = {
        "target": "dc-a",
        "fault": "kill-dc",
        "as_predicted": True,
        "predicted": {"writable": False, "acked_loss_possible": False, "why": "minISR"},
        "observed": {"writable": False, "acked_loss": False, "recovery_ms": 43_100, "held_ms": 30_000},
    }
    screen = report_files.one_screen({**summary, "faults": [fault], "prediction_checks": [check]})
    assert (
        "every partition acknowledged again 43.1 s after the start, machine 4.5 % idle before the fault: "
        "saturated; the fault was held 30.0 s" in screen
    )


def test_the_idle_share_is_read_from_proc_stat():
    from dcdrill.chaos.workload import probes

    assert probes.idle_pct((100, 1000), (160, 1100)) == 60.0 and probes.idle_pct((1, 1), (1, 1)) is None
    before = probes.cpu_times()
    assert before is not None and 0 <= before[0] <= before[1]


def _settle(
    tmp_path, monkeypatch, idle_pct: float, latencies_ms: tuple[int, int], first_ack_ago_ms: int = 2000
) -> dict:
    """The latency-settled probe on a workload whose producers relayed acknowledgements with
    these medians in the last two windows, on a machine this idle (the lab stack `local`), with
    no time to wait."""
    from dcdrill.chaos.workload import probes

    run = tmp_path / "run"
    run.mkdir(parents=True)
    now = 1_800_000_000_000  # the probe's clock: no window waited for
    monkeypatch.setattr(
        probes, "time", SimpleNamespace(sleep=lambda s: None, time=lambda: now / 1000, monotonic=time.monotonic)
    )
    acks = [(now - 2000 + 20 * k, latencies_ms[0]) for k in range(50) if 20 * k >= 2000 - first_ack_ago_ms] + [
        (now - 1000 + 20 * k, latencies_ms[1]) for k in range(50)
    ]
    relayed = SimpleNamespace(acks_since=lambda since_ms: [a for a in acks if a[0] >= since_ms])
    monkeypatch.setattr(probes, "running_workload", lambda configuration: relayed)
    ticks = iter([(0, 0), (int(idle_pct), 100)])
    monkeypatch.setattr(probes, "cpu_times", lambda: next(ticks))
    return probes.produce_latency_settled(
        window_s=1, timeout_s=0, configuration={"stack": "local", "run_dir": str(run)}
    )


def test_the_steady_state_waits_for_cpu_headroom_and_names_why_it_never_settled(tmp_path, monkeypatch):
    """Issue: a drill that knows when the lab can measure time. A settled median on a saturated
    machine is not settled; the baseline and the log say which cause held it."""
    quiet = _settle(tmp_path / "quiet", monkeypatch, 60, (8, 8))
    assert quiet["settled"] and quiet["cause"] is None and quiet["machine_idle_pct"] == 60.0
    busy = _settle(tmp_path / "busy", monkeypatch, 5, (8, 8))
    assert not busy["settled"] and busy["cause"].startswith("the machine was 5 % idle, saturated below 20 %")
    moving = _settle(tmp_path / "moving", monkeypatch, 60, (8, 80))
    assert not moving["settled"] and moving["cause"] == "the median produce latency was still moving (8 ms, then 80 ms)"
    assert json.loads((tmp_path / "moving" / "run" / "baseline.json").read_text())["cause"] == moving["cause"]
    # Two windows of acknowledgements end to end, or the first window is the workload's warm-up.
    young = _settle(tmp_path / "young", monkeypatch, 60, (8, 8), first_ack_ago_ms=1900)
    assert not young["settled"] and young["cause"] == "the workload had not been acknowledged for two whole windows"


def test_a_drills_one_topic_heads_the_partition_table_and_several_keep_their_column():
    from dcdrill.spark import report

    row = {"partition": 0, "produced": 5, "acked": 5}
    one = report._by_partition([{**row, "topic": "t1"}, {**row, "partition": 1, "topic": "t1"}], ["produced", "acked"])
    assert one.startswith("<h2>By partition of t1</h2>") and "<th>topic</th>" not in one
    two = report._by_partition([{**row, "topic": "t1"}, {**row, "topic": "t2"}], ["produced", "acked"])
    assert two.startswith("<h2>By partition</h2>") and "<th>topic</th>" in two and ">t2<" in two


def test_each_dc_is_described_with_the_coordination_its_cluster_has():
    from dcdrill.spark.report import datacenter_text

    zk = {"coordination": "zookeeper"}
    assert datacenter_text({"name": "dc-c", "brokers": 0, "zookeepers": 1}, zk) == "dc-c (0 brokers, 1 ZK)"
    kraft = {"coordination": "kraft"}  # a KRaft cluster's DC has controllers, never "0 ZK"
    assert (
        datacenter_text({"name": "dc-a", "brokers": 2, "zookeepers": 0, "controllers": 1}, kraft)
        == "dc-a (2 brokers, 1 KRaft controller)"
    )


def test_the_latency_plot_has_no_negative_milliseconds(tmp_path, spark, monkeypatch):
    """Drawn on symlog (a 0 ms latency has a place), whose autoscale margin went below 0 ms."""
    from dcdrill.spark import report

    summary = verify.verify(str(records.anomalies(tmp_path / "run")), spark=spark)
    drawn = {}
    monkeypatch.setattr(report, "png", lambda fig: drawn.setdefault(fig.axes[0].get_title(), fig.axes[0].get_ylim()))
    report.plots(summary)
    low, high = drawn["Produce latency (acknowledged records, by send second)"]
    assert low == 0 < high
