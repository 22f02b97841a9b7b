"""The examples behind the counts, read from the results DB (``hubsurvey show``).

The survey stores, per (dataset, config), up to N examples of each kind, profile and label column
(the ``examples`` table). This module only reads them, for the revision the findings use (the
``current_measurements`` view): it never measures again.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from hubsurvey.core.errors import BadInputError
from hubsurvey.core.safety import visible
from hubsurvey.core.store import Store

#: ``show --kind``: the groups of example kinds (an exact kind name is accepted too).
KIND_GROUPS: dict[str, tuple[str, ...]] = {
    "leaks": ("leak_train_test", "leak_validation_test", "leak_train_validation"),
    "duplicates": ("duplicate_train", "duplicate_validation", "duplicate_test"),
    "conflicts": ("label_conflict_train_test", "conflicting_text_train", "conflicting_text_validation", "conflicting_text_test"),
    # near-duplicate pairs (method near-2026): a test or validation row and its most similar partner
    "near": ("near_train", "near_validation", "near_repeated", "validation_near_train", "near_train_conflicting_label"),
}
KINDS = tuple(k for group in KIND_GROUPS.values() for k in group)
#: What each kind shows, in words (the report, the card and ``show``).
KIND_WORDS: dict[str, str] = {
    "leak_train_test": "a text key in both train and test",
    "leak_validation_test": "a text key in both validation and test",
    "leak_train_validation": "a text key in both train and validation",
    "duplicate_train": "a text key on more than one train row",
    "duplicate_validation": "a text key on more than one validation row",
    "duplicate_test": "a text key on more than one test row",
    "label_conflict_train_test": "a text in train and test whose test label never goes with it in train",
    "conflicting_text_train": "a text with more than one label within train",
    "conflicting_text_validation": "a text with more than one label within validation",
    "conflicting_text_test": "a text with more than one label within test",
    "near_train": "a test row and a train row at Jaccard >= tau (different normalized texts)",
    "near_validation": "a test row and a validation row at Jaccard >= tau",
    "near_repeated": "a test row and an earlier test row at Jaccard >= tau",
    "validation_near_train": "a validation row and a train row at Jaccard >= tau",
    "near_train_conflicting_label": "a test row whose near train rows all carry another label, with the nearest",
}


def resolve_dataset(store: Store, dataset: str, *, any_revision: bool = False) -> str:
    """The dataset id that ``dataset`` names among the measured datasets (``current_measurements``;
    ``any_revision``: ``measurements``, every revision): an exact id, or the name part of exactly
    one id. Else one line (:class:`BadInputError`, exit 2)."""
    table = "measurements" if any_revision else "current_measurements"
    ids = [r[0] for r in store.query(f"SELECT DISTINCT dataset_id FROM {table} ORDER BY 1")[1]]
    if dataset in ids:
        return dataset
    matches = [i for i in ids if i.rsplit("/", 1)[-1] == dataset]
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise BadInputError(f"{dataset}: names several measured datasets ({', '.join(matches[:5])}); give the full id")
    raise BadInputError(f"{dataset}: not measured in this DB (run `hubsurvey audit {dataset}` or a survey first)")


def find_examples(
    store: Store,
    dataset: str,
    *,
    config: str | None = None,
    kind: str | None = None,
    profile: str | None = None,
    label_column: str | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """The stored examples of one dataset's current revision, ordered by config, kind, profile and rank.

    ``kind`` is a group (leaks, duplicates, conflicts) or one kind; ``limit`` caps each
    (config, kind, profile, label column). JSON columns come back parsed.
    """
    if not _has_examples_table(store):
        raise BadInputError(f"{dataset}: this DB holds no examples (measured before hubsurvey stored them); measure it again")
    dataset_id = resolve_dataset(store, dataset)
    kinds: Sequence[str] = KINDS
    if kind is not None:
        if kind in KIND_GROUPS:
            kinds = KIND_GROUPS[kind]
        elif kind in KINDS:
            kinds = (kind,)
        else:
            raise BadInputError(f"--kind must be one of {', '.join([*KIND_GROUPS, *KINDS])}, not {kind!r}")
    if profile is not None and profile not in ("raw", "normalized"):
        raise BadInputError(f"--profile must be raw or normalized, not {profile!r}")
    rows = store.records(
        """
        SELECT e.* FROM examples e
        JOIN (SELECT DISTINCT dataset_id, revision_sha, config FROM current_measurements) m
          USING (dataset_id, revision_sha, config)
        WHERE e.dataset_id = $dataset
          AND ($config IS NULL OR e.config = $config)
          AND list_contains($kinds, e.kind)
          AND ($profile IS NULL OR e.profile = $profile)
          AND ($label IS NULL OR e.label_column = $label OR e.label_column IS NULL)
          AND ($limit IS NULL OR e.rank <= $limit)
        ORDER BY e.config, list_position($kinds, e.kind), e.profile DESC, e.label_column NULLS FIRST, e.rank
        """,
        {"dataset": dataset_id, "config": config, "kinds": list(kinds), "profile": profile, "label": label_column,
         "limit": limit},
    )
    names = label_names(store, dataset_id)
    for row in rows:
        for column in ("key", "positions", "labels", "partner"):
            if row.get(column) is not None:
                row[column] = json.loads(row[column])
        named = names.get((row["revision_sha"], row["config"], row["label_column"]))
        row["labels_named"] = named_labels(row["labels"], named) if named and row["labels"] is not None else None
        if named and row.get("partner") and row["partner"].get("labels") is not None:
            row["partner"]["labels_named"] = named_labels(row["partner"]["labels"], named)
    return rows


def label_names(store: Store, dataset_id: str) -> dict[tuple[str, str, str], dict[int, str]]:
    """A dataset's ClassLabel names (the ``label_names`` table), per (revision, config, label column):
    ``{id: name}``."""
    out: dict[tuple[str, str, str], dict[int, str]] = {}
    for revision, config, column, label_id, name in store.query(
            "SELECT revision_sha, config, label_column, label_id, name FROM label_names WHERE dataset_id = $d",
            {"d": dataset_id})[1]:
        out.setdefault((revision, config, column), {})[label_id] = name
    return out


def named_labels(value: Any, names: Mapping[int, str]) -> Any:
    """A stored label value with each ClassLabel id that has a name as ``name (id)``: a per-split
    mapping, a list (multi-label, a tag per token) or one id; anything else (a string label, an id
    without a name) as it is. The names are untrusted Hub text: callers escape or make them visible."""
    if isinstance(value, Mapping):
        return {k: named_labels(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [named_labels(v, names) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value in names:
        return f"{names[value]} ({value})"
    return value


def label_text(value: Any) -> str:
    """A named label value as text: a name as it is, a list in brackets, anything else as JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "[" + ", ".join(label_text(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _has_examples_table(store: Store) -> bool:
    found = store.query("SELECT count(*) FROM information_schema.tables WHERE table_name = 'examples'")[1]
    return bool(found[0][0])


def render_examples(rows: Sequence[dict[str, Any]], width: int = 160) -> str:
    """The examples as text: one heading per (config, kind, profile, label column), one line each."""
    if not rows:
        return "(no examples of that kind: its counts are 0, or nothing was stored)"
    lines: list[str] = []
    heading = None
    for row in rows:
        this = (row["config"], row["kind"], row["profile"], row["label_column"])
        if this != heading:
            heading = this
            label = f"  label={row['label_column']}" if row["label_column"] else ""
            lines.append(f"{row['dataset_id']} [{row['config']}] {row['kind']} ({row['profile']}){label}: "
                         f"{KIND_WORDS.get(row['kind'], '')}")
        if row.get("partner") is not None:  # a near-duplicate pair
            lines += _render_pair(row, width)
            continue
        counts = " ".join(f"{s}={row[f'rows_{s}']}" for s in ("train", "validation", "test") if row[f"rows_{s}"])
        key = json.dumps(row["key"], ensure_ascii=False)
        if len(key) > width:
            key = key[: width - 1] + "…"
        lines.append(f"  #{row['rank']:<3} rows {counts}  {key}")
        where = "  ".join(f"{s}@{','.join(map(str, p))}" for s, p in row["positions"].items())
        lines.append(f"       positions {where}")
        if row["labels"] is not None:
            named = row.get("labels_named")  # ClassLabel ids as their names (label_names)
            item = label_text if named else _json_text
            shown = "  ".join(f"{s}: {short_list(v, item=item)}" for s, v in (named or row["labels"]).items() if v)
            lines.append(f"       labels {visible(shown)}")
    return "\n".join(lines)


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def short_list(value: Any, width: int = 60, item: Callable[[Any], str] = _json_text) -> str:
    """``value`` as JSON (or as ``item`` writes each item) in about ``width`` characters: a list keeps
    whole items and says how many it leaves out (``[[7, 8], [1], … 5 more]``), never a cut item; any
    other value is shown whole."""
    if not isinstance(value, list):
        return item(value)
    shown: list[str] = []
    for i, entry in enumerate(value):
        text = item(entry)
        if shown and len(", ".join([*shown, text])) + 2 > width:
            return "[" + ", ".join(shown) + f", … {len(value) - i} more]"
        shown.append(text)
    return "[" + ", ".join(shown) + "]"


def _render_pair(row: dict[str, Any], width: int) -> list[str]:
    """A near-duplicate pair: its Jaccard, then each side's split@position, text and labels."""
    partner = row["partner"]
    (split, positions), = row["positions"].items()
    sides = [(f"{split}@{positions[0]}", row["key"], row.get("labels_named") or row["labels"]),
             (f"{partner['split']}@{partner['position']}", partner["text"],
              partner.get("labels_named") or partner.get("labels"))]
    lines = [f"  #{row['rank']:<3} J={row['jaccard']:.3f}"]
    item = label_text if row.get("labels_named") else _json_text
    for where, text, labels in sides:
        shown = json.dumps(text, ensure_ascii=False)
        if len(shown) > width:
            shown = shown[: width - 1] + "…"
        label = f"  labels {visible(short_list(labels, item=item))}" if labels else ""
        lines.append(f"       {where:<16}{shown}{label}")
    return lines
