"""The engine: computes the registry's figures (``hubsurvey.core.figures``) in DuckDB SQL.

The method, in words: ``docs/method.md``.

The engine is pure: it reads the split files (or in-memory Arrow tables) given to it, and returns
plain dicts. No network and no results DB, so the same function runs in a local worker process or
on a Dask worker.

How the SQL works, in one paragraph: every split is projected to its key columns and stacked into
one table ``rows_all(split, pos, t0.., l0.., h_text, h_ntext)``, read once. ``GROUP BY key`` gives
one row per distinct key with its row count in each split (a per-key table, ``figure_sql.per_key_sql``);
every figure is an aggregate over such a table. The text key is a 64-bit hash of the values when
a check proves it collision-free on this data (``_key``), else the values themselves; a (text,
label) pair is grouped by the text key and the label value. GROUP BY and
DISTINCT compare values exactly, treat NULL as equal to NULL (as ``str(None)`` did in the survey)
and compare lists element by element, so no string conversion is needed.
"""

from __future__ import annotations

import contextlib
import re
import tempfile
import threading
from collections import deque
from collections.abc import Callable, Collection, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from duckdb.func import FunctionNullHandling, PythonUDFType

from hubsurvey.core import duck, figure_sql
from hubsurvey.core import figures as registry
from hubsurvey.core.errors import BadInputError
from hubsurvey.core.fingerprint import SplitFingerprint, parquet_batches
from hubsurvey.core.memory import ordinary_pages, release_freed_memory
from hubsurvey.core.splits import CANONICAL_SPLITS
from hubsurvey.core.store import quote_ident
from hubsurvey.survey import near as near_method
from hubsurvey.survey import normalize
from hubsurvey.survey.sources import ConfigData, SplitData

_POSITION = "__hubsurvey_position"  # the column of row positions added to an in-memory split
_TEXT_TYPE = re.compile(r"VARCHAR(\[\])*")  # the DuckDB types the normalized profile changes

# The figures' SQL is declared in the method registry (hubsurvey.core.figures), next to their
# definitions; the engine only builds rows_all and runs it.

#: The example kinds over the text key (per profile), with the condition on a key's row counts.
TEXT_EXAMPLE_KINDS: dict[str, str] = {
    "leak_train_test": "n_train > 0 AND n_test > 0",
    "leak_validation_test": "n_validation > 0 AND n_test > 0",
    "leak_train_validation": "n_train > 0 AND n_validation > 0",
    "duplicate_train": "n_train > 1",
    "duplicate_validation": "n_validation > 1",
    "duplicate_test": "n_test > 1",
}
#: The example kinds over (text key, label) of one label column.
LABEL_EXAMPLE_KINDS: dict[str, str] = {
    "label_conflict_train_test": "test_label_not_in_train",  # the texts table (figure_sql.per_text_sql)
    "conflicting_text_train": "labels_train > 1",
    "conflicting_text_validation": "labels_validation > 1",
    "conflicting_text_test": "labels_test > 1",
}
EXAMPLE_KINDS = (*TEXT_EXAMPLE_KINDS, *LABEL_EXAMPLE_KINDS)
#: The near-duplicate example kinds (pairs): the first side's split, its partner's, a condition on
#: the pair (q: the first side's key, o: the partner's); and near_train_conflicting_label per label.
NEAR_EXAMPLE_KINDS: dict[str, tuple[str, str, str]] = {
    "near_train": ("test", "train", "true"),
    "near_validation": ("test", "validation", "true"),
    "near_repeated": ("test", "test", "o.first_test < q.first_test"),  # the partner comes earlier
    "validation_near_train": ("validation", "train", "true"),
}
EXAMPLE_POSITIONS = 10  # row positions kept per split and example


#: Rows of the near texts read at a time: a batch's strings (as read, kept, normalized; and the
#: batch read ahead) are what the near stage holds of the texts, besides its 256 bytes a text.
#: 2^16 held 30 MB less than 2^17 at the 1M-row benchmark, in no more time.
NEAR_BATCH_ROWS = 1 << 16
READ_AHEAD = 2  # batches the thread reads ahead of the pass: two keep it fed (measured against one and three)
#: DuckDB's memory limit while the near stage's pass runs (``Engine._set_tables_aside``)
ASIDE_MEMORY_LIMIT = "32MB"


def _without_views(t: pa.DataType) -> pa.DataType:
    """``t`` as DuckDB's scan gave the near stage its texts before it read the files itself: every
    string view a large string (pyarrow's filter and take have no kernel for views), a dictionary
    its values, and a fixed-size list or a list view a list (``normalize_array`` folds lists: a
    fixed-size list of strings, as pyarrow reads one, would pass unfolded)."""
    if pa.types.is_dictionary(t):
        return _without_views(t.value_type)
    if pa.types.is_string_view(t):
        return pa.large_string()
    if pa.types.is_list(t) or pa.types.is_list_view(t) or pa.types.is_fixed_size_list(t):
        return pa.list_(_without_views(t.value_type))
    if pa.types.is_large_list(t) or pa.types.is_large_list_view(t):
        return pa.large_list(_without_views(t.value_type))
    return t


def _plain(batch: pa.RecordBatch) -> pa.RecordBatch:
    schema = pa.schema([f.with_type(_without_views(f.type)) for f in batch.schema])
    return batch if schema.equals(batch.schema) else batch.cast(schema)


def _chunked(values: pa.Array | pa.ChunkedArray) -> pa.ChunkedArray:
    return values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values], type=values.type)


class _NearTexts(near_method.TextSource):
    """The near stage's texts: each distinct normalized text key of ``near_texts`` with the text of
    one of its rows (``rep``, a rowid of ``rows_all``: any row of a key has its normalized text),
    read split by split from the splits themselves (their Parquet files, or their Arrow table),
    normalized batch by batch and sampled (``near.sample_mask``) by key.

    Not from ``rows_all``: the engine drops its text columns before the stage (220 MB at 1M rows of
    the benchmark), once this source has taken, per split, each position's rowid (8 bytes a row).
    The candidates' texts are read again by position (``Engine._texts_at``).

    Its thread starts reading the first batch when the source is made, while DuckDB gives the keys
    to keep and the engine sets its tables aside, so that the pass does not wait for it;
    :meth:`close` stops it."""

    def __init__(self, engine: Engine, max_texts: int):
        self.engine, con = engine, engine.con
        self.splits = [s for s in CANONICAL_SPLITS if s in engine.data.splits]
        self._keys: list[np.ndarray] = []
        self._where: list[tuple[int, np.ndarray]] = []  # (split's index in self.splits, positions) per batch
        #: each split's content fingerprint (``hubsurvey.core.fingerprint``), once its batches are read
        self.fingerprints: dict[str, str] = {}
        self._chosen = threading.Event()  # set when the keys to keep are known, or when the source closes
        self._closed = False
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="near-read", initializer=near_method.one_thread)
        self._reading = self._read()
        self._ahead = deque(self._pool.submit(next, self._reading, None) for _ in range(READ_AHEAD))
        try:
            reps = con.sql("SELECT rep, k, n_test > 0 OR n_validation > 0 AS asked FROM near_texts ORDER BY rep").fetchnumpy()
            self.reps = np.asarray(reps["rep"], dtype=np.int64)
            self.rep_keys = np.asarray(reps["k"], dtype=np.uint64)
            self.asked = np.asarray(reps["asked"], dtype=np.bool_)
            self.rate = near_method.sample_rate(len(self.reps), int(self.asked.sum()), max_texts)
            self.rowid_at: dict[str, np.ndarray] = {}
            for split in self.splits:
                got = con.sql(f"SELECT pos, rowid AS r FROM rows_all WHERE split = '{split}'").fetchnumpy()
                at = np.full(engine.rows[split], -1, dtype=np.int64)
                at[np.asarray(got["pos"], dtype=np.int64)] = np.asarray(got["r"], dtype=np.int64)
                self.rowid_at[split] = at
        except BaseException:
            self.close()
            raise
        self._chosen.set()

    def close(self) -> None:
        """Stop the reading thread (it ends the batch at hand) and close the files it reads."""
        self._closed = True
        self._chosen.set()
        self._pool.shutdown(wait=True, cancel_futures=True)  # the batches read ahead are not wanted
        self._reading.close()

    def __len__(self) -> int:
        return len(self.reps)

    def keys(self) -> np.ndarray:
        """The keys of the texts the batches gave, in their order (after :meth:`batches`)."""
        return np.concatenate(self._keys) if self._keys else np.zeros(0, dtype=np.uint64)

    def _normalized(self, table: pa.Table | pa.RecordBatch) -> Any:
        # String columns stay in Arrow (the pass reads their bytes in place); lists take Python
        normalized = [near_method.normalize_column(_chunked(table.column(t))) for t in self.engine.raw_text]
        texts = near_method.arrow_row_texts(normalized)
        return texts if texts is not None else near_method.row_texts([c.to_pylist() for c in normalized])

    def batches(self) -> Iterator[tuple[Any, np.ndarray]]:
        """The batches, each read and normalized in a thread while the pass sketches the one before
        (the fold pass and DuckDB release the GIL): the pass gets both cores, ``READ_AHEAD`` batches
        are read ahead.
        The thread's own compiled passes (the fingerprint's) run on it alone: a second team of
        threads beside the pass's slowed both (measured)."""
        while (batch := self._ahead.popleft().result()) is not None:
            self._ahead.append(self._pool.submit(next, self._reading, None))
            yield batch

    def _split_batches(self, split: str) -> Iterator[tuple[np.ndarray, pa.RecordBatch]]:
        """(positions, text columns ``t*``) of a split's rows, batch by batch, in order.

        Every column is read (``fingerprint.parquet_batches``), so that the same read gives the
        split's content fingerprint (``self.fingerprints``): one read of the files, not two. The
        text columns are then taken by position, as the views take them."""
        data = self.engine.data.splits[split]
        schema = data.schema()
        picked = [self.engine._position(schema, column) for column in self.engine._loaded[0]]
        fingerprint = SplitFingerprint(schema.names)
        if data.table is not None:
            batches: Iterator[pa.RecordBatch] = iter(data.table.to_batches(max_chunksize=NEAR_BATCH_ROWS))
        else:
            batches = (batch for path in data.files for batch in parquet_batches(path, NEAR_BATCH_ROWS))
        offset = 0
        for batch in batches:
            fingerprint.add(batch)
            texts = pa.RecordBatch.from_arrays([batch.column(i) for i in picked], names=self.engine.raw_text)
            yield np.arange(offset, offset + batch.num_rows, dtype=np.int64), _plain(texts)
            offset += batch.num_rows
        self.fingerprints[split] = fingerprint.value()

    def _read(self) -> Generator[tuple[Any, np.ndarray], None, None]:
        for code, split in enumerate(self.splits):
            for positions, batch in self._split_batches(split):
                self._chosen.wait()
                if self._closed:
                    return
                last = len(self.reps) - 1
                rowids = self.rowid_at[split][positions]
                at = np.minimum(np.searchsorted(self.reps, rowids), max(last, 0))
                kept = (self.reps[at] == rowids) if len(self.reps) else np.zeros(len(rowids), dtype=np.bool_)
                at = at[kept]
                keys, query = self.rep_keys[at], self.asked[at]
                sampled = near_method.sample_mask(keys, query, self.rate)
                kept[kept] = sampled
                keys, query = keys[sampled], query[sampled]
                if not len(keys):
                    continue
                self._keys.append(keys)
                self._where.append((code, positions[kept]))
                yield self._normalized(batch.filter(pa.array(kept))), query

    def take(self, rows: np.ndarray) -> Any:
        codes = np.concatenate([np.full(len(p), c, dtype=np.int8) for c, p in self._where]) if self._where \
            else np.zeros(0, np.int8)
        positions = np.concatenate([p for _, p in self._where]) if self._where else np.zeros(0, np.int64)
        return self._normalized(self.engine._texts_at(self.splits, codes[rows], positions[rows]))


@dataclass(frozen=True)
class Measurement:
    """The LLE figures of one (dataset, config, label column)."""

    label_column: str | None
    text_columns: tuple[str, ...]
    figures: dict[str, Any]  # text_* and text_and_label_* figures + difference_annotation
    #: the figures of each text column alone, {column: {profile: {figure: value}}} (named as in
    #: ``registry.per_column_columns()``); None for a config with one text column, or without exact-2026
    per_column: dict[str, dict[str, dict[str, Any]]] | None = None


@dataclass(frozen=True)
class NearResult:
    """The near-duplicate method's figures: text ones, per label column ones, the curve and how
    they were measured (its parameters, the texts, candidates and pairs)."""

    figures: dict[str, Any]
    by_label: list[dict[str, Any]]
    curve: dict[float, Any]  # threshold -> test_rows_near_train (empty when there is no train split)
    info: dict[str, Any]
    examples: list[dict[str, Any]]  # pairs: {kind, rank, jaccard, label_column, a: {...}, b: {...}}


@dataclass(frozen=True)
class Measured:
    """What :meth:`Engine.measure` returns: the figures of each label column, and the examples."""

    measurements: list[Measurement]
    examples: list[dict[str, Any]]
    near: NearResult | None = None


#: column names DuckDB's Parquet reader adds itself with the options the engine passes
_RESERVED_BY_READER = frozenset({"file_row_number"})


def _empty_sql(sql_type: str) -> str:
    """A condition (``{}``: the value) true when a value of ``sql_type`` is empty: the empty string,
    or the empty list; a value of another type is never empty (only NULL goes unmatched)."""
    if sql_type == "VARCHAR":
        return "({}) = ''"
    if sql_type.endswith("[]"):
        return "len({}) = 0"
    return "false"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def numbering_reused(per_split: Mapping[str, tuple[int, int, int | None, int | None]]) -> bool:
    """Whether a group column's values look like a numbering that restarts per split, as MELD's
    ``Dialogue_ID`` (0, 1, 2... in train, and again in test): every value of every split an integer
    (1 to 18 ASCII digits), and two splits or more each a numbering of its own: its smallest value
    0 or 1 and its distinct values at least half of 0..largest. (A split sampled from another's
    numbering, as miam/ilisten's validation from its train, is not one of its own, and does not
    count.) Such a value names another group in each split, so its figures are kept out of the
    verdict. ``per_split``: (distinct values, values that are not integers, smallest, largest) of each split."""
    present = [v for v in per_split.values() if v[0] > 0]
    if any(others for _, others, _, _ in present):
        return False
    own = [n for n, _, low, high in present if low is not None and high is not None and low in (0, 1) and n * 2 >= high + 1]
    return len(own) >= 2


class Engine:
    """Measures one config. Use as a context manager; it owns one in-memory DuckDB connection."""

    #: The 64-bit hash of a key, as SQL around its columns; a test swaps in a weak one to force
    #: real collisions and exercise the exact fallback of ``_key``.
    hash_sql = "hash({})"
    #: The near-duplicate method's parameters (survey/near.py): an instance attribute to change them.
    near_params = near_method.NearParams()
    #: Whether the exact method also measures each text column alone (two text columns or more);
    #: the per-column benchmark turns it off for its baseline.
    per_column = True

    def __init__(self, data: ConfigData, *, threads: int | None = None, memory_limit: str | None = None):
        self.data = data
        ordinary_pages()
        self.con = duck.connect()
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        self._memory_limit = memory_limit
        if memory_limit:
            self.con.execute("SET memory_limit = $m", {"m": memory_limit})
        # DuckDB's spill files (a GROUP BY over the memory limit, the tables the near stage sets
        # aside) go to a folder of the engine's own, removed with it: DuckDB's default for an
        # in-memory database is .tmp in the working directory
        self._spill = tempfile.TemporaryDirectory(prefix="hubsurvey-engine-")
        self.con.execute("SET temp_directory = $d", {"d": self._spill.name})
        self._aside = False  # DuckDB's tables are set aside (``_set_tables_aside``)
        self.con.execute("SET preserve_insertion_order = false")  # not needed; lets GROUP BY spill
        # jemalloc's background threads give freed memory back to the system (56 MB less at the end
        # of the load of the 1M-row benchmark; the near stage drops rows_all's texts, 220 MB)
        self.con.execute("SET allocator_background_threads = true")
        # The files are local (downloaded first), so a page is read when the scan reaches it.
        # Prefetching reads a row group's whole column chunks first: at the 1M-row benchmark, the
        # train split's texts, 145 MB of memory touched for the first time (37k page faults).
        with contextlib.suppress(duckdb.Error):  # a DuckDB without the setting reads as it did
            self.con.execute("SET disable_parquet_prefetching = true")
        self.rows = {name: split.num_rows for name, split in data.splits.items()}
        #: the splits' content fingerprints that the near stage's read of every row gave (the others
        #: are read for them alone: ``survey/measure.py``)
        self.split_fingerprints: dict[str, str] = {}
        self._renamed = contextlib.ExitStack()  # renamed copies of files whose names DuckDB reserves
        for name, split in data.splits.items():
            self._register(name, split)

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.con.close()
        self._renamed.close()
        self._spill.cleanup()

    def _set_tables_aside(self) -> None:
        """While the near stage's pass holds its band hashes and sketches (256 bytes a text),
        DuckDB's tables sit idle. A memory limit of ``ASIDE_MEMORY_LIMIT`` has DuckDB write them to
        its spill folder (its own larger-than-memory mechanism: 120 MB at the 1M-row benchmark, a
        config whose tables fit under it writes nothing), and their pages go back to the system;
        :meth:`_bring_tables_back` restores the limit before DuckDB is queried again, and the tables
        are read back as the SQL needs them. Best effort: a limit DuckDB cannot meet is left as it was."""
        with contextlib.suppress(duckdb.Error):  # "could not free up enough memory": pinned blocks
            self.con.execute("SET memory_limit = $m", {"m": ASIDE_MEMORY_LIMIT})
            self._aside = True
        release_freed_memory()

    def _bring_tables_back(self) -> None:
        if self._aside:
            self._aside = False
            if self._memory_limit:
                self.con.execute("SET memory_limit = $m", {"m": self._memory_limit})
            else:
                self.con.execute("RESET memory_limit")

    def _readable(self, path: str) -> str:
        """``path``, or a copy with positional column names when a column's name is one DuckDB's
        ``file_row_number`` option reserves (compared without case, as DuckDB does): the data's own
        names never reach SQL anyway (see :meth:`_register`). The copy is streamed batch by batch."""
        source = pq.ParquetFile(path)
        if not any(n.lower() in _RESERVED_BY_READER for n in source.schema_arrow.names):
            return path
        import tempfile

        folder = self._renamed.enter_context(tempfile.TemporaryDirectory(prefix="hubsurvey-renamed-"))
        copy = f"{folder}/{abs(hash(path))}.parquet"
        schema = source.schema_arrow
        renamed = pa.schema([f.with_name(f"c{i}") for i, f in enumerate(schema)])
        with pq.ParquetWriter(copy, renamed) as writer:
            for batch in source.iter_batches():
                writer.write_batch(pa.RecordBatch.from_arrays(batch.columns, schema=renamed))
        return copy

    def _register(self, name: str, split: SplitData) -> None:
        """A view ``split_<name>`` over the split's Parquet files (read by DuckDB) or Arrow table.

        Its columns are the data's, in order, then ``pos``: the row's position in the split (files
        in their given order), which the examples report. The dataset's column names never reach
        SQL: DuckDB identifiers are case-insensitive even when quoted (``Text`` and ``text`` would
        resolve to one column), and a name may hold any character. ``_stack`` renames every
        column by position instead.
        """
        view = f"split_{name}"  # canonical split names only: train, validation, test
        if split.table is not None:
            positions = pa.array(range(split.table.num_rows), pa.int64())
            self.con.register(f"arrow_{name}", split.table.append_column(_POSITION, positions))
            self.con.execute(f"CREATE VIEW {view} AS SELECT * FROM arrow_{name}")
            return
        # One view per file with its row numbers, shifted by the rows of the files before it.
        # read_parquet takes the file as a bound parameter: no path is pasted into SQL.
        width = len(split.schema())
        data = ", ".join(f"c{i}" for i in range(width))
        parts, offset = [], 0
        for k, path in enumerate(split.files):
            self.con.read_parquet(self._readable(path), file_row_number=True).create_view(f"{view}_{k}")
            parts.append(f"SELECT {data}, frn + {offset} AS pos FROM {view}_{k} AS s({data}, frn)")
            offset += pq.ParquetFile(path).metadata.num_rows
        self.con.execute(f"CREATE VIEW {view} AS {' UNION ALL '.join(parts)}")

    def _position(self, schema: pa.Schema, column: str) -> int:
        """The index of ``column`` in the data, matched exactly; refuse a missing or repeated name."""
        found = schema.get_all_field_indices(column)
        if len(found) != 1:
            why = "is not in the data" if not found else f"names {len(found)} columns"
            raise BadInputError(f"{self.data.where()}: column {column!r} {why}; it cannot be measured unambiguously")
        return found[0]

    def _stack(self, aliases: Mapping[str, str]) -> str:
        """SQL for ``(split, pos, <alias>...)`` over the present splits (:meth:`_split_selects`)."""
        return " UNION ALL ".join(f"SELECT '{name}' AS split, {select}" for name, select in self._split_selects(aliases).items())

    def _split_selects(self, aliases: Mapping[str, str]) -> dict[str, str]:
        """Per present split, SQL for ``pos, <alias>...`` (without ``SELECT``) over its view.

        ``aliases`` maps a positional alias (``t0``, ``l0``) to the dataset's column name. Each
        view's columns are renamed ``c0..c<n-1>, pos`` by position (``FROM view AS s(c0, ...)``),
        so the SQL holds no dataset name; check_config has proved every split has the same schema.
        """
        schema = self.data.splits["test"].schema()
        picked = ", ".join(f"c{self._position(schema, column)} AS {alias}" for alias, column in aliases.items())
        renamed = ", ".join([*(f"c{i}" for i in range(len(schema))), "pos"])
        selects = {}
        for name in CANONICAL_SPLITS:
            if name in self.data.splits:
                width = len(self.con.table(f"split_{name}").columns) - 1  # without pos
                if width != len(schema):  # never expected: DuckDB and Arrow disagree on the columns
                    raise BadInputError(
                        f"{self.data.where(self.data.splits[name].source_name)}: "
                        f"DuckDB reads {width} columns where Arrow has {len(schema)}"
                    )
                selects[name] = f"pos, {picked} FROM split_{name} AS s({renamed})"
        return selects

    def _texts_at(self, splits: Sequence[str], codes: np.ndarray, positions: np.ndarray) -> pa.Table:
        """The text columns (``t*``) of the rows ``splits[codes[i]]`` at ``positions[i]``, in that
        order, read from the splits' own views (``rows_all`` holds no texts during the near stage)."""
        self._bring_tables_back()
        selects = self._split_selects(dict(zip(self.raw_text, self._loaded[0])))
        self.con.register("texts_wanted", pa.table({"i": np.arange(len(positions), dtype=np.int64),
                                                    "s": np.asarray(codes, dtype=np.int8), "p": np.asarray(positions, dtype=np.int64)}))
        try:
            parts = " UNION ALL ".join(
                f"SELECT w.i, {', '.join(f'x.{t}' for t in self.raw_text)} FROM texts_wanted AS w "
                f"JOIN (SELECT {selects[split]}) AS x ON w.s = {k} AND x.pos = w.p"
                for k, split in enumerate(splits))
            found = self.con.sql(f"SELECT * FROM ({parts}) ORDER BY i").to_arrow_table()
        finally:
            self.con.unregister("texts_wanted")
        return found.drop_columns(["i"])

    def _load(self, text_columns: Sequence[str], label_columns: Sequence[str], *, normalized: bool = True,
              per_column: bool = True) -> None:
        """rows_all(split, pos, t*, l*, h_text[, h_ntext][, h_c*, h_nc*]): the keys and their hashes, in one pass.

        ``h_c<i>`` / ``h_nc<i>`` hash text column ``t<i>``'s raw / normalized value alone (NULL when it
        is NULL or empty), for a config of two text columns or more measured by the exact method
        (``per_column``).

        ``h_ntext`` hashes the ``normalized`` profile of the text values. The normalized values are
        not kept (they would double the memory): where they are needed (the collision check, an
        exact fallback) they are computed again from ``t*``. A (text, label) pair needs no hash of
        its own: it is grouped by the text key and the label value (``figure_sql.per_pair_sql``).
        """
        aliases = {f"t{i}": c for i, c in enumerate(text_columns)}
        aliases.update({f"l{j}": c for j, c in enumerate(label_columns)})
        stacked = self._stack(aliases)
        sql_types = {r[0]: r[1] for r in self.con.execute(f"DESCRIBE {stacked}").fetchall()}
        self.raw_text = [f"t{i}" for i in range(len(text_columns))]
        self.normalized_text = [self._normalizer(i, sql_types[f"t{i}"]) for i in range(len(text_columns))]
        # With two text columns or more, each column's value is hashed too (NULL: empty or NULL, never
        # matched), for the figures of each column alone (``_column_figures``).
        self._per_column = per_column and normalized and len(text_columns) > 1
        self._empty = [_empty_sql(sql_types[t]) for t in self.raw_text]
        column_hashes = "".join(f", {self._column_hash(t, empty)} AS h_c{i}"
                                for i, (t, empty) in enumerate(zip(self.raw_text, self._empty))) if self._per_column else ""
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE rows_all AS "
                         f"SELECT *, {self.hash_sql.format(', '.join(self.raw_text))} AS h_text{column_hashes} FROM ({stacked})")
        if normalized:
            self._hash_normalized([sql_types[t] == "VARCHAR" for t in self.raw_text])
        self._loaded = (tuple(text_columns), tuple(label_columns))
        self._profiles = (registry.RAW, registry.NORMALIZED) if normalized else (registry.RAW,)

    def _hash_normalized(self, is_string: Sequence[bool]) -> None:
        """Add ``h_ntext``, the hash of the ``normalized`` text key, to ``rows_all``.

        Two passes over the table in memory, not in the read: a Parquet file is read by one thread
        per row group, and a split is often one row group, so work done in the read runs on one
        core (0.9 s a million rows here, against 0.3 s on the table). The rows whose strings are
        all ASCII are normalized in SQL (``_ascii_normalizer``); the others, fetched as Arrow, by
        ``normalize.normalize_each`` in one call: a Python function called from SQL is called
        once per 2048 rows, whichever few of them need it (1 s a million rows, mostly overhead).
        """
        h = self.hash_sql
        strings = [t for t, flag in zip(self.raw_text, is_string) if flag]
        all_ascii = " AND ".join(f"({t} IS NULL OR strlen({t}) = length({t}))" for t in strings) or "true"
        fast = [self._ascii_normalizer(t) if flag else n
                for t, n, flag in zip(self.raw_text, self.normalized_text, is_string)]
        self.con.execute("ALTER TABLE rows_all ADD COLUMN h_ntext UBIGINT")
        for i in range(len(self.raw_text) if self._per_column else 0):
            self.con.execute(f"ALTER TABLE rows_all ADD COLUMN h_nc{i} UBIGINT")
        self.con.execute(f"UPDATE rows_all SET h_ntext = {h.format(', '.join(fast))}{self._column_hashes(fast)} WHERE {all_ascii}")
        others = self.con.sql(f"SELECT rowid AS row_id, {', '.join(self.raw_text)} FROM rows_all "
                              f"WHERE NOT ({all_ascii})").to_arrow_table()
        if not others.num_rows:
            return
        for t, flag in zip(self.raw_text, is_string):
            if flag:
                normalized_values = normalize.normalize_each(others.column(t))
                others = others.set_column(others.schema.get_field_index(t), t, normalized_values)
        self.con.register("normalized_others", others)
        try:
            # the other columns (lists of strings) keep their normalizer, given the same names
            values = [f"o.{t}" if flag else re.sub(rf"\b{t}\b", f"o.{t}", n)
                      for t, n, flag in zip(self.raw_text, self.normalized_text, is_string)]
            self.con.execute(f"UPDATE rows_all SET h_ntext = {h.format(', '.join(values))}{self._column_hashes(values)} "
                             f"FROM normalized_others AS o WHERE rows_all.rowid = o.row_id")
        finally:
            self.con.unregister("normalized_others")

    def _column_hash(self, value: str, empty: str) -> str:
        """SQL for the hash of one text column's ``value``: NULL when it is NULL or ``empty``."""
        return f"CASE WHEN ({value}) IS NULL OR {empty.format(value)} THEN NULL ELSE {self.hash_sql.format(value)} END"

    def _column_hashes(self, values: Sequence[str]) -> str:
        """The SET items of the ``h_nc<i>`` columns (each text column's normalized hash), from the
        normalized ``values``; nothing for a config with one text column."""
        if not self._per_column:
            return ""
        return "".join(f", h_nc{i} = {self._column_hash(v, empty)}" for i, (v, empty) in enumerate(zip(values, self._empty)))

    @staticmethod
    def _ascii_normalizer(t: str) -> str:
        """SQL for the ``normalized`` profile of an ASCII string ``t``: there NFKC is the identity and
        casefold is lower() (the shortcut normalize_array takes, in SQL).

        Most strings hold no whitespace to collapse (no run of two, none at the ends, no tab or
        newline): for those lower() is the whole profile, and a few contains() calls prove it 3x
        faster than the regex replacement costs. (trim() without characters trims spaces, all that
        is left at the ends once runs are collapsed; trim(x, ' ') is 2x slower.)
        """
        collapse = " OR ".join([f"contains({t}, '  ')", f"starts_with({t}, ' ')", f"ends_with({t}, ' ')",
                                *(f"contains({t}, chr({ord(c)}))" for c in normalize.ASCII_WHITESPACE_OTHER_THAN_SPACE)])
        return (f"CASE WHEN {collapse} THEN "
                f"trim(regexp_replace(lower({t}), '{normalize.ASCII_WHITESPACE_TO_COLLAPSE}', ' ', 'g')) "
                f"ELSE lower({t}) END")

    def _normalizer(self, i: int, sql_type: str) -> str:
        """SQL for the ``normalized`` profile of text column ``t<i>``: a vectorized Python function
        (``survey/normalize.py``) for strings and lists of strings; other values as they are."""
        if not _TEXT_TYPE.fullmatch(sql_type):
            return f"t{i}"
        name = f"hs_normalize_{i}"
        with contextlib.suppress(duckdb.Error):  # measured again with other columns
            self.con.remove_function(name)
        duck_type = duckdb.sqltype(sql_type)
        self.con.create_function(name, normalize.normalize_array, [duck_type], duck_type,
                                 type=PythonUDFType.ARROW, null_handling=FunctionNullHandling.SPECIAL,
                                 side_effects=False)
        if sql_type != "VARCHAR":
            return f"{name}(t{i})"
        # An ASCII string (as many bytes as characters) is normalized by DuckDB itself, without a
        # Python call; only the other strings reach Python.
        t = f"t{i}"
        return f"CASE WHEN strlen({t}) = length({t}) THEN {self._ascii_normalizer(t)} ELSE {name}({t}) END"

    def _key(self, hash_column: str, values: Sequence[str], table: str) -> list[str]:
        """Group ``rows_all`` by its text key into ``table`` (``figure_sql.per_key_sql``); return the
        key: the hash when it is exact for this data, else the values themselves (SQL expressions).

        Grouping by a 64-bit hash is several times faster than grouping by long strings, but two
        different keys could share a hash. A collision can only hide in a group of more than one
        row, so those (few: the duplicates and leaks) are checked against the values.
        """
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {figure_sql.per_key_sql([hash_column])}")
        if self._hash_is_exact(hash_column, values, table):
            return [hash_column]
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE {table} AS {figure_sql.per_key_sql(values)}")
        return list(values)

    def _hash_is_exact(self, hash_column: str, values: Sequence[str], table: str, key: str = "k0") -> bool:
        """Whether no two different values (SQL expressions over ``rows_all``) share a hash among the
        keys of ``table`` (grouped by ``hash_column``, the hash in its column ``key``) held by more than one row."""
        repeated = f"SELECT {key} FROM {table} WHERE n_train + n_validation + n_test > 1"
        return bool(self.con.execute(
            f"""
            SELECT count(*) = (SELECT count(*) FROM ({repeated}))
            FROM (SELECT DISTINCT {hash_column}, {', '.join(values)} FROM rows_all
                  WHERE {hash_column} IN ({repeated}))
            """
        ).fetchall()[0][0])  # fetchall: the result is finished, whatever runs next on the connection

    def _params(self) -> dict[str, Any]:
        params: dict[str, Any] = {f"has_{s}": s in self.data.splits for s in ("train", "validation")}
        params.update(rows_test=self.rows["test"], rows_validation=self.rows.get("validation"))
        return params

    def _select(self, sql: str, values: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Run one figures SELECT; its columns are named as stored. Unused parameters are dropped."""
        params = {k: v for k, v in {**self._params(), **(values or {})}.items() if re.search(rf"\${k}\b", sql)}
        result = self.con.execute(sql, params)
        names = [d[0] for d in result.description]
        return dict(zip(names, result.fetchone() or ()))

    def _row_figures(self, figures: dict[str, Any]) -> dict[str, Any]:
        """The registry's row figures, from the key figures of the same row."""
        values = ", ".join(f"${name} AS {quote_ident(name)}" for name in figures)
        result = self.con.execute(f"WITH figures AS (SELECT {values}) {figure_sql.row_figures_sql()}", figures)
        names = [d[0] for d in result.description]
        return dict(zip(names, result.fetchone() or ()))

    def _label_figures(self, profile: registry.Profile, key: Sequence[str], keys: str, j: int, text: Mapping[str, Any],
                       *, lle: bool, exact: bool, source: str = "rows_all",
                       declared: Sequence[registry.ProfileFigure] = registry.PROFILE_FIGURES) -> dict[str, Any]:
        """The figures of label column ``l<j>`` under ``profile``, with the text ``key`` grouped in
        ``keys``: the LABEL grain's over ``pairs``, the LABEL_TEXT grain's over ``texts`` (both left
        for the examples), then the ROW grain's from them and ``text`` (the text figures); with
        LLE's text+label figures when ``lle``."""
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE pairs AS {figure_sql.per_pair_sql(key, f'l{j}', source)}")
        items = figure_sql.lle_items(registry.TEXT_AND_LABEL) if lle else []
        items += figure_sql.profile_figures_sql(profile, registry.Grain.LABEL, declared) if exact else []
        figures = self._select(figure_sql.aggregate_sql(items, "pairs"))
        if exact:
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE texts AS {figure_sql.per_text_sql(len(key), keys, 'pairs')}")
            items = figure_sql.profile_figures_sql(profile, registry.Grain.LABEL_TEXT, declared)
            figures.update(self._select(figure_sql.aggregate_sql(items, "texts")))
            bound = {n: v for n, v in {**text, **figures}.items() if n.startswith(profile.name + "_")}
            figures.update(self._select(figure_sql.row_grain_sql(profile, bound), bound))
        return figures

    def _column_figures(self, profile: registry.Profile, i: int, labels: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """Every figure of ``registry.per_column_figures()`` for text column ``t<i>`` alone under
        ``profile``: its text figures, and its label figures per label column, over the rows of
        ``rows_profile`` (:meth:`_profile_rows`) whose value of the column is neither empty nor
        NULL. Named by stem, without the profile's prefix."""
        column_hash = f"h_c{i}" if profile is registry.RAW else f"h_nc{i}"
        value = self.raw_text[i] if profile is registry.RAW else self.normalized_text[i]
        declared = registry.per_column_figures()
        source = figure_sql.PER_COLUMN_SOURCE
        self.con.execute(f"CREATE OR REPLACE TEMP VIEW {source} AS SELECT * FROM rows_profile WHERE {column_hash} IS NOT NULL")
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE keys_column AS {figure_sql.per_key_sql([column_hash], source)}")
        column_key = [column_hash]
        if not self._hash_is_exact(column_hash, [value], "keys_column"):  # group by the values, read again
            self.con.execute(f"CREATE OR REPLACE TEMP VIEW {source} AS SELECT p.*, r.{self.raw_text[i]} FROM rows_profile "
                             f"AS p JOIN rows_all AS r ON r.rowid = p.row_id WHERE p.{column_hash} IS NOT NULL")
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE keys_column AS {figure_sql.per_key_sql([value], source)}")
            column_key = [value]
        items = [*figure_sql.profile_figures_sql(profile, registry.Grain.TEXT, declared),
                 *figure_sql.profile_figures_sql(profile, registry.Grain.COLUMN, declared)]
        text = self._select(figure_sql.aggregate_sql(items, "keys_column"))
        by_label = [self._label_figures(profile, column_key, "keys_column", j, text, lle=False, exact=True,
                                        source=source, declared=declared) for j in range(labels)]
        self.con.execute(f"DROP TABLE keys_column; DROP VIEW {source}")
        prefix = profile.name + "_"
        return ({n.removeprefix(prefix): v for n, v in text.items()},
                [{n.removeprefix(prefix): v for n, v in figures.items()} for figures in by_label])

    def _profile_rows(self, profile: registry.Profile, key: Sequence[str], keys: str, labels: int) -> None:
        """``rows_profile``: what the figures of each text column alone read under ``profile``, one
        row per row of ``rows_all``: ``split``, ``pos``, ``row_id``, the labels, every text column's
        hash (NULL: empty or NULL) and ``text_in_train`` (the whole text ``key``, grouped in
        ``keys``, occurs in train). No string: once per profile, where each column reads it again."""
        hashes = [f"h_c{i}" if profile is registry.RAW else f"h_nc{i}" for i in range(len(self.raw_text))]
        self.con.execute("CREATE OR REPLACE TEMP TABLE rows_profile AS "
                         + figure_sql.per_column_rows_sql(["rowid AS row_id", *(f"l{j}" for j in range(labels)), *hashes],
                                                        key, keys))

    def measure(self, text_columns: Sequence[str], label_columns: Sequence[str],
                methods: Collection[str] | None = None, *, examples: int = 0,
                positions: int = EXAMPLE_POSITIONS) -> Measured:
        """One Measurement per label column (or one with label_column None when there is none), and
        up to ``examples`` examples of every kind (``EXAMPLE_KINDS``; the exact method's).

        Per profile, one GROUP BY over the text key gives the per-key table of the text figures
        (LLE's text_ figures from the raw one), and per label column one GROUP BY over (text, label)
        the table of the label figures (LLE's text_and_label_ figures from the raw one). The
        examples are picked from the same tables, each dropped once used: at most one text table
        and one pair table are held at a time. ``methods`` (default: all) limits the figures to
        those methods' (the benchmark measures LLE alone with it), and the work to theirs: the near
        method alone runs no raw profile GROUP BY.

        With two text columns or more, the exact method also measures each text column alone
        (``Measurement.per_column``, :meth:`_column_figures`), per profile, from ``rows_profile``.
        """
        every = {c.method for c in registry.figure_columns()}
        methods = every if methods is None else set(methods)
        exact = registry.EXACT_METHOD in methods
        near = registry.NEAR_METHOD in methods
        lle = registry.LLE_METHOD in methods
        examples_wanted = examples
        examples = examples if exact else 0
        text_columns, label_columns = tuple(text_columns), tuple(label_columns)
        if near:
            near_method.warm_up()  # while DuckDB reads and hashes
        self._load(text_columns, label_columns, normalized=exact or near, per_column=exact and self.per_column)
        text: dict[str, Any] = {}
        by_label: list[dict[str, Any]] = [{} for _ in label_columns]
        if registry.ROWS_METHOD in methods:  # before the near stage drops rows_all's texts
            text, by_label = self._blank_rows(len(label_columns))
        found: list[dict[str, Any]] = []
        normalized_key: list[str] | None = None
        # per label column (one when there is none): {text column: {profile: figures}}
        per_column_names = [c.name for c in registry.per_column_columns()]
        by_column: list[dict[str, dict[str, dict[str, Any]]]] = [{} for _ in label_columns or (None,)]
        # the raw profile's GROUP BYs give LLE's figures (and the exact method's raw ones): not run
        # when neither is asked for
        for profile in self._profiles if exact else (registry.RAW,) if lle else ():
            raw = profile is registry.RAW
            keys = f"keys_{profile.name}"
            key = self._key("h_text" if raw else "h_ntext", self.raw_text if raw else self.normalized_text, keys)
            normalized_key = normalized_key if raw else key
            items = figure_sql.lle_items(registry.TEXT) if raw else []
            items += figure_sql.profile_figures_sql(profile, registry.Grain.TEXT) if exact else []
            text.update(self._select(figure_sql.aggregate_sql(items, keys)))
            if examples:
                found += self._examples_of(profile, key, keys, TEXT_EXAMPLE_KINDS, None, examples, positions)
            for j, label in enumerate(label_columns):
                by_label[j].update(self._label_figures(profile, key, keys, j, text, lle=raw, exact=exact))
                if examples:
                    found += self._examples_of(profile, key, "texts", LABEL_EXAMPLE_KINDS, (label, j), examples, positions)
            if exact and self._per_column:
                self._profile_rows(profile, key, keys, len(label_columns))
                for i, column in enumerate(text_columns):
                    per_text, per_label = self._column_figures(profile, i, len(label_columns))
                    for figures, found_column in zip(by_column, per_label or [{}]):
                        found_column = {**per_text, **found_column}  # a figure not measured is NR
                        figures.setdefault(column, {})[profile.name] = {n: found_column.get(n) for n in per_column_names}
            self.con.execute(f"DROP TABLE IF EXISTS {keys}; DROP TABLE IF EXISTS pairs; DROP TABLE IF EXISTS texts; "
                             "DROP TABLE IF EXISTS rows_profile")
        near_result = None
        if near:
            # None: the exact method did not check the normalized hash; the near stage checks it on
            # its own table of keys (one GROUP BY, not two)
            exact_key = None if normalized_key is None else normalized_key == ["h_ntext"]
            near_result = self._measure_near(label_columns, self.near_params, exact_key=exact_key, examples=examples_wanted)
            text.update(near_result.figures)
            for figures, label_figures in zip(by_label, near_result.by_label):
                figures.update(label_figures)
        columns = [c for c in registry.figure_columns() if c.method in methods]
        if not label_columns:
            # No label column: every figure that needs one is NR.
            return Measured([Measurement(None, text_columns, {c.name: text.get(c.name) for c in columns},
                                         by_column[0] or None)], found, near_result)
        out = []
        # a figure of a method not measured is NULL in the row figures' inputs (their own are dropped below)
        row_figures = {f.name for f in registry.ROW_FIGURES}
        not_measured: dict[str, Any] = {c.name: None for c in registry.figure_columns()
                                        if c.method not in methods and c.name not in row_figures}
        for label, of_label, per_column in zip(label_columns, by_label, by_column):
            row = {**not_measured, **text, **of_label}
            row.update(self._row_figures(row))
            out.append(Measurement(label, text_columns, {c.name: row.get(c.name) for c in columns}, per_column or None))
        return Measured(out, found, near_result)

    # --- beyond the pair of texts: blank rows, groups, dates (registry.SIDE_ROW_FIGURES, GROUP_FIGURES, ...)

    def _blank_rows(self, labels: int) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """The rows method's figures over ``rows_all``: blank texts per split, and per label column
        its NULL labels per split."""
        sql_types = {r[0]: r[1] for r in self.con.execute("DESCRIBE rows_all").fetchall()}
        blank = " AND ".join(figure_sql.blank_sql(t, sql_types[t]) for t in self.raw_text)
        rows = {f"rows_{s}": self.rows.get(s) for s in CANONICAL_SPLITS}
        items = figure_sql.side_figures_sql(registry.SIDE_ROW_FIGURES, registry.SideGrain.ROWS)
        text = self._select(f"WITH rows_checked AS (SELECT split, {blank} AS text_blank FROM rows_all) "
                            + figure_sql.aggregate_sql(items, "rows_checked"), rows)
        items = figure_sql.side_figures_sql(registry.SIDE_ROW_FIGURES, registry.SideGrain.LABEL_ROWS)
        by_label = [self._select(f"WITH label_rows AS (SELECT split, l{j} AS label FROM rows_all) "
                                 + figure_sql.aggregate_sql(items, "label_rows"), rows) for j in range(labels)]
        return text, by_label

    def _one_column(self, column: str, alias: str) -> str:
        """SQL for ``(split, pos, <alias>)``: one column of every present split, read from its view."""
        return self._stack({alias: column})

    def measure_groups(self, columns: Sequence[str]) -> list[dict[str, Any]]:
        """Per group column: the registry's ``GROUP_FIGURES`` over ``per_group`` (its values, NULL and
        empty ones left out, with the rows of each split holding them), and what decides its role:
        ``repeats`` (a value holds two rows or more in some split: a group, not a row id) and
        ``numbering_reused`` (:func:`numbering_reused` over each split's integer values)."""
        return self._each_column(columns, self._measure_group, "group_column")

    def _each_column(self, columns: Sequence[str], measure: Callable[[str, Mapping[str, Any]], dict[str, Any]],
                     key: str) -> list[dict[str, Any]]:
        """``measure`` over each column; a column DuckDB cannot measure (or a name two columns share)
        gets its error under ``key``, and the rest are measured."""
        out = []
        rows = {f"rows_{s}": self.rows.get(s) for s in CANONICAL_SPLITS}
        for column in columns:
            try:
                out.append(measure(column, rows))
            except (duckdb.Error, BadInputError) as e:
                out.append({key: column, "error": _first_line(e)})
        return out

    def _measure_group(self, column: str, rows: Mapping[str, Any]) -> dict[str, Any]:
        stacked = self._one_column(column, "g")
        sql_type = self.con.execute(f"DESCRIBE {stacked}").fetchall()[2][1]
        empty = _empty_sql(sql_type).format("g")
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE per_group AS SELECT g, {figure_sql.SPLIT_COUNTS} "
                         f"FROM ({stacked}) WHERE g IS NOT NULL AND NOT {empty} GROUP BY g")
        items = figure_sql.side_figures_sql(registry.GROUP_FIGURES, registry.SideGrain.GROUP)
        figures = self._select(figure_sql.aggregate_sql(items, "per_group"), rows)
        # an integer: its text is 1 to 18 ASCII digits (TRY_CAST would also take '1.5' and '0x10')
        number = "CASE WHEN regexp_full_match(g::VARCHAR, '[0-9]{1,18}') THEN g::VARCHAR::BIGINT END"
        numbers = self.con.execute(
            "SELECT " + ", ".join(
                f"count(*) FILTER (WHERE n_{s} > 0), count(*) FILTER (WHERE n_{s} > 0 AND {number} IS NULL), "
                f"min({number}) FILTER (WHERE n_{s} > 0), max({number}) FILTER (WHERE n_{s} > 0), "
                f"coalesce(max(n_{s}), 0)"
                for s in CANONICAL_SPLITS) + " FROM per_group").fetchone() or ()
        per_split = {s: numbers[5 * i:5 * i + 5] for i, s in enumerate(CANONICAL_SPLITS) if s in self.data.splits}
        self.con.execute("DROP TABLE per_group")
        return {"group_column": column, "figures": figures,
                "repeats": any(largest > 1 for *_, largest in per_split.values()),
                "numbering_reused": numbering_reused({s: (n, others, low, high) for s, (n, others, low, high, _)
                                                      in per_split.items()})}

    def measure_dates(self, columns: Sequence[str]) -> list[dict[str, Any]]:
        """Per date column: the registry's ``TIME_FIGURES`` over ``dated`` (its values read as
        timestamps; a value that does not read as one is left out, as NULL is)."""
        return self._each_column(columns, self._measure_date, "date_column")

    def _measure_date(self, column: str, rows: Mapping[str, Any]) -> dict[str, Any]:
        stacked = self._one_column(column, "v")
        sql_type = self.con.execute(f"DESCRIBE {stacked}").fetchall()[2][1]
        value = "v::TIMESTAMP" if sql_type in ("DATE", "TIMESTAMP") or sql_type.startswith("TIMESTAMP") \
            else "TRY_CAST(v::VARCHAR AS TIMESTAMP)"
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE dated AS SELECT split, d FROM "
                         f"(SELECT split, {value} AS d FROM ({stacked})) WHERE d IS NOT NULL")
        start = self.con.execute("SELECT min(d) FROM dated WHERE split = 'test'").fetchone()
        items = figure_sql.side_figures_sql(registry.TIME_FIGURES, registry.SideGrain.DATED)
        figures = self._select(figure_sql.aggregate_sql(items, "dated"), {**rows, "test_start": start[0] if start else None})
        self.con.execute("DROP TABLE dated")
        return {"date_column": column, "figures": figures}

    def fingerprints(self) -> dict[str, pa.Table] | None:
        """Per canonical split, every row's position (``row``, int64) and ``hash`` (uint64): the
        64-bit hash of its ``normalized`` text key, ``h_ntext`` as :meth:`measure` computed it (no
        second read). None when the normalized profile was not loaded (LLE alone)."""
        if registry.NORMALIZED not in getattr(self, "_profiles", ()):
            return None
        self.con.complete()  # the last figures SELECT was read with fetchone(): finish it first
        return {s: self.con.sql(f"SELECT pos AS row, h_ntext AS hash FROM rows_all WHERE split = '{s}' ORDER BY pos")
                .to_arrow_table() for s in CANONICAL_SPLITS if s in self.data.splits}  # canonical names only

    # --- the test rows a profile counts as contaminated (hubsurvey clean) ----------------------------

    def test_rows_dropped(self, text_columns: Sequence[str], profile: str) -> tuple[pa.Table, dict[str, Any] | None]:
        """The test rows that ``profile`` (raw, normalized or near) counts in its contaminated figure,
        as ``(pos, reason)`` in position order, and the near method's info (None for raw and normalized).

        A row's reason is its first of: ``train`` (its text key is in train), ``validation``,
        ``repeated`` (an earlier test row has its key), ``near`` (near train or validation at
        Jaccard >= tau, or a near repeat of an earlier test row; profile near only). The rows are
        exactly those the figures count: ``{raw,normalized}_test_rows_contaminated`` and
        ``test_rows_near_contaminated`` are the number of rows returned.
        """
        near = profile == "near"
        self._load(text_columns, (), normalized=profile != registry.RAW.name)
        raw = profile == registry.RAW.name
        if not near:
            key = self._key("h_text" if raw else "h_ntext", self.raw_text if raw else self.normalized_text, "keys_dropped")
            self.con.execute("DROP TABLE keys_dropped")
            partition = ", ".join(key)
            sql = f"""
                SELECT pos, CASE WHEN n_train > 0 THEN 'train' WHEN n_validation > 0 THEN 'validation'
                                 ELSE 'repeated' END AS reason
                FROM (SELECT split, pos,
                             count(*) FILTER (WHERE split = 'train') OVER w AS n_train,
                             count(*) FILTER (WHERE split = 'validation') OVER w AS n_validation,
                             row_number() OVER (PARTITION BY {partition}, split ORDER BY pos) AS nth
                      FROM rows_all WINDOW w AS (PARTITION BY {partition}))
                WHERE split = 'test' AND (n_train > 0 OR n_validation > 0 OR nth > 1)
                ORDER BY pos"""
            return self.con.sql(sql).to_arrow_table(), None
        # the near stage checks the normalized hash on its own table of keys
        result = self._measure_near((), self.near_params, exact_key=None, keep=True)
        if result.info.get("status") != "measured":
            raise BadInputError(f"{self.data.where()}: the near figures are {result.info.get('status')}: no near rule to apply")
        bound = {"threshold": self.near_params.threshold}
        self.con.complete()  # the near figures' last SELECT was read with fetchone(): finish it first
        table = self.con.sql("""
            SELECT r.pos, CASE WHEN k.n_train > 0 THEN 'train' WHEN k.n_validation > 0 THEN 'validation'
                               WHEN r.nth > 1 THEN 'repeated' ELSE 'near' END AS reason
            FROM (SELECT pos, h_ntext, row_number() OVER (PARTITION BY h_ntext ORDER BY pos) AS nth
                  FROM rows_all WHERE split = 'test') AS r
            JOIN near_keys AS k ON k.k = r.h_ntext
            WHERE k.n_train > 0 OR k.n_validation > 0 OR r.nth > 1
               OR coalesce(k.best_train >= $threshold, false) OR coalesce(k.best_validation >= $threshold, false)
               OR coalesce(k.earliest_near_test < k.first_test, false)
            ORDER BY r.pos""", params=bound).to_arrow_table()
        self.con.execute("DROP TABLE near_texts; DROP TABLE near_pairs; DROP TABLE near_keys")
        return table, result.info

    # --- near-duplicates (survey/near.py finds the pairs; the figures are the registry's SQL) --------

    def _measure_near(self, label_columns: Sequence[str], params: near_method.NearParams, *, exact_key: bool | None,
                      examples: int = 0, keep: bool = False) -> NearResult:
        """The near-duplicate figures, from ``rows_all`` loaded with the normalized hash.

        One row per distinct normalized text key (``near_texts``), its text rebuilt from one of its
        rows; MinHash-LSH proposes pairs among them, each verified (``near.find_pairs``); the pairs
        go into ``near_pairs`` and every figure is the registry's SQL over the two. ``exact_key``:
        whether the normalized hash is exact for this data (:meth:`_key`), None when it is still to
        be checked, which is done here on ``near_texts``.
        """
        nothing = NearResult({}, [{} for _ in label_columns], {}, {**params.describe(), "status": "not measured"}, [])
        collides = replace(nothing, info={**nothing.info, "status": "NR: the normalized text hash collides"})
        if exact_key is False:  # never seen with the real hash: two normalized keys share one
            return collides
        self.con.execute(f"""CREATE OR REPLACE TEMP TABLE near_texts AS
            SELECT h_ntext AS k, {figure_sql.SPLIT_COUNTS}, min(pos) FILTER (WHERE split = 'test') AS first_test, min(rowid) AS rep
            FROM rows_all GROUP BY h_ntext""")
        if exact_key is None and not self._hash_is_exact("h_ntext", self.normalized_text, "near_texts", key="k"):
            self.con.execute("DROP TABLE near_texts")
            return collides
        with contextlib.closing(_NearTexts(self, params.max_texts)) as source:
            # the texts are read from the splits' files or tables from here on: rows_all's copy goes
            self.con.execute('; '.join(f'ALTER TABLE rows_all DROP COLUMN {t}' for t in self.raw_text))
            self._set_tables_aside()  # and the pages of the texts and the load's hash tables go back now
            try:
                pairs = near_method.find_pairs_in(source, params)
            finally:
                self._bring_tables_back()
        self.split_fingerprints.update(source.fingerprints)
        keys = source.keys()
        a, b = keys[pairs.pairs[:, 0]], keys[pairs.pairs[:, 1]]
        both = pa.table({"a": np.concatenate([a, b]), "b": np.concatenate([b, a]),
                         "jaccard": np.concatenate([pairs.jaccard, pairs.jaccard])})
        self.con.register("near_pairs_arrow", both)
        self.con.execute("CREATE OR REPLACE TEMP TABLE near_pairs AS SELECT * FROM near_pairs_arrow")
        self.con.unregister("near_pairs_arrow")
        bound = {"threshold": params.threshold}
        self.con.execute(f"CREATE OR REPLACE TEMP TABLE near_keys AS {figure_sql.near_keys_sql()}", bound)
        figures = self._select(figure_sql.aggregate_sql(figure_sql.near_figures_sql(registry.NearGrain.KEY), "near_keys"), bound)
        curve: dict[float, Any] = {}
        if "train" in self.data.splits:
            thresholds = {f"t{i}": t for i, t in enumerate(params.curve)}
            at = self._select(figure_sql.near_curve_sql(params.curve), thresholds)
            curve = {t: at[f"at_{i}"] for i, t in enumerate(params.curve)}
        by_label = []
        for j in range(len(label_columns)):
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE near_labels AS {figure_sql.near_labels_sql('h_ntext', f'l{j}')}", bound)
            items = figure_sql.near_figures_sql(registry.NearGrain.LABEL)
            by_label.append(self._select(figure_sql.aggregate_sql(items, "near_labels"), bound))
        found_examples = self._near_examples(label_columns, examples, bound) if examples else []
        if not keep:  # kept for test_rows_dropped, which reads near_keys
            self.con.execute("DROP TABLE near_texts; DROP TABLE near_pairs; DROP TABLE near_keys; DROP TABLE IF EXISTS near_labels")
        info = {**params.describe(), "status": "measured", "texts": len(source), "texts_compared": len(keys),
                "sampled": len(keys) < len(source), "texts_cut": pairs.cut, "candidates": pairs.candidates, "verified": pairs.verified,
                "pairs": len(pairs.pairs), "capped": pairs.capped}
        return NearResult(figures, by_label, curve, info, found_examples)

    def _near_examples(self, label_columns: Sequence[str], limit: int, bound: dict[str, Any]) -> list[dict[str, Any]]:
        """Up to ``limit`` pairs of each kind at Jaccard >= tau, the most similar first (pairs of
        different normalized texts: identical ones are the exact method's examples). Each side:
        its split, first row position there, text values and, per label column, its label."""
        cases = " UNION ALL ".join(
            f"SELECT '{kind}' AS kind, p.a, p.b, p.jaccard, '{q}' AS split_a, '{o}' AS split_b "
            f"FROM near_pairs p JOIN near_texts q ON q.k = p.a JOIN near_texts o ON o.k = p.b "
            f"WHERE p.jaccard >= $threshold AND q.n_{q} > 0 AND o.n_{o} > 0 AND {condition}"
            for kind, (q, o, condition) in NEAR_EXAMPLE_KINDS.items())
        picked = self.con.execute(
            f"SELECT *, row_number() OVER (PARTITION BY kind ORDER BY jaccard DESC, a, b) AS rank FROM ({cases}) "
            f"QUALIFY rank <= $limit ORDER BY kind, rank", {**bound, "limit": limit}).fetchall()
        # conflicting labels: a test key's row with a label none of its near train keys carries
        conflicts = []
        for j, label in enumerate(label_columns):
            self.con.execute(f"CREATE OR REPLACE TEMP TABLE near_labels AS {figure_sql.near_labels_sql('h_ntext', f'l{j}')}", bound)
            conflicts += [(label, *row) for row in self.con.execute(
                """SELECT 'near_train_conflicting_label' AS kind, l.k AS a, p.b, p.jaccard, 'test', 'train',
                          row_number() OVER (ORDER BY p.jaccard DESC, l.k, p.b) AS rank
                   FROM near_labels l JOIN near_pairs p ON p.a = l.k JOIN near_texts o ON o.k = p.b
                   WHERE l.near_train AND NOT l.near_train_same_label AND p.jaccard >= $threshold AND o.n_train > 0
                   QUALIFY row_number() OVER (PARTITION BY l.k ORDER BY p.jaccard DESC, p.b) = 1 AND rank <= $limit""",
                {**bound, "limit": limit}).fetchall()]
        rows = [(None, *row) for row in picked] + conflicts
        if not rows:
            return []
        keys = sorted({int(r[2]) for r in rows} | {int(r[3]) for r in rows})
        labels = "".join(f", arg_min(l{j}, pos) AS l{j}" for j in range(len(label_columns)))
        firsts = self.con.execute(
            f"SELECT h_ntext, split, min(pos){labels} FROM rows_all WHERE list_contains($keys, h_ntext) GROUP BY ALL",
            {"keys": keys}).fetchall()
        # each side's texts from its first row, read from the split's view (rows_all has none now)
        splits = [s for s in CANONICAL_SPLITS if s in self.data.splits]
        texts = self._texts_at(splits, np.array([splits.index(r[1]) for r in firsts]),
                               np.array([r[2] for r in firsts])).to_pylist()
        sides = {(int(k), split): (pos, [*(text[t] for t in self.raw_text), *vals])
                 for (k, split, pos, *vals), text in zip(firsts, texts)}
        text_columns = self._loaded[0]
        out = []
        for label, kind, a, b, jaccard, split_a, split_b, rank in rows:
            example: dict[str, Any] = {"kind": kind, "rank": rank, "jaccard": jaccard, "label_column": label}
            for side, key, split in (("a", a, split_a), ("b", b, split_b)):
                pos, vals = sides[(int(key), split)]
                example[side] = {"split": split, "position": pos,
                                 "text": dict(zip(text_columns, vals[:len(text_columns)])),
                                 "labels": dict(zip(label_columns, vals[len(text_columns):]))}
            out.append(example)
        return out

    # --- examples: the keys behind every count -------------------------------------------------

    def _examples_of(self, profile: registry.Profile, key: Sequence[str], table: str, kinds: Mapping[str, str],
                     label: tuple[str, int] | None, limit: int, positions: int) -> list[dict[str, Any]]:
        """Up to ``limit`` examples of each of ``kinds`` (conditions on the rows of per-key ``table``).

        The keys holding most rows come first. Each example: the key's values (from its first test
        row, else its first row), its rows in each split, the first ``positions`` row positions in
        each split and, for label kinds (from the ``texts`` and ``pairs`` tables), the labels in each split.
        """
        text_columns = self._loaded[0]
        keys = ", ".join(f"{k} AS k{i}" for i, k in enumerate(key))
        knames = ", ".join(f"k{i}" for i in range(len(key)))
        cases = " UNION ALL ".join(f"SELECT '{kind}' AS kind, * FROM {table} WHERE {condition}" for kind, condition in kinds.items())
        join = " AND ".join(f"r_key.k{i} IS NOT DISTINCT FROM p.k{i}" for i in range(len(key)))
        text_values = ", ".join(f"arg_min(t{i}, pos) AS v{i}" for i in range(len(text_columns)))
        # For label kinds, the labels are listed for the picked texts only, from the pairs table.
        pair_join = " AND ".join(f"pp.k{i} IS NOT DISTINCT FROM p.k{i}" for i in range(len(key)))
        label_lists = ", ".join(f"list(pp.label ORDER BY pp.n_{s} DESC) FILTER (WHERE pp.n_{s} > 0) AS label_list_{s}"
                                for s in CANONICAL_SPLITS)
        listed = (f", listed AS (SELECT p.kind, p.rank, {label_lists} FROM picked p JOIN pairs pp ON {pair_join} "
                  f"GROUP BY p.kind, p.rank)") if label else ""
        with_lists = (", " + ", ".join(f"ll.label_list_{s}" for s in CANONICAL_SPLITS)) if label else ""
        join_lists = "JOIN listed ll USING (kind, rank)" if label else ""
        sql = f"""
            WITH picked AS (
                SELECT {knames}, kind, {', '.join(f'n_{s}' for s in CANONICAL_SPLITS)},
                       row_number() OVER (PARTITION BY kind ORDER BY n_train + n_validation + n_test DESC, {knames}) AS rank
                FROM ({cases}) QUALIFY rank <= $limit
            ),
            located AS (   -- the picked keys' rows: positions and first values per split
                SELECT p.kind, p.rank, r_key.split, list(r_key.pos ORDER BY r_key.pos)[1:$positions] AS positions,
                       {text_values}
                FROM picked p JOIN (SELECT {keys}, split, pos, {', '.join(f't{i}' for i in range(len(text_columns)))} FROM rows_all) r_key
                  ON {join}
                GROUP BY p.kind, p.rank, r_key.split
            ) {listed}
            SELECT p.*, l.split, l.positions, {', '.join(f'l.v{i}' for i in range(len(text_columns)))} {with_lists}
            FROM picked p JOIN located l USING (kind, rank) {join_lists}
            ORDER BY p.kind, p.rank, l.split
        """
        result = self.con.execute(sql, {"limit": limit, "positions": positions})
        names = [d[0] for d in result.description]
        examples: dict[tuple[str, int], dict[str, Any]] = {}
        for values in result.fetchall():
            row = dict(zip(names, values))
            ex = examples.setdefault((row["kind"], row["rank"]), {
                "profile": profile.name, "kind": row["kind"], "label_column": label[0] if label else None,
                "rank": row["rank"],
                "rows": {s: row[f"n_{s}"] if s in self.data.splits else None for s in CANONICAL_SPLITS},
                "positions": {}, "values": {},
                "labels": ({s: row[f"label_list_{s}"] or [] for s in CANONICAL_SPLITS if s in self.data.splits}
                           if label else None),
            })
            ex["positions"][row["split"]] = row["positions"]
            ex["values"][row["split"]] = {c: row[f"v{i}"] for i, c in enumerate(text_columns)}
        for ex in examples.values():  # the key as the first test row holds it, else the first split's
            held = ex.pop("values")
            ex["key"] = next(held[s] for s in ("test", "train", "validation") if s in held)
        return list(examples.values())
