"""The report's charts, drawn with matplotlib (Agg) and returned as ``data:image/png;base64`` URIs.

PNG in an ``<img>`` keeps the HTML self-contained (no external file, script or font) and keeps
dataset-controlled text out of the markup. Output is deterministic (no date or software metadata).

matplotlib is an optional extra (``pip install 'hubsurvey[report]'``): without it :func:`charts`
logs one warning and returns no chart, and the report is written without images.

Text that comes from the Hub (task categories) is drawn as plain text: matplotlib would otherwise
parse ``$...$`` in it as math, and one odd tag would make every report fail (:func:`plain`).
"""

from __future__ import annotations

import base64
import io
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from hubsurvey.analysis.render import KEY_LABELS

log = logging.getLogger(__name__)

#: Series colours; the screenshot test looks for them.
TEXT_COLOR = "#d1495b"
TEXT_AND_LABEL_COLOR = "#2e86ab"
#: The key profiles of the exact method (raw vs normalized contamination chart).
RAW_COLOR = "#6c757d"
NORMALIZED_COLOR = "#f4a259"
#: The near-duplicate method (near vs exact chart, threshold curve).
NEAR_COLOR = "#7b2cbf"
NEAR_MEDIAN_COLOR = "#3a9d5d"


def available() -> bool:
    """True when matplotlib can be imported (the ``report`` extra is installed)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def plain(text: Any) -> str:
    """A label drawn verbatim: every ``$`` escaped, so matplotlib never parses it as math."""
    return str(text).replace("$", r"\$")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _png(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    _pyplot().close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode("ascii")


def _value(v: Any) -> float:
    return 0.0 if v is None else float(v)


def splits_chart(splits: Sequence[Mapping[str, Any]]) -> str:
    """Two panels: % of rows with ≥1 leak to test, and with ≥1 duplicate, per split and key."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True, gridspec_kw={"width_ratios": [2, 3]})
    # The leak panel shows the splits that leak INTO test (train, validation): a "test" bar there
    # would read as "test leaks to test". The table keeps the test row (shares a key with either).
    panels = (
        ("pct_with_leak", "≥1 leak to test", ["train", "validation"]),
        ("pct_with_duplicate", "≥1 duplicate", ["train", "validation", "test"]),
    )
    for ax, (measure, title, names) in zip(axes, panels):
        for i, (key, colour) in enumerate((("text", TEXT_COLOR), ("text_and_label", TEXT_AND_LABEL_COLOR))):
            by_split = {r["split"]: r for r in splits if r["key"] == key}
            values = [_value(by_split.get(s, {}).get(measure)) for s in names]
            xs = [j + (i - 0.5) * 0.38 for j in range(len(names))]
            bars = ax.bar(xs, values, width=0.38, color=colour, label=KEY_LABELS[key])
            ax.bar_label(bars, labels=[f"{v:.1f}%" for v in values], fontsize=8, padding=2)
        ax.set_xticks(range(len(names)), names)
        ax.set_title(title)
        ax.set_ylim(0, 125)
        ax.set_yticks(range(0, 101, 20))
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("% of rows (non-NR)")
    axes[0].legend(loc="upper left", ncol=2, frameon=False)
    fig.tight_layout()
    return _png(fig)


def bias_chart(test_bias: Sequence[Mapping[str, Any]]) -> str:
    """% of rows with test_biased ≥ threshold, as a function of the threshold, text and text+label.

    The thresholds are not evenly spaced (0.1 … 1, 1.5 … 5, 10 … 90), so they are drawn where
    they are, on a logarithmic axis, as a step line per key (a share "at least x" falls as x grows);
    drawing them as equally spaced categories distorted the curve.
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.8))
    thresholds = [float(r["threshold_pct"]) for r in test_bias]
    for key, colour in (("text", TEXT_COLOR), ("text_and_label", TEXT_AND_LABEL_COLOR)):
        values = [_value(r[f"{key}_pct"]) for r in test_bias]
        if thresholds:
            ax.step(thresholds, values, where="post", color=colour, linewidth=2.5, label=KEY_LABELS[key])
            ax.fill_between(thresholds, values, step="post", color=colour, alpha=0.18, linewidth=0)
            ax.plot(thresholds, values, "o", color=colour, markersize=4)
    if thresholds:
        ax.set_xscale("log")
        ax.set_xlim(min(thresholds) * 0.9, max(thresholds) * 1.1)
        marks = [t for t in thresholds if t in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 90.0)]
        ax.set_xticks(marks, [f"{t:g}" for t in marks], fontsize=8)
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("threshold: test_biased ≥ (%, log scale)")
    ax.set_ylabel("% of rows (non-NR)")
    ax.set_ylim(0, 118)
    ax.set_yticks(range(0, 101, 20))
    ax.grid(axis="both", alpha=0.3)
    ax.legend(loc="upper right", ncol=2, frameon=False)
    fig.tight_layout()
    return _png(fig)


def task_chart(by_task: Sequence[Mapping[str, Any]], limit: int = 15) -> str | None:
    """% of rows with a text leak into test, per task category (the `limit` largest categories)."""
    rows = list(by_task)[:limit]
    if not rows:
        return None
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 0.9 + 0.35 * len(rows)))
    names = [plain(str(r["task_category"])[:40]) for r in rows][::-1]
    values = [_value(r["pct_with_text_test_leak"]) for r in rows][::-1]
    bars = ax.barh(range(len(rows)), values, color=TEXT_COLOR)
    ax.bar_label(bars, labels=[f"{v:.1f}%" for v in values], fontsize=8, padding=2)
    ax.set_yticks(range(len(rows)), names, fontsize=8)
    ax.set_xlim(0, 110)
    ax.set_xlabel("% of rows whose test split shares a text with train or validation")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def contamination_chart(raw_vs_normalized: Sequence[Mapping[str, Any]], limit: int = 20) -> str | None:
    """Raw vs normalized contaminated test rows (%), per dataset, and the gain in points.

    Left: both percentages side by side; right: their difference on its own scale (a gain of a
    few tenths of a point is invisible beside a 0-100 % axis). The datasets shown are those that
    gain most (then the most contaminated), at most ``limit``, in that order from the top.
    """
    return _gain_chart(raw_vs_normalized, ("raw_contaminated_test_pct", "raw", RAW_COLOR),
                       ("normalized_contaminated_test_pct", "normalized", NORMALIZED_COLOR),
                       "normalized − raw (percentage points)", limit)


def near_vs_exact_chart(near_vs_exact: Sequence[Mapping[str, Any]], limit: int = 20) -> str | None:
    """Exact (normalized) vs near-duplicate contaminated test rows (%), per dataset, and the gain in
    points (findings_near_vs_exact), drawn as :func:`contamination_chart` draws raw vs normalized."""
    return _gain_chart(near_vs_exact, ("normalized_contaminated_test_pct", "exact (normalized)", NORMALIZED_COLOR),
                       ("near_contaminated_test_pct", "near-duplicate", NEAR_COLOR),
                       "near − exact (percentage points)", limit)


def _gain_chart(rows_in: Sequence[Mapping[str, Any]], low: tuple[str, str, str], high: tuple[str, str, str],
                gain_label: str, limit: int) -> str | None:
    """Two figures per dataset, ``low`` and ``high`` (column, legend, colour; high >= low), side by
    side on the left, and their difference (``extra_pct_points``) on its own scale on the right.
    The datasets that gain most come first (then the highest ``high``), at most ``limit``."""
    (low_key, low_name, low_colour), (high_key, high_name, high_colour) = low, high
    rows = sorted(rows_in, key=lambda r: (-_value(r["extra_pct_points"]), -_value(r[high_key]),
                                          str(r["dataset_id"])))[:limit]
    if not rows:
        return None
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 1.2 + 0.42 * len(rows)), sharey=True,
                                      gridspec_kw={"width_ratios": [3, 2]})
    names = [plain(str(r["dataset_id"])[:45]) for r in rows][::-1]
    ys = list(range(len(rows)))
    lows = [_value(r[low_key]) for r in rows][::-1]
    highs = [_value(r[high_key]) for r in rows][::-1]
    extra = [_value(r["extra_pct_points"]) for r in rows][::-1]
    left.barh([y + 0.2 for y in ys], highs, height=0.4, color=high_colour, label=high_name)
    left.barh([y - 0.2 for y in ys], lows, height=0.4, color=low_colour, label=low_name)
    left.set_yticks(ys, names, fontsize=8)
    left.set_xlim(0, 105)
    left.set_xlabel("contaminated test rows, % of test rows")
    left.grid(axis="x", alpha=0.3)
    left.legend(loc="lower right", frameon=False, fontsize=8)
    bars = right.barh(ys, extra, height=0.6, color=high_colour)
    right.bar_label(bars, labels=[f"+{v:.2f}" for v in extra], fontsize=8, padding=2)
    right.set_xlim(0, max([*extra, 0.01]) * 1.35)
    right.set_xlabel(gain_label)
    right.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def near_curve_chart(near_curve: Sequence[Mapping[str, Any]]) -> str | None:
    """The threshold curve aggregated (findings_near_curve), the threshold τ on the x axis.

    Left: % of the measured datasets with at least one test row near train at Jaccard ≥ τ. Right:
    the median, over those datasets, of their % of test rows near train, and the pooled % (all their
    test rows together); its own scale, since a few % is invisible beside 100 %. None when no dataset
    was measured (every denominator is 0).
    """
    rows = sorted((r for r in near_curve if r["datasets"]), key=lambda r: float(r["threshold"]))
    if not rows:
        return None
    plt = _pyplot()
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    taus = [float(r["threshold"]) for r in rows]
    shares = [_value(r["pct_with_near_train"]) for r in rows]
    medians = [_value(r["median_test_rows_near_train_pct"]) for r in rows]
    pooled = [_value(r["pct_test_rows_near_train"]) for r in rows]
    left.plot(taus, shares, "o-", color=NEAR_COLOR, linewidth=2.5, label="datasets with ≥1 test row near train")
    for tau, share, r in zip(taus, shares, rows):
        left.annotate(f"{share:.1f}% of {r['datasets']}", (tau, share), textcoords="offset points", xytext=(0, 7),
                      ha="center", fontsize=8)
    left.set_ylim(0, 118)
    left.set_yticks(range(0, 101, 20))
    left.set_ylabel("% of measured datasets")
    left.set_title("datasets with ≥1 test row near train", fontsize=10)
    right.plot(taus, medians, "o-", color=NEAR_MEDIAN_COLOR, linewidth=2.5, label="median % per dataset")
    right.plot(taus, pooled, "s--", color=NEAR_COLOR, linewidth=1.5, label="all test rows (pooled)")
    right.set_ylim(0, max([*medians, *pooled, 0.1]) * 1.3)
    right.set_ylabel("% of test rows")
    right.set_title("test rows near train", fontsize=10)
    right.legend(loc="upper right", frameon=False, fontsize=8)
    for ax in (left, right):
        ax.set_xticks(taus, [f"{t:g}" for t in taus])
        ax.set_xlim(min(taus) - 0.05, max(taus) + 0.05)
        ax.set_xlabel("threshold τ: Jaccard ≥")
        ax.grid(axis="both", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


#: The report's charts, by the name the report's sections use (report.SECTIONS).
CHARTS = ("splits", "test_bias", "by_task_category", "raw_vs_normalized", "near_vs_exact", "near_curve")


def charts(found: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, str | None]:
    """Every chart of the report; all None (and one warning) when matplotlib is not installed."""
    if not available():
        log.warning("matplotlib is not installed: report.html has no charts (pip install 'hubsurvey[report]')")
        return dict.fromkeys(CHARTS)
    return {
        "splits": splits_chart(found["splits"]),
        "test_bias": bias_chart(found["test_bias"]),
        "by_task_category": task_chart(found["by_task_category"]),
        "raw_vs_normalized": contamination_chart(found["raw_vs_normalized"]),
        "near_vs_exact": near_vs_exact_chart(found["near_vs_exact"]),
        "near_curve": near_curve_chart(found["near_curve"]),
    }
