"""Charts as inline SVG strings, drawn here (no chart library, nothing fetched): the fact budget funnel,
recall@k lines, grouped bars and per-stage latency distributions. Every label is HTML-escaped."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from html import escape

from evals.metrics import percentile

COLORS = ("#2563eb", "#d97706", "#16a34a", "#9333ea", "#dc2626", "#0891b2")
INK, GRID, MUTED = "#1f2937", "#e5e7eb", "#6b7280"


def color(i: int) -> str:
    return COLORS[i % len(COLORS)]


def _svg(width: float, height: float, body: list[str], title: str) -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
            f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{escape(title)}" class="chart">'
            f"<title>{escape(title)}</title>{''.join(body)}</svg>")


def _text(x: float, y: float, text: str, *, anchor: str = "start", size: int = 11, fill: str = INK,
          weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" font-size="{size}" fill="{fill}" '
            f'font-weight="{weight}">{escape(text)}</text>')


def _rect(x: float, y: float, w: float, h: float, fill: str, opacity: float = 1.0, tip: str = "") -> str:
    title = f"<title>{escape(tip)}</title>" if tip else ""
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0):.1f}" height="{h:.1f}" fill="{fill}" '
            f'fill-opacity="{opacity:.2f}">{title}</rect>')


def _fmt(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def funnel(steps: Sequence[str], runs: Sequence[tuple[str, Sequence[float | None], Sequence[float | None]]],
           title: str) -> str:
    """One row per step, one bar per run: the step's share of the key facts (the funnel's: this step and every
    earlier one), its fact count beside it."""
    label_w, bar_w, bar_h = 250, 330, 13
    row_h = bar_h * len(runs) + 10
    body = []
    for s, step in enumerate(steps):
        y0 = 8 + s * row_h
        body.append(_text(label_w - 8, y0 + row_h / 2, step, anchor="end"))
        for r, (name, shares, counts) in enumerate(runs):
            y = y0 + r * bar_h
            share, count = shares[s], counts[s]
            if share is None:
                body.append(_rect(label_w, y, bar_w, bar_h - 2, GRID, 0.6, f"{name}: n/a"))
                body.append(_text(label_w + 6, y + bar_h - 4, "n/a (not recorded)", size=10, fill=MUTED))
                continue
            body.append(_rect(label_w, y, bar_w * share, bar_h - 2, color(r), 0.85,
                              f"{name}: {share:.3f} ({_count(count)} facts)"))
            body.append(_text(label_w + bar_w * share + 4, y + bar_h - 4, f"{share:.3f} · {_count(count)}", size=10))
    return _svg(label_w + bar_w + 90, 16 + row_h * len(steps), body, title)


def _count(count: float | None) -> str:
    return "" if count is None else format(round(count, 2), "g")


def lines(xs: Sequence[int], series: Sequence[tuple[str, Sequence[float | None]]], title: str,
          y_label: str = "") -> str:
    """A line per run over xs (recall@k), y from 0 to 1."""
    left, top, w, h = 40, 12, 360, 180
    body = []
    for i in range(6):
        y = top + h - h * i / 5
        body.append(f'<line x1="{left}" y1="{y:.1f}" x2="{left + w}" y2="{y:.1f}" stroke="{GRID}"/>')
        body.append(_text(left - 5, y + 4, f"{i / 5:.1f}", anchor="end", size=10, fill=MUTED))

    def px(i: int) -> float:
        return left + w * i / max(len(xs) - 1, 1)

    for i, x in enumerate(xs):
        body.append(_text(px(i), top + h + 15, str(x), anchor="middle", size=10, fill=MUTED))
    body.append(_text(left + w / 2, top + h + 30, y_label, anchor="middle", size=10, fill=MUTED))
    for r, (name, values) in enumerate(series):
        points = [(px(i), top + h - h * v) for i, v in enumerate(values) if v is not None]
        if points:
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
            body.append(f'<polyline points="{path}" fill="none" stroke="{color(r)}" stroke-width="2"/>')
        for (cx, cy), v in zip(points, [v for v in values if v is not None], strict=True):
            body.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="3" fill="{color(r)}">'
                        f"<title>{escape(name)}: {v:.3f}</title></circle>")
    return _svg(left + w + 20, top + h + 40, body, title)


def bars(groups: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]], title: str) -> str:
    """Grouped vertical bars, 0…1: one group per metric, one bar per run (n/a leaves a gap marked n/a)."""
    left, top, h, bar_w, gap = 30, 10, 150, 16, 18
    group_w = max(bar_w * len(series) + gap, 84)
    body = [f'<line x1="{left}" y1="{top + h}" x2="{left + group_w * len(groups)}" y2="{top + h}" stroke="{MUTED}"/>']
    for g, group in enumerate(groups):
        x0 = left + (group_w - bar_w * len(series)) / 2 + g * group_w
        for r, (name, values) in enumerate(series):
            v, x = values[g], x0 + r * bar_w
            if v is None:
                body.append(_text(x + bar_w / 2, top + h - 3, "n/a", anchor="middle", size=8, fill=MUTED))
                continue
            body.append(_rect(x, top + h - h * v, bar_w - 2, h * v, color(r), 0.85, f"{name}: {group} {v:.3f}"))
        for i, word in enumerate(_wrap(group, 14)):
            body.append(_text(x0 + bar_w * len(series) / 2, top + h + 13 + 11 * i, word, anchor="middle", size=10))
    return _svg(left + group_w * len(groups) + 10, top + h + 40, body, title)


def _wrap(text: str, width: int) -> list[str]:
    out: list[str] = []
    for word in text.split():
        if out and len(out[-1]) + 1 + len(word) <= width:
            out[-1] += " " + word
        else:
            out.append(word)
    return out[:2]


def latency(nodes: Sequence[str], runs: Sequence[tuple[str, dict[str, list[float]]]], title: str) -> str:
    """Per node and run, on a log ms axis: a histogram of the cases' times (bar height ∝ cases) over a box
    from p25 to p75, whiskers p5…p95, the median as a tick; p50/p95 printed at the right."""
    values = [v for _, per in runs for node in nodes for v in per.get(node, []) if v > 0]
    if not values:
        return _svg(300, 30, [_text(5, 20, "no timings recorded", fill=MUTED)], title)
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    label_w, w, row_h, bins = 190, 420, 26, 40
    top = 18

    def px(ms: float) -> float:
        ms = min(max(ms, lo), hi)
        return label_w + w * (math.log10(ms) - math.log10(lo)) / max(math.log10(hi) - math.log10(lo), 1e-9)

    body = []
    decade = float(lo)
    while decade <= hi:
        x = px(decade)
        body.append(f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{top + row_h * len(nodes) * len(runs)}" '
                    f'stroke="{GRID}"/>')
        body.append(_text(x, top - 7, f"{decade:g} ms", anchor="middle", size=9, fill=MUTED))
        decade *= 10
    y = top
    for node in nodes:
        body.append(_text(label_w - 8, y + row_h * len(runs) / 2 + 4, node, anchor="end"))
        for r, (name, per) in enumerate(runs):
            body.extend(_distribution([v for v in per.get(node, [])], px, y, row_h, bins, color(r), f"{name} · {node}"))
            y += row_h
        body.append(f'<line x1="{label_w - 150}" y1="{y:.1f}" x2="{label_w + w + 110}" y2="{y:.1f}" stroke="{GRID}"/>')
    return _svg(label_w + w + 120, y + 8, body, title)


def _distribution(ms: list[float], px: Callable[[float], float], y: float, row_h: float, bins: int, fill: str,
                  tip: str) -> list[str]:
    if not ms:
        return [_text(px(1e9) + 6, y + 14, "—", size=9, fill=MUTED)]
    lo_x, hi_x = px(0), px(1e12)
    step = (hi_x - lo_x) / bins
    counts = [0] * bins
    for v in ms:
        counts[min(int((px(v) - lo_x) / step), bins - 1)] += 1
    top = max(counts)
    out = [_rect(lo_x + i * step, y + 13 - 11 * c / top, step - 0.5, 11 * c / top, fill, 0.45)
           for i, c in enumerate(counts) if c]
    p5, p25, p50, p75, p95 = (percentile(ms, p) for p in (5, 25, 50, 75, 95))
    out.append(f'<line x1="{px(p5):.1f}" y1="{y + 18:.1f}" x2="{px(p95):.1f}" y2="{y + 18:.1f}" stroke="{fill}"/>')
    out.append(_rect(px(p25), y + 15, px(p75) - px(p25), 6, fill, 0.9,
                     f"{tip}: n={len(ms)} p5 {p5:.1f} · p25 {p25:.1f} · p50 {p50:.1f} · p75 {p75:.1f} · "
                     f"p95 {p95:.1f} ms"))
    out.append(f'<line x1="{px(p50):.1f}" y1="{y + 13:.1f}" x2="{px(p50):.1f}" y2="{y + 23:.1f}" stroke="{INK}" '
               'stroke-width="2"/>')
    out.append(_text(hi_x + 8, y + 20, f"{p50:.0f} / {p95:.0f}", size=9, fill=MUTED))
    return out
