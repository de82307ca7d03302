"""At 80 columns and less, a bar chart gives its room to the numbers: labels end in "…", the
bars shorten, a value is never cut (perf counters showed "1,200,…")."""
from __future__ import annotations

from textual.app import App

from tputui.widgets.charts import HBarChart

ITEMS = [("v6e-counters chip 10 · _counters_ (sample 0) and more words", 1_200_007.0), ("short", 5.0)]


async def test_values_stay_whole_when_the_chart_is_narrow():
    for width in (80, 50, 36):
        class Host(App):
            def compose(self):
                yield HBarChart(ITEMS, label_width=48, id="bars")

        app = Host()
        async with app.run_test(size=(width, 10)) as pilot:
            await pilot.pause()
            chart = app.query_one(HBarChart)
            lines = ["".join(seg.text for seg in chart.render_line(y)) for y in range(2)]
            assert lines[0].rstrip().endswith("1,200,007.00"), (width, lines)
            assert lines[1].rstrip().endswith("5.00"), (width, lines)
            assert all(len(line.rstrip()) <= width for line in lines)
