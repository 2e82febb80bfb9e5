"""What every report page draws with (spark/figures.py): tables that escape what a record says,
mark what it did not measure and drop what nobody measured; figures as embedded PNGs."""

import base64

from dcdrill.spark import figures


def test_a_table_escapes_marks_the_unmeasured_and_drops_an_empty_column():
    rows = [{"dc": "dc-a", "acked": 3, "note": "<script>", "unused": None}, {"dc": "dc-b", "acked": None}]
    page = figures.html_table(rows, ["dc", "acked", "note", "unused"])
    assert "unused" not in page and "<script>" not in page and "&lt;script&gt;" in page
    assert f"<td class='num'>{figures.NOT_MEASURED}</td>" in page and "None" not in page
    assert "<td class='num'>3</td>" in page
    assert "<td>dc&#8209;a</td>" in page  # a short word keeps its hyphen unbroken


def test_a_table_of_many_columns_is_set_wide_and_long_names_may_break():
    cols = [f"col_{i}" for i in range(figures.WIDE + 1)]
    page = figures.html_table([dict.fromkeys(cols, 1)], cols)
    assert "<table class='wide'>" in page and "<th>col_<wbr>0</th>" in page


def test_a_figure_is_a_png_in_a_data_uri_and_its_faults_are_shaded():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 60], [0, 1])
    figures.shade(
        ax,
        {
            "faults": [
                {"fault": "kill-dc", "target": "dc-a", "start_ms": 10_000, "end_ms": 40_000, "recovery_ms": 5_000}
            ]
        },
        t0=0,
    )
    band = [p for p in ax.patches if p.get_label().startswith("kill-dc dc-a")]
    assert band and band[0].get_x() == 10 and band[0].get_width() == 30
    assert [line.get_xdata()[0] for line in ax.lines[1:]] == [15]  # recovery: 5 s after the start
    uri = figures.png(fig)
    assert uri.startswith("data:image/png;base64,") and base64.b64decode(uri.split(",", 1)[1])[:4] == b"\x89PNG"
