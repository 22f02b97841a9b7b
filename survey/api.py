"""Measure in-memory data from a notebook: a ``datasets.DatasetDict`` or a dict of Arrow tables.

    >>> from hubsurvey.survey.api import measure
    >>> rows = measure(load_dataset("parquet", data_files=...))   # doctest: +SKIP
    >>> rows[0]["text_leaks_train_wrt_test"]                      # doctest: +SKIP

The rows are the same dicts the results DB stores (see the README's schema).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from hubsurvey.core.roles import RoleOverrides
from hubsurvey.survey.measure import measure_config
from hubsurvey.survey.sources import SPLIT_ALIASES, ConfigData, SplitData, canonical_splits, check_name


def _as_table(split: Any) -> tuple[pa.Table, dict[str, Any]]:
    if isinstance(split, pa.Table):
        return split, {}
    # a datasets.Dataset: its Arrow table (after applying any select/shuffle indices) and features
    dataset = split.flatten_indices() if getattr(split, "_indices", None) is not None else split
    return dataset.data.table, dataset.features.to_dict()


def measure(
    splits: Mapping[str, Any],
    *,
    dataset_id: str = "in-memory",
    config: str = "default",
    text_columns: Sequence[str] | None = None,
    label_columns: Sequence[str] | None = None,
    examples: int = 0,
) -> list[dict[str, Any]]:
    """LLE rows for one in-memory config. Roles are inferred unless text_columns is given."""
    named: dict[str, SplitData] = {}
    features: dict[str, Any] = {}
    for name, split in splits.items():
        check_name(dataset_id, "split", name)
        table, feats = _as_table(split)
        features = features or feats
        named[name] = SplitData(SPLIT_ALIASES.get(name.lower(), name), name, (), table)
    canon, ignored = canonical_splits(dataset_id, config, named)
    revision = hashlib.sha1(
        b"".join(s.table.schema.to_string().encode() + str(s.table.num_rows).encode() for s in canon.values())  # type: ignore[union-attr]  # in-memory splits carry a table
    ).hexdigest()
    data = ConfigData(dataset_id, config, revision, canon, features, ignored)
    overrides = None
    if text_columns is not None:
        overrides = RoleOverrides({dataset_id: {config: {"text": list(text_columns), "labels": list(label_columns or [])}}})
    result = measure_config(data, n_configs=1, source="memory", overrides=overrides, examples=examples)
    return result.rows
