"""The run page's SVG charts (ui/charts.py)."""

from __future__ import annotations

from judge_service.ui.charts import Series, line_chart


def test_a_chart_has_a_point_per_value_and_breaks_at_gaps() -> None:
    svg = line_chart(Series("Mean <score>", [0, 1, 2, 3], [0.5, None, 0.25, 1.0], lower=0.0, upper=1.0))
    assert svg.count('class="point"') == 3 and svg.count('class="line"') == 2
    assert "Mean &lt;score&gt;" in svg and "<score>" not in svg
    assert "no values" in line_chart(Series("Empty", [0], [None]))
