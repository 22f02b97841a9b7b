"""The method registry: every figure hubsurvey measures, declared once.

A figure is declared here with its name, its SQL, its definition in words, its type, its NR rule
and its published format. Everything else is generated from these declarations: the figure
columns of the ``measurements`` table (here), the engine's statements and the ``lle`` and
``lle_typed`` views (:mod:`hubsurvey.core.figure_sql`), the ``audit --json`` keys, the export
columns and the published LLE header (here), the report's definitions and the docs' tables
(:mod:`hubsurvey.core.figure_docs`). Adding a figure is an edit here (its declaration and its SQL)
and nothing else.

How a figure is computed (the engine, ``survey/metrics.py``, runs this SQL): every row of the
measured splits is projected to its key, and the rows are grouped by key into ``per_key``, one
row per distinct key with ``n_train``, ``n_validation`` and ``n_test``, the number of rows of each
split that hold it. A :class:`KeyFigure` is one aggregate over ``per_key``, computed once per key
kind (text, text+label). A :class:`RowFigure` is computed from the other figures of the same
result row. A figure whose split is absent is NR (NULL), and so is a text+label figure of a row
without a label column. The method, in words, with a worked example: ``docs/method.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import Enum
from typing import Any

#: The method whose figures this registry declares, and the version of their definitions.
LLE_METHOD = "lle-2024"
LLE_METHOD_VERSION = 1

#: The exact row-level method: figures beside the LLE ones, never
#: instead of them. Each is measured under both key profiles.
EXACT_METHOD = "exact-2026"
EXACT_METHOD_VERSION = 1

#: The near-duplicate method: Jaccard >= tau over character
#: shingles of the normalized text, candidates from MinHash-LSH, every pair verified exactly.
NEAR_METHOD = "near-2026"
NEAR_METHOD_VERSION = 1

#: Rows that cannot be compared: text empty, whitespace-only or NULL; a NULL label (per split).
ROWS_METHOD = "rows-2026"
ROWS_METHOD_VERSION = 1

#: Groups shared across splits: rows of one dialogue, file, document or thread on both sides of the
#: split, found from a group column's values (table ``group_measurements``).
GROUPS_METHOD = "groups-2026"
GROUPS_METHOD_VERSION = 1

#: Time order: train rows dated after the earliest test row, from a date column (``time_measurements``).
TIME_METHOD = "time-2026"
TIME_METHOD_VERSION = 1

#: Paraphrase candidates for review (opt-in: ``--semantic``): test rows whose embedding by a static
#: model is near a train or validation row's. Not a figure of the registry: its pairs are stored apart
#: (``semantic_candidates``) and never change a leak count or a verdict; a row measured with it holds
#: it in ``measurements.methods``.
SEMANTIC_METHOD = "semantic-2026"
SEMANTIC_METHOD_VERSION = 1

#: The methods a measurement row holds, with the version of their definitions (``measurements.methods``).
METHODS: dict[str, int] = {
    LLE_METHOD: LLE_METHOD_VERSION, EXACT_METHOD: EXACT_METHOD_VERSION, NEAR_METHOD: NEAR_METHOD_VERSION,
    ROWS_METHOD: ROWS_METHOD_VERSION, GROUPS_METHOD: GROUPS_METHOD_VERSION, TIME_METHOD: TIME_METHOD_VERSION,
}

def registered_methods() -> dict[str, int]:
    """Every method that has a figure in the registry, with its version (``METHODS``; 1 for a
    method declared only by its figures), so that a newly declared figure is measured by default."""
    declared = {c.method for c in figure_columns()}
    return {m: METHODS.get(m, 1) for m in sorted(declared | set(METHODS))}


def methods_measured(*, near: bool = True, semantic: bool = False) -> dict[str, int]:
    """The methods a survey or audit measures, with their versions: all, or all but the
    near-duplicate method (``--no-near``: it costs more than the others together); and the
    paraphrase candidates, only when asked (``--semantic``)."""
    measured = {m: v for m, v in registered_methods().items() if near or m != NEAR_METHOD}
    return {**measured, SEMANTIC_METHOD: SEMANTIC_METHOD_VERSION} if semantic else measured


#: Examples stored per kind, profile and label column (``--examples`` on ``audit`` and ``run``).
DEFAULT_EXAMPLES = 20

NR = "NR"  # a figure that does not apply: NULL in tables, "NR" in exports


class Format(Enum):
    """How a figure is published (the ``lle`` view, exports, reports)."""

    COUNT = "count"  # an integer: 78
    PERCENT = "percent"  # rounded to 3 decimals, with a % sign: 10.049%
    FLOAT = "float"  # a float as Python and DuckDB print it: 7.0


@dataclass(frozen=True)
class KeyKind:
    """A way of comparing rows: the text key, or the text key plus one label column."""

    prefix: str  # column prefix of its figures
    title: str  # column heading in printed tables
    words: str  # "the text key"
    needs_label: bool


TEXT = KeyKind("text", "text", "the text key: the values of the row's text columns, as a tuple", False)
TEXT_AND_LABEL = KeyKind(
    "text_and_label", "text+label", "the text+label key: the text key plus the value of the row's label column", True
)
KEY_KINDS = (TEXT, TEXT_AND_LABEL)


@dataclass(frozen=True)
class KeyFigure:
    """A figure computed once per key kind, as one aggregate over ``per_key``.

    ``sql`` sees ``n_train``, ``n_validation``, ``n_test`` (rows of each split holding the key) and
    the bound parameter ``$rows_test``. A split that is absent has ``n_<split> = 0`` for every key.
    """

    stem: str
    sql: str
    definition: str
    title: str
    needs: tuple[str, ...] = ()  # splits that must exist, else the figure is NR
    sql_type: str = "BIGINT"
    fmt: Format = Format.COUNT
    method: str = LLE_METHOD

    def name(self, kind: KeyKind) -> str:
        return f"{kind.prefix}_{self.stem}"


@dataclass(frozen=True)
class RowFigure:
    """A figure computed from other figures of the same result row (SQL over their columns)."""

    name: str
    sql: str
    definition: str
    title: str
    published_name: str  # its column in the lle view
    needs_label: bool = False
    sql_type: str = "DOUBLE"
    fmt: Format = Format.FLOAT
    method: str = LLE_METHOD


@dataclass(frozen=True)
class Profile:
    """A key profile: how the text values are taken before keys are compared."""

    name: str  # the prefix of its figure columns
    words: str


RAW = Profile("raw", "the exact values, as LLE compares them")
NORMALIZED = Profile(
    "normalized",
    "each text value Unicode NFKC-normalized, case-folded, with runs of whitespace collapsed to one "
    "space and the ends stripped; a list value element by element; other values as they are. "
    "The label is always compared exactly",
)
PROFILES = (RAW, NORMALIZED)


class Grain(Enum):
    """The per-key table a :class:`ProfileFigure` aggregates over."""

    #: one row per distinct text key: ``n_train``, ``n_validation``, ``n_test``.
    TEXT = "text"
    #: one row per distinct (text key, label) of one label column: ``n_<split>``, rows holding the pair.
    LABEL = "label"
    #: one row per text key held by two or more rows, over the pairs above: ``labels_<split>``, the
    #: distinct labels the text carries in the split (a text held by one row has one label: its
    #: figures must count texts with two labels or more, which such a text never is).
    LABEL_TEXT = "label per text"
    #: computed from the profile's other figures of the same row (``{p}`` is the profile's prefix).
    ROW = "row"
    #: one row per distinct value of one text column (empty and NULL values left out, never matched):
    #: ``n_<split>``, and ``n_test_text_not_in_train``, the test rows holding the value whose whole
    #: text key does not occur in train. Only the per-column figures (``PER_COLUMN_FIGURES``) use it.
    COLUMN = "column"


@dataclass(frozen=True)
class ProfileFigure:
    """A figure of the exact method, computed once per key profile (``raw_``, ``normalized_``).

    ``sql`` is an aggregate over the ``grain``'s per-key table. ``percent`` names a companion
    figure, the count as a percentage of one split's rows: (column stem, split).
    """

    stem: str
    sql: str
    definition: str
    title: str
    grain: Grain = Grain.TEXT
    needs: tuple[str, ...] = ()  # splits that must all exist, else NR
    needs_any: tuple[str, ...] = ()  # splits of which one must exist, else NR
    percent: tuple[str, str] | None = None
    method: str = EXACT_METHOD

    @property
    def needs_label(self) -> bool:
        return self.grain not in (Grain.TEXT, Grain.COLUMN)

    def name(self, profile: Profile) -> str:
        return f"{profile.name}_{self.stem}"


# --- the LLE figures (method lle-2024): exactly as published; never change them -------------------

KEY_FIGURES: tuple[KeyFigure, ...] = (
    KeyFigure(
        "leaks_train_wrt_test",
        "count(*) FILTER (WHERE n_train > 0 AND n_test > 0)",
        "|set(K(train)) ∩ set(K(test))|: distinct keys of train that also occur in test",
        "leaks train→test",
        needs=("train",),
    ),
    KeyFigure(
        "leaks_validation_wrt_test",
        "count(*) FILTER (WHERE n_validation > 0 AND n_test > 0)",
        "|set(K(validation)) ∩ set(K(test))|: distinct keys of validation that also occur in test",
        "leaks validation→test",
        needs=("validation",),
    ),
    KeyFigure(
        "duplication_train",
        "sum(n_train) - count(*) FILTER (WHERE n_train > 0)",
        "len(train) − |set(K(train))|: rows of train beyond the first occurrence of their key",
        "duplicates train",
        needs=("train",),
    ),
    KeyFigure(
        "duplication_validation",
        "sum(n_validation) - count(*) FILTER (WHERE n_validation > 0)",
        "len(validation) − |set(K(validation))|: rows of validation beyond the first occurrence of their key",
        "duplicates validation",
        needs=("validation",),
    ),
    KeyFigure(
        "duplication_test",
        "sum(n_test) - count(*) FILTER (WHERE n_test > 0)",
        "len(test) − |set(K(test))|: rows of test beyond the first occurrence of their key",
        "duplicates test",
    ),
    KeyFigure(
        "test_biased",
        # An absent train split has n_train = 0 everywhere, so its leaks count as 0 here, as the
        # survey did: a test-only dataset still reports its own duplication.
        "(count(*) FILTER (WHERE n_train > 0 AND n_test > 0) + sum(n_test) - count(*) FILTER (WHERE n_test > 0))"
        " / $rows_test * 100",
        "(leaks_train_wrt_test + duplication_test) / len(test) × 100, in %; NR train leaks count as 0. "
        "Validation leaks are not part of it (every published row confirms this). Stored unrounded, "
        "published rounded to 3 decimals (10.049%)",
        "test biased",
        sql_type="DOUBLE",
        fmt=Format.PERCENT,
    ),
)

ROW_FIGURES: tuple[RowFigure, ...] = (
    RowFigure(
        "difference_annotation",
        "abs((coalesce(text_leaks_train_wrt_test, 0) - coalesce(text_and_label_leaks_train_wrt_test, 0))"
        " + (coalesce(text_leaks_validation_wrt_test, 0) - coalesce(text_and_label_leaks_validation_wrt_test, 0)))"
        "::DOUBLE",
        "|(text_leaks_train − text_and_label_leaks_train) + (text_leaks_validation − "
        "text_and_label_leaks_validation)|, NR terms taken as 0: texts that leak with another label, "
        "an approximation of annotation conflicts",
        "difference_annotation",
        published_name="difference_annotation_in_train_and_validation_splits",
        needs_label=True,
    ),
)


# --- the exact figures (method exact-2026): rows, not distinct keys; each test row counted once ----
# An empty FILTER sums to NULL, so every count is coalesced: 0 rows is a measured 0, not NR.

PROFILE_FIGURES: tuple[ProfileFigure, ...] = (
    ProfileFigure(
        "test_rows_in_train",
        "coalesce(sum(n_test) FILTER (WHERE n_train > 0), 0)",
        "test rows whose text key occurs in train",
        "test rows in train",
        needs=("train",),
        percent=("test_rows_in_train_pct", "test"),
    ),
    ProfileFigure(
        "test_rows_in_validation",
        "coalesce(sum(n_test) FILTER (WHERE n_validation > 0), 0)",
        "test rows whose text key occurs in validation",
        "test rows in validation",
        needs=("validation",),
        percent=("test_rows_in_validation_pct", "test"),
    ),
    ProfileFigure(
        "test_rows_in_train_or_validation",
        "coalesce(sum(n_test) FILTER (WHERE n_train > 0 OR n_validation > 0), 0)",
        "test rows whose text key occurs in train or in validation, each row counted once",
        "test rows in train or validation",
        needs_any=("train", "validation"),
        percent=("test_rows_in_train_or_validation_pct", "test"),
    ),
    ProfileFigure(
        "test_rows_repeated",
        "coalesce(sum(n_test - 1) FILTER (WHERE n_test > 0), 0)",
        "test rows whose text key occurs at an earlier position in test (rows − distinct keys)",
        "test rows repeated",
        percent=("test_rows_repeated_pct", "test"),
    ),
    ProfileFigure(
        "test_rows_contaminated",
        # Every row of a key found in train or validation counts; otherwise all but its first.
        "coalesce(sum(CASE WHEN n_train > 0 OR n_validation > 0 THEN n_test ELSE n_test - 1 END)"
        " FILTER (WHERE n_test > 0), 0)",
        "test rows in train or validation, or repeating an earlier test row; each test row counted "
        "once, so contaminated_test_pct lies in [0, 100]. Absent splits contribute nothing",
        "test rows contaminated",
        percent=("contaminated_test_pct", "test"),
    ),
    ProfileFigure(
        "validation_rows_in_train",
        "coalesce(sum(n_validation) FILTER (WHERE n_train > 0), 0)",
        "validation rows whose text key occurs in train (the train↔validation leaks LLE does not measure)",
        "validation rows in train",
        needs=("train", "validation"),
        percent=("validation_rows_in_train_pct", "validation"),
    ),
    ProfileFigure(
        "test_rows_in_train_same_label",
        "coalesce(sum(n_test) FILTER (WHERE n_train > 0), 0)",
        "test rows whose text occurs in train with the same label (label compared exactly; a "
        "sequence label as a whole)",
        "test rows in train, same label",
        grain=Grain.LABEL,
        needs=("train",),
        percent=("test_rows_in_train_same_label_pct", "test"),
    ),
    ProfileFigure(
        "test_rows_in_train_conflicting_label",
        # test rows whose text is in train = those whose pair is in train + those whose is not
        "{p}test_rows_in_train - {p}test_rows_in_train_same_label",
        "test rows whose text occurs in train, but never with their label; same_label + "
        "conflicting_label = test_rows_in_train",
        "test rows in train, other label",
        grain=Grain.ROW,
        needs=("train",),
        percent=("test_rows_in_train_conflicting_label_pct", "test"),
    ),
    *(
        ProfileFigure(
            f"conflicting_texts_{split}",
            f"count(*) FILTER (WHERE labels_{split} > 1)",
            f"distinct texts that carry more than one label within {split}",
            f"conflicting texts {split}",
            grain=Grain.LABEL_TEXT,
            needs=(split,) if split != "test" else (),
        )
        for split in ("train", "validation", "test")
    ),
)


# --- the per-column figures (method exact-2026, table column_measurements) ---------------------------
# For a config with two or more text columns, every PROFILE_FIGURES entry is measured again with the
# text key made of one text column alone (its TEXT grain table is the COLUMN grain's), under both
# profiles; rows whose value of that column is empty or NULL are never matched. These figures are
# measured at that grain only: a QA passage or an NLI premise shared across splits while the
# question or the hypothesis differs.

PER_COLUMN_FIGURES: tuple[ProfileFigure, ...] = (
    ProfileFigure(
        "test_rows_column_in_train_only",
        "coalesce(sum(n_test_text_not_in_train) FILTER (WHERE n_train > 0), 0)",
        "test rows whose value of this column occurs in train while their whole text key does not: "
        "the same passage or premise with another question or hypothesis",
        "column in train, text not",
        grain=Grain.COLUMN,
        needs=("train",),
        percent=("test_rows_column_in_train_only_pct", "test"),
    ),
)


def per_column_figures() -> tuple[ProfileFigure, ...]:
    """The figures of one text column alone (``column_measurements``): every exact figure, then
    the per-column ones."""
    return (*PROFILE_FIGURES, *PER_COLUMN_FIGURES)


def per_column_columns() -> list[Column]:
    """The figure columns of ``column_measurements``, named by stem (its ``profile`` column says
    which profile): the names ``audit --json`` uses under ``exact.raw``."""
    def stem(name: str) -> str:
        return name.removeprefix(RAW.name + "_")

    return [replace(c, name=stem(c.name), published_name=stem(c.published_name), profile=None,
                    definition=stem(c.definition.removesuffix(f"; {RAW.name} profile")))
            for f in per_column_figures() for c in _profile_columns(f, RAW)]


# --- the near-duplicate figures (method near-2026) -----------------------------------------------------


class NearGrain(Enum):
    """The per-key table a :class:`NearFigure` aggregates over (built by ``near_keys_sql`` / ``near_labels_sql``)."""

    #: one row per distinct normalized text key: ``n_<split>``, ``first_test`` (its first test row's
    #: position), ``best_train`` / ``best_validation`` (the highest Jaccard of another key of that
    #: split, NULL when none is at >= the lowest threshold) and ``earliest_near_test`` (the first
    #: test position of the keys at >= tau).
    KEY = "near key"
    #: one row per distinct (normalized text key, label) held by test rows: ``n_test``,
    #: ``near_train`` (the text has train rows at >= tau: its own or a near key's) and
    #: ``near_train_same_label`` (one of those carries this label).
    LABEL = "near label"


@dataclass(frozen=True)
class NearFigure:
    """A figure of the near-duplicate method: an aggregate over its grain's table.

    ``sql`` may use ``$threshold`` (tau). A figure is stored as a column named ``name``; ``percent``
    names a companion column, the count as a percentage of one split's rows.
    """

    name: str
    sql: str
    definition: str
    title: str
    grain: NearGrain = NearGrain.KEY
    needs: tuple[str, ...] = ()
    needs_any: tuple[str, ...] = ()
    percent: tuple[str, str] | None = None
    method: str = NEAR_METHOD

    @property
    def needs_label(self) -> bool:
        return self.grain is NearGrain.LABEL


#: A test key near train at a threshold: its own train rows (J = 1), or another key's.
_NEAR_TRAIN = "(n_train > 0 OR best_train >= {t})"
_NEAR_VALIDATION = "(n_validation > 0 OR best_validation >= {t})"
#: A test row repeats a near-duplicate: every row of its key but the first, and the first too
#: when a near key's first test row comes earlier.
_NEAR_REPEATS = "(n_test - 1 + CASE WHEN earliest_near_test < first_test THEN 1 ELSE 0 END)"

NEAR_FIGURES: tuple[NearFigure, ...] = (
    NearFigure(
        "test_rows_near_train",
        f"coalesce(sum(n_test) FILTER (WHERE n_test > 0 AND {_NEAR_TRAIN.format(t='$threshold')}), 0)",
        "test rows with at least one train row at Jaccard >= tau (an exact copy included)",
        "test rows near train",
        needs=("train",),
        percent=("test_rows_near_train_pct", "test"),
    ),
    NearFigure(
        "test_rows_near_validation",
        f"coalesce(sum(n_test) FILTER (WHERE n_test > 0 AND {_NEAR_VALIDATION.format(t='$threshold')}), 0)",
        "test rows with at least one validation row at Jaccard >= tau",
        "test rows near validation",
        needs=("validation",),
        percent=("test_rows_near_validation_pct", "test"),
    ),
    NearFigure(
        "test_rows_near_repeated",
        f"coalesce(sum({_NEAR_REPEATS}) FILTER (WHERE n_test > 0), 0)",
        "test rows with a test row at an earlier position at Jaccard >= tau",
        "test rows near-repeated",
        percent=("test_rows_near_repeated_pct", "test"),
    ),
    NearFigure(
        "test_rows_near_contaminated",
        f"coalesce(sum(CASE WHEN {_NEAR_TRAIN.format(t='$threshold')} OR {_NEAR_VALIDATION.format(t='$threshold')} "
        f"THEN n_test ELSE {_NEAR_REPEATS} END) FILTER (WHERE n_test > 0), 0)",
        "test rows near train, near validation or near-repeated, each counted once, so "
        "near_contaminated_test_pct lies in [0, 100]",
        "test rows near-contaminated",
        percent=("near_contaminated_test_pct", "test"),
    ),
    NearFigure(
        "validation_rows_near_train",
        f"coalesce(sum(n_validation) FILTER (WHERE n_validation > 0 AND {_NEAR_TRAIN.format(t='$threshold')}), 0)",
        "validation rows with at least one train row at Jaccard >= tau",
        "validation rows near train",
        needs=("train", "validation"),
        percent=("validation_rows_near_train_pct", "validation"),
    ),
    NearFigure(
        "test_rows_near_train_conflicting_label",
        "coalesce(sum(n_test) FILTER (WHERE near_train AND NOT near_train_same_label), 0)",
        "test rows with train rows at Jaccard >= tau, none of which carries the test row's label "
        "(similar text, different answer; the label compared exactly)",
        "test rows near train, other label",
        grain=NearGrain.LABEL,
        needs=("train",),
        percent=("test_rows_near_train_conflicting_label_pct", "test"),
    ),
)

#: The near-duplicate method's defaults: tau (near-duplicates at Jaccard >= tau) and n (character
#: n-grams). survey/near.py NearParams and the report's wording read them; each row records its own.
NEAR_DEFAULT_THRESHOLD = 0.8
NEAR_DEFAULT_SHINGLE = 5
#: The thresholds of the curve (table ``near_curve``): test_rows_near_train at each.
NEAR_CURVE: tuple[float, ...] = (0.9, 0.8, 0.7, 0.6)
NEAR_CURVE_SQL = f"coalesce(sum(n_test) FILTER (WHERE n_test > 0 AND {_NEAR_TRAIN.format(t='$t')}), 0)"


# --- beyond the pair of texts: rows that cannot be compared, groups, time order ------------------------


class SideGrain(Enum):
    """The table a :class:`SideFigure` aggregates over (the engine builds each)."""

    #: ``rows_checked``: one row per row of the measured splits: ``split`` and ``text_blank`` (every
    #: text column NULL, empty or whitespace only: :func:`blank_sql`).
    ROWS = "rows"
    #: ``label_rows``: one row per row and label column: ``split`` and ``label`` (the label's value).
    LABEL_ROWS = "label rows"
    #: ``per_group``: one row per distinct value of one group column (NULL and empty values left
    #: out): ``n_train``, ``n_validation``, ``n_test``, the rows of each split holding it.
    GROUP = "group"
    #: ``dated``: one row per row whose date column holds a date: ``split`` and ``d`` (a TIMESTAMP).
    #: ``$test_start`` binds the earliest test date.
    DATED = "dated"


@dataclass(frozen=True)
class SideFigure:
    """A figure beside the text comparison: an aggregate over its grain's table.

    ``percent`` names a companion column: (its name, the SQL of its denominator, that denominator
    in words); the count divided by it × 100.
    """

    name: str
    sql: str
    definition: str
    title: str
    grain: SideGrain
    needs: tuple[str, ...] = ()  # splits that must all exist, else NR
    percent: tuple[str, str, str] | None = None
    sql_type: str = "BIGINT"
    fmt: Format = Format.COUNT
    method: str = ROWS_METHOD
    needs_any: tuple[str, ...] = ()

    @property
    def needs_label(self) -> bool:
        return self.grain is SideGrain.LABEL_ROWS


def _split_needs(split: str) -> tuple[str, ...]:
    return (split,) if split != "test" else ()


SIDE_ROW_FIGURES: tuple[SideFigure, ...] = (
    *(
        SideFigure(
            f"{split}_rows_blank_text",
            f"count(*) FILTER (WHERE split = '{split}' AND text_blank)",
            f"rows of {split} whose text is blank: every text column NULL, empty or whitespace only (a "
            "list: empty, or every element so); such a row says nothing and matches every other blank row",
            f"{split} rows, blank text",
            SideGrain.ROWS,
            needs=_split_needs(split),
            percent=(f"{split}_rows_blank_text_pct", f"$rows_{split}", f"rows of {split}"),
        )
        for split in ("train", "validation", "test")
    ),
    *(
        SideFigure(
            f"{split}_rows_null_label",
            f"count(*) FILTER (WHERE split = '{split}' AND label IS NULL)",
            f"rows of {split} whose label (this row's label column) is NULL",
            f"{split} rows, NULL label",
            SideGrain.LABEL_ROWS,
            needs=_split_needs(split),
            percent=(f"{split}_rows_null_label_pct", f"$rows_{split}", f"rows of {split}"),
        )
        for split in ("train", "validation", "test")
    ),
)

GROUP_FIGURES: tuple[SideFigure, ...] = (
    SideFigure(
        "test_rows_group_in_train",
        "coalesce(sum(n_test) FILTER (WHERE n_train > 0), 0)",
        "test rows whose group (their value of the group column) also holds train rows",
        "test rows, group in train",
        SideGrain.GROUP,
        needs=("train",),
        percent=("test_rows_group_in_train_pct", "$rows_test", "rows of test"),
        method=GROUPS_METHOD,
    ),
    SideFigure(
        "test_rows_group_in_validation",
        "coalesce(sum(n_test) FILTER (WHERE n_validation > 0), 0)",
        "test rows whose group also holds validation rows",
        "test rows, group in validation",
        SideGrain.GROUP,
        needs=("validation",),
        percent=("test_rows_group_in_validation_pct", "$rows_test", "rows of test"),
        method=GROUPS_METHOD,
    ),
    SideFigure(
        "test_rows_group_in_train_or_validation",
        "coalesce(sum(n_test) FILTER (WHERE n_train > 0 OR n_validation > 0), 0)",
        "test rows whose group also holds train or validation rows, each row counted once",
        "test rows, group in train or validation",
        SideGrain.GROUP,
        needs_any=("train", "validation"),
        percent=("test_rows_group_in_train_or_validation_pct", "$rows_test", "rows of test"),
        method=GROUPS_METHOD,
    ),
    SideFigure(
        "validation_rows_group_in_train",
        "coalesce(sum(n_validation) FILTER (WHERE n_train > 0), 0)",
        "validation rows whose group also holds train rows",
        "validation rows, group in train",
        SideGrain.GROUP,
        needs=("train", "validation"),
        percent=("validation_rows_group_in_train_pct", "$rows_validation", "rows of validation"),
        method=GROUPS_METHOD,
    ),
    SideFigure(
        "test_groups_in_train",
        "count(*) FILTER (WHERE n_test > 0 AND n_train > 0)",
        "distinct groups of test that also hold train rows",
        "test groups in train",
        SideGrain.GROUP,
        needs=("train",),
        percent=("test_groups_in_train_pct", "count(*) FILTER (WHERE n_test > 0)", "groups of test"),
        method=GROUPS_METHOD,
    ),
    SideFigure(
        "test_groups_in_validation",
        "count(*) FILTER (WHERE n_test > 0 AND n_validation > 0)",
        "distinct groups of test that also hold validation rows",
        "test groups in validation",
        SideGrain.GROUP,
        needs=("validation",),
        percent=("test_groups_in_validation_pct", "count(*) FILTER (WHERE n_test > 0)", "groups of test"),
        method=GROUPS_METHOD,
    ),
    *(
        figure
        for split in ("train", "validation", "test")
        for figure in (
            SideFigure(
                f"groups_{split}",
                f"count(*) FILTER (WHERE n_{split} > 0)",
                f"distinct groups (values of the group column, NULL and empty left out) in {split}",
                f"groups in {split}",
                SideGrain.GROUP,
                needs=_split_needs(split),
                method=GROUPS_METHOD,
            ),
            SideFigure(
                f"rows_per_group_{split}",
                f"sum(n_{split}) / nullif(count(*) FILTER (WHERE n_{split} > 0), 0)",
                f"mean rows of {split} per group of {split} (rows with a group value / groups_{split})",
                f"rows per group, {split}",
                SideGrain.GROUP,
                needs=_split_needs(split),
                sql_type="DOUBLE",
                fmt=Format.FLOAT,
                method=GROUPS_METHOD,
            ),
            SideFigure(
                f"largest_group_pct_{split}",
                f"coalesce(max(n_{split}), 0) / nullif($rows_{split}, 0) * 100",
                f"the largest group's rows of {split} / rows of {split} × 100, in %: how concentrated {split} is",
                f"largest group, {split}",
                SideGrain.GROUP,
                needs=_split_needs(split),
                sql_type="DOUBLE",
                fmt=Format.PERCENT,
                method=GROUPS_METHOD,
            ),
        )
    ),
)

TIME_FIGURES: tuple[SideFigure, ...] = (
    *(
        figure
        for split in ("train", "validation", "test")
        for figure in (
            SideFigure(
                f"rows_dated_{split}",
                f"count(*) FILTER (WHERE split = '{split}')",
                f"rows of {split} whose date column holds a date",
                f"rows dated, {split}",
                SideGrain.DATED,
                needs=_split_needs(split),
                method=TIME_METHOD,
            ),
            SideFigure(
                f"first_date_{split}",
                f"min(d) FILTER (WHERE split = '{split}')",
                f"the earliest date of {split}",
                f"first date, {split}",
                SideGrain.DATED,
                needs=_split_needs(split),
                sql_type="TIMESTAMP",
                fmt=Format.FLOAT,
                method=TIME_METHOD,
            ),
            SideFigure(
                f"last_date_{split}",
                f"max(d) FILTER (WHERE split = '{split}')",
                f"the latest date of {split}",
                f"last date, {split}",
                SideGrain.DATED,
                needs=_split_needs(split),
                sql_type="TIMESTAMP",
                fmt=Format.FLOAT,
                method=TIME_METHOD,
            ),
        )
    ),
    SideFigure(
        "train_rows_after_test_start",
        "count(*) FILTER (WHERE split = 'train' AND d > $test_start)",
        "train rows dated after the earliest test row: a model trained on them has seen the test period",
        "train rows after test start",
        SideGrain.DATED,
        needs=("train",),
        percent=("train_rows_after_test_start_pct", "$rows_train", "rows of train"),
        method=TIME_METHOD,
    ),
    SideFigure(
        "validation_rows_after_test_start",
        "count(*) FILTER (WHERE split = 'validation' AND d > $test_start)",
        "validation rows dated after the earliest test row",
        "validation rows after test start",
        SideGrain.DATED,
        needs=("validation",),
        percent=("validation_rows_after_test_start_pct", "$rows_validation", "rows of validation"),
        method=TIME_METHOD,
    ),
    SideFigure(
        "train_test_overlap_days",
        # least() and greatest() skip a NULL: a split without a date has no range, so no overlap (NR)
        "CASE WHEN count(*) FILTER (WHERE split = 'train') > 0 AND count(*) FILTER (WHERE split = 'test') > 0 THEN"
        " greatest(0, epoch(least(max(d) FILTER (WHERE split = 'train'), max(d) FILTER (WHERE split = 'test')))"
        " - epoch(greatest(min(d) FILTER (WHERE split = 'train'), min(d) FILTER (WHERE split = 'test')))) / 86400 END",
        "the days the date ranges of train and test share (0: disjoint; NR when a split has no date)",
        "train/test overlap (days)",
        SideGrain.DATED,
        needs=("train",),
        sql_type="DOUBLE",
        fmt=Format.FLOAT,
        method=TIME_METHOD,
    ),
)


def side_columns(figure: SideFigure) -> list[Column]:
    """A side figure's count column, and its percentage column when it has one."""
    out = [Column(figure.name, figure.name, figure.sql_type, figure.fmt, figure.definition, figure.method, None, figure)]
    if figure.percent:
        name, _, words = figure.percent
        split = next((s for s in SPLITS if words.endswith(s)), None)
        out.append(Column(name, name, "DOUBLE", Format.PERCENT, f"{figure.name} / {words} × 100, in %",
                          figure.method, None, figure, None, split))
    return out


def group_columns() -> list[Column]:
    """The figure columns of ``group_measurements`` (one row per group column of a config)."""
    return [c for f in GROUP_FIGURES for c in side_columns(f)]


def time_columns() -> list[Column]:
    """The figure columns of ``time_measurements`` (one row per date column of a config)."""
    return [c for f in TIME_FIGURES for c in side_columns(f)]


# --- what the registry generates ---------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """One figure column of ``measurements``, as every consumer sees it."""

    name: str  # column in measurements
    published_name: str  # column in the lle view (and JSON key)
    sql_type: str
    fmt: Format
    definition: str
    method: str
    key_kind: KeyKind | None
    figure: KeyFigure | RowFigure | ProfileFigure | NearFigure | SideFigure
    profile: Profile | None = None  # the key profile of an exact figure (None: an LLE figure, raw)
    percent_of: str | None = None  # a percentage: the split whose rows it divides by

    @property
    def compat_name(self) -> str:
        """Its header in the published lbourdois/LLE train.csv ("valididation": their spelling)."""
        return self.published_name.replace("validation", "valididation")


def figure_columns(method: str | None = None) -> list[Column]:
    """Every figure column, in the published order: text figures, text+label figures, row figures."""
    columns = [
        Column(f.name(kind), f.name(kind), f.sql_type, f.fmt, _keyed_definition(f, kind), f.method, kind, f)
        for kind in KEY_KINDS
        for f in KEY_FIGURES
    ]
    columns += [Column(f.name, f.published_name, f.sql_type, f.fmt, f.definition, f.method, None, f) for f in ROW_FIGURES]
    columns += [column for profile in PROFILES for f in PROFILE_FIGURES for column in _profile_columns(f, profile)]
    columns += [column for f in NEAR_FIGURES for column in _near_columns(f)]
    columns += [column for f in SIDE_ROW_FIGURES for column in side_columns(f)]
    return [c for c in columns if method is None or c.method == method]


def _near_columns(figure: NearFigure) -> list[Column]:
    """A near figure's count column, and its percentage column when it has one."""
    out = [Column(figure.name, figure.name, "BIGINT", Format.COUNT, figure.definition, figure.method, None, figure)]
    if figure.percent:
        stem, split = figure.percent
        out.append(Column(stem, stem, "DOUBLE", Format.PERCENT,
                          f"{figure.name} / rows_{split} × 100, in %" + (f" (NR when {split} has no rows)" if split != "test" else ""),
                          figure.method, None, figure, None, split))
    return out


def _profile_columns(figure: ProfileFigure, profile: Profile) -> list[Column]:
    """A profile figure's count column, and its percentage column when it has one."""
    name = figure.name(profile)
    words = f"{figure.definition}; {profile.name} profile"
    out = [Column(name, name, "BIGINT", Format.COUNT, words, figure.method, None, figure, profile)]
    if figure.percent:
        stem, split = figure.percent
        pct = f"{profile.name}_{stem}"
        out.append(Column(pct, pct, "DOUBLE", Format.PERCENT, f"{name} / rows_{split} × 100, in %" + (f" (NR when {split} has no rows)" if split != "test" else ""),
                          figure.method, None, figure, profile, split))
    return out


def _keyed_definition(figure: KeyFigure, kind: KeyKind) -> str:
    if kind is TEXT:
        return f"{figure.definition}; K = text key"
    return f"as {TEXT.prefix}_{figure.stem}, with the text+label key"


def figure_names(method: str | None = None) -> tuple[str, ...]:
    return tuple(c.name for c in figure_columns(method))


SPLITS = ("train", "validation", "test")


# Python formats -------------------------------------------------------------------------------------


def published(value: Any, fmt: Format) -> str:
    """A figure as the published table writes it (the Python twin of the lle view's SQL)."""
    if value is None:
        return NR
    if fmt is Format.PERCENT:
        return f"{round(value, 3)}%"
    if fmt is Format.FLOAT:
        return str(float(value))
    return str(value)


def json_value(value: Any, fmt: Format) -> Any:
    """A figure as a JSON number: the published value (percent rounded to 3 decimals), None for NR."""
    if value is None:
        return None
    if fmt is Format.PERCENT:
        return round(value, 3)
    if fmt is Format.FLOAT:
        return float(value)
    return value


def lle_record(row: Mapping[str, Any], method: str = LLE_METHOD) -> dict[str, Any]:
    """One measured row as the published columns, with JSON numbers (``audit --json``)."""
    out: dict[str, Any] = {"dataset_name": row["dataset_name"]}
    for column in figure_columns(method):
        out[column.published_name] = json_value(row[column.name], column.fmt)
    return out


def lle_published_columns() -> tuple[str, ...]:
    """The lle view's columns (the published table's, "validation" spelled right)."""
    return ("dataset_name", *(c.published_name for c in figure_columns(LLE_METHOD)))


def lle_published_header() -> tuple[str, ...]:
    """The header of the published lbourdois/LLE train.csv, their spelling kept."""
    return ("dataset_name", *(c.compat_name for c in figure_columns(LLE_METHOD)))


