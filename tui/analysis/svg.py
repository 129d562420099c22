"""A small SVG chart writer for ``probetop compare --plot FILE.svg``.

One panel per metric, stacked: A and B as polylines over seconds since each
recording's start (both start at t = 0), with the axes' ranges labelled.
Plain SVG 1.1 text, no library: any browser or image viewer opens it.

Contract: ``overlay_svg(panels)`` returns the document as a string; a panel
is a title, a unit and named series of (t, value) points. Text is escaped.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

WIDTH = 900
PANEL_H = 220
MARGIN_L, MARGIN_R, MARGIN_T, MARGIN_B = 80, 20, 30, 40
COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728")


@dataclass(frozen=True, slots=True)
class Panel:
    title: str
    unit: str
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]]


def _num(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e5 or abs(value) < 1e-3:
        return f"{value:.3g}"
    return f"{value:.4g}"


def _panel(panel: Panel, top: float) -> list[str]:
    points = [p for _name, pts in panel.series for p in pts]
    x0, x1 = 0.0, max((t for t, _v in points), default=1.0) or 1.0
    lo = min((v for _t, v in points), default=0.0)
    hi = max((v for _t, v in points), default=1.0)
    lo = min(lo, 0.0)  # rates and latencies: the axis starts at zero
    if hi == lo:
        hi = lo + 1.0
    plot_w = WIDTH - MARGIN_L - MARGIN_R
    plot_h = PANEL_H - MARGIN_T - MARGIN_B
    left, bottom = MARGIN_L, top + MARGIN_T + plot_h

    def x(t: float) -> float:
        return left + (t - x0) / (x1 - x0) * plot_w

    def y(v: float) -> float:
        return bottom - (v - lo) / (hi - lo) * plot_h

    unit = f" ({panel.unit})" if panel.unit else ""
    out = [
        f'<text x="{left}" y="{top + 18}" font-size="14" font-weight="bold">'
        f"{escape(panel.title)}{escape(unit)}</text>",
        f'<rect x="{left}" y="{top + MARGIN_T}" width="{plot_w}" height="{plot_h}" '
        'fill="none" stroke="#999"/>',
        f'<text x="{left - 6}" y="{top + MARGIN_T + 10}" font-size="11" '
        f'text-anchor="end">{_num(hi)}</text>',
        f'<text x="{left - 6}" y="{bottom}" font-size="11" text-anchor="end">{_num(lo)}</text>',
        f'<text x="{left}" y="{bottom + 16}" font-size="11">0 s</text>',
        f'<text x="{left + plot_w}" y="{bottom + 16}" font-size="11" '
        f'text-anchor="end">{_num(x1)} s</text>',
    ]
    legend_x = left + plot_w - 10
    for i, (name, pts) in enumerate(panel.series):
        colour = COLOURS[i % len(COLOURS)]
        if pts:
            coords = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in pts)
            out.append(
                f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{coords}"/>'
            )
        out.append(
            f'<text x="{legend_x}" y="{top + 18 + 14 * i}" font-size="12" fill="{colour}" '
            f'text-anchor="end">{escape(name)}</text>'
        )
    return out


def overlay_svg(panels: Sequence[Panel], title: str = "") -> str:
    """The SVG document: a title line, then one panel per metric."""
    head = 30 if title else 0
    height = head + PANEL_H * max(1, len(panels))
    body: list[str] = []
    if title:
        body.append(f'<text x="{MARGIN_L}" y="20" font-size="13">{escape(title)}</text>')
    for i, panel in enumerate(panels):
        body += _panel(panel, head + i * PANEL_H)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif">\n'
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>\n' + "\n".join(body) + "\n</svg>\n"
    )
