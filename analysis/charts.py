"""The report's charts, drawn with matplotlib (Agg) and returned as ``data:image/png;base64`` URIs.

PNG in an ``<img>`` keeps the HTML self-contained (no external file, script or font) and keeps
dataset-controlled text out of the markup. Output is deterministic (no date or software metadata).
"""

from __future__ import annotations

import base64
import io
from typing import Any, Mapping, Sequence

#: Series colours; the screenshot test looks for them.
TEXT_COLOR = "#d1495b"
TEXT_AND_LABEL_COLOR = "#2e86ab"
KEY_LABELS = {"text": "text", "text_and_label": "text+label"}


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
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    names = ["train", "validation", "test"]
    for ax, (measure, title) in zip(axes, (("pct_with_leak", "≥1 leak to test"), ("pct_with_duplicate", "≥1 duplicate"))):
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
    """% of rows with test_biased ≥ threshold, for each threshold, text and text+label."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(10, 3.8))
    labels = [f"{r['threshold_pct']:g}" for r in test_bias]
    xs = list(range(len(labels)))
    for i, (key, colour) in enumerate((("text", TEXT_COLOR), ("text_and_label", TEXT_AND_LABEL_COLOR))):
        values = [_value(r[f"{key}_pct"]) for r in test_bias]
        ax.bar([x + (i - 0.5) * 0.4 for x in xs], values, width=0.4, color=colour, label=KEY_LABELS[key])
    ax.set_xticks(xs, labels, fontsize=8)
    ax.set_xlabel("threshold: test_biased ≥ (%)")
    ax.set_ylabel("% of rows (non-NR)")
    ax.set_ylim(0, 118)
    ax.set_yticks(range(0, 101, 20))
    ax.grid(axis="y", alpha=0.3)
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
    names = [str(r["task_category"])[:40] for r in rows][::-1]
    values = [_value(r["pct_with_text_test_leak"]) for r in rows][::-1]
    bars = ax.barh(range(len(rows)), values, color=TEXT_COLOR)
    ax.bar_label(bars, labels=[f"{v:.1f}%" for v in values], fontsize=8, padding=2)
    ax.set_yticks(range(len(rows)), names, fontsize=8)
    ax.set_xlim(0, 110)
    ax.set_xlabel("% of rows whose test split shares a text with train or validation")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def charts(found: Mapping[str, Sequence[Mapping[str, Any]]]) -> dict[str, str | None]:
    return {
        "splits": splits_chart(found["splits"]),
        "test_bias": bias_chart(found["test_bias"]),
        "by_task_category": task_chart(found["by_task_category"]),
    }
