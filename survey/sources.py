"""Where a dataset's splits come from. Reads Parquet and Arrow files; never runs dataset code.

Accepted sources:

- a local folder in the Hub's Parquet-branch layout: ``<config>/<split>/*.parquet``;
- a local folder with one file per split: ``<config>/<split>.parquet`` (or ``<split>-*.parquet``);
- a folder written by ``datasets.DatasetDict.save_to_disk`` (``dataset_dict.json`` + Arrow files);
- any of the above directly at the root, which is then the single config ``default``;
- a Hub id: the ``refs/convert/parquet`` branch is listed once and only the split files needed
  are downloaded (into the huggingface_hub cache);
- in memory: a ``datasets.DatasetDict`` or a dict of Arrow tables (see ``hubsurvey.survey.api``).

Split names are mapped to the survey's three canonical names (table in the README):
``train``; ``validation`` (also ``valid``, ``dev``, ``val``); ``test``. Other splits are ignored.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey.core.errors import BadInputError, DataFileMissingError, SchemaMismatchError, UnreadableDataError
from hubsurvey.core.roles import check_name, features_from_arrow
from hubsurvey.core.safety import loads_bounded
from hubsurvey.core.splits import (
    CANONICAL_SPLITS,
    SHARDED_FILE,
    SPLIT_ALIASES,
    branch_layouts,
    branch_split,
    file_layout,
    folder_layout,
    refuse_two_layouts,
)

_SHARDED_FILE = SHARDED_FILE


@dataclass(frozen=True)
class SplitData:
    """One canonical split: Parquet files on disk, or an Arrow table in memory."""

    split: str  # canonical name: train / validation / test
    source_name: str  # the dataset's own name for it ("dev", "valid", ...)
    files: tuple[str, ...] = ()
    table: pa.Table | None = None

    @property
    def num_rows(self) -> int:
        if self.table is not None:
            return self.table.num_rows
        return sum(_parquet_file(self, f).metadata.num_rows for f in self.files)

    def schema(self) -> pa.Schema:
        if self.table is not None:
            return self.table.schema
        return _parquet_file(self, self.files[0]).schema_arrow


@dataclass
class ConfigData:
    """Everything the engine needs to measure one (dataset, config)."""

    dataset_id: str
    config: str
    revision_sha: str | None
    splits: dict[str, SplitData]
    features: dict[str, Any] = field(default_factory=dict)
    ignored_splits: tuple[str, ...] = ()

    def where(self, split: str | None = None) -> str:
        """How error messages name the place: 'dataset [config/split]'."""
        return f"{self.dataset_id} [{self.config}{'/' + split if split else ''}]"


def _parquet_file(split: SplitData, path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except FileNotFoundError:
        raise DataFileMissingError(f"split {split.source_name}: {Path(path).name} is gone from disk") from None
    except (pa.ArrowException, OSError) as e:
        raise UnreadableDataError(f"split {split.source_name}: unreadable Parquet {Path(path).name}: {e}") from None


def canonical_splits(dataset_id: str, config: str, named: Mapping[str, SplitData]) -> tuple[dict[str, SplitData], tuple[str, ...]]:
    """Map the dataset's split names to canonical ones; refuse two aliases of one split."""
    out: dict[str, SplitData] = {}
    ignored = []
    for name in sorted(named, key=lambda n: (n != SPLIT_ALIASES.get(n), n)):
        canon = SPLIT_ALIASES.get(name.lower())
        if canon is None:
            ignored.append(name)
        elif canon in out:
            raise BadInputError(
                f"{dataset_id} [{config}]: splits {out[canon].source_name!r} and {name!r} both mean {canon!r}"
            )
        else:
            out[canon] = named[name]
    return out, tuple(ignored)


def check_config(data: ConfigData) -> ConfigData:
    """Validate a config before measuring: a non-empty test split and agreeing schemas."""
    if "test" not in data.splits:
        found = ", ".join(s.source_name for s in data.splits.values()) or "none"
        raise BadInputError(f"{data.where()}: no test split (found: {found})")
    reference: pa.Schema | None = None
    ref_split = None
    for canon in CANONICAL_SPLITS:
        split = data.splits.get(canon)
        if split is None:
            continue
        try:
            schemas = [split.schema()] if split.table is not None else [
                _parquet_file(split, f).schema_arrow for f in split.files
            ]
        except UnreadableDataError as e:
            raise UnreadableDataError(f"{data.where(split.source_name)}: {e}") from None
        for schema in schemas:
            schema = _as_compared(schema.remove_metadata())
            if reference is None:
                reference, ref_split = schema, split.source_name
            elif not schema.equals(reference):
                raise SchemaMismatchError(
                    f"{data.where(split.source_name)}: schema differs from split {ref_split!r}: "
                    f"{_schema_diff(reference, schema)}"
                )
    test = data.splits["test"]
    if test.num_rows == 0:
        raise BadInputError(f"{data.where(test.source_name)}: test split has zero rows")
    if not data.features:
        data.features = features_from_arrow(_first_schema(test))
    return data


def _decoded(t: pa.DataType) -> pa.DataType:
    """The type as the engine compares it: strings of any layout are one type, and a dictionary
    (a pandas categorical, whose index width depends on its number of categories) is its values."""
    if pa.types.is_dictionary(t):
        return _decoded(t.value_type)
    if pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return pa.string()
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_decoded(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_decoded(t.field(i).type)) for i in range(t.num_fields)])
    return t


def _as_compared(schema: pa.Schema) -> pa.Schema:
    """Shards and splits may differ in string layout or dictionary encoding: the values are the same."""
    return pa.schema([f.with_type(_decoded(f.type)) for f in schema])


def _first_schema(split: SplitData) -> pa.Schema:
    if split.table is not None:
        return split.table.schema
    return pq.read_schema(split.files[0])


def _schema_diff(a: pa.Schema, b: pa.Schema) -> str:
    fa = {f.name: str(f.type) for f in a}
    fb = {f.name: str(f.type) for f in b}
    parts = [f"{n}: {fa.get(n, 'absent')} vs {fb.get(n, 'absent')}" for n in sorted(set(fa) | set(fb)) if fa.get(n) != fb.get(n)]
    return "; ".join(parts) or "column order differs"


# --- local folders ---------------------------------------------------------------------------

def dataset_id_for_folder(path: Path) -> str:
    """``owner__name`` (the Hub-dump convention) reads as ``owner/name``; otherwise the folder name."""
    name = path.resolve().name
    return name.replace("__", "/", 1) if "__" in name else name


def _is_split_name(name: str) -> bool:
    return branch_split(name).lower() in SPLIT_ALIASES


def _split_files(folder: Path, dataset_id: str = "", config: str = "") -> dict[str, tuple[list[str], pa.Table | None]]:
    """Split name -> Parquet files (or an Arrow table for save_to_disk) found in one config folder.

    A split folder's Parquet files are taken at any depth (``train/part-0/0000.parquet``). One split
    in two layouts (``test/`` and ``test.parquet``) is refused (:func:`refuse_two_layouts`)."""
    found: dict[str, tuple[list[str], pa.Table | None]] = {}
    layouts: dict[str, list[str]] = {}
    for entry in sorted(folder.iterdir()):
        if entry.is_dir():
            parquet = sorted(str(p) for p in entry.rglob("*.parquet") if p.is_file() and not _hidden(p, entry))
            arrow = sorted(entry.glob("*.arrow"))
            name = branch_split(entry.name)
            if parquet:
                found.setdefault(name, ([], None))[0].extend(parquet)
            elif arrow:
                found[name] = ([], _read_arrow_files(arrow))
            if parquet or arrow:
                layouts.setdefault(name, []).append(folder_layout(entry.name))
        elif entry.suffix == ".parquet":
            stem = entry.stem
            m = _SHARDED_FILE.match(stem)
            name = m.group("split") if m else stem
            found.setdefault(name, ([], None))[0].append(str(entry))
            layouts.setdefault(name, []).append(file_layout(stem))
    refuse_two_layouts(dataset_id or folder.name, config or folder.name, layouts)
    return found


def _hidden(path: Path, top: Path) -> bool:
    """A file under a hidden folder or hidden itself (``.ipynb_checkpoints/``, ``.cache/``): an editor's
    or a tool's copy, never a shard of the split."""
    return any(part.startswith(".") for part in path.relative_to(top).parts)


def _read_arrow_files(files: Iterable[Path]) -> pa.Table:
    """Arrow files written by save_to_disk are Arrow IPC streams (memory-mapped, not copied)."""
    tables = []
    for f in files:
        try:
            with pa.memory_map(str(f)) as source:
                tables.append(pa.ipc.open_stream(source).read_all())
        except pa.ArrowException as e:
            raise UnreadableDataError(f"unreadable Arrow file {f.name}: {e}") from None
    return pa.concat_tables(tables)


def _is_config_folder(folder: Path) -> bool:
    if (folder / "dataset_dict.json").exists():
        return True
    for entry in folder.iterdir():
        stem = entry.name if entry.is_dir() else entry.stem
        m = _SHARDED_FILE.match(stem)
        if _is_split_name(m.group("split") if m else stem) and (entry.is_dir() or entry.suffix == ".parquet"):
            return True
    return False


class FolderSource:
    """A dataset on local disk (see the module docstring for the layouts)."""

    def __init__(self, path: str | Path, dataset_id: str | None = None):
        self.path = Path(path)
        if not self.path.is_dir():
            raise BadInputError(f"{path}: not a folder")
        self.dataset_id = dataset_id or dataset_id_for_folder(self.path)
        self._revision: str | None = None

    def configs(self) -> list[str]:
        if _is_config_folder(self.path):
            return ["default"]
        # a hidden folder (.git, .cache, .ipynb_checkpoints) is a tool's, never a config
        configs = [p.name for p in sorted(self.path.iterdir())
                   if p.is_dir() and not p.name.startswith(".") and _is_config_folder(p)]
        if not configs:
            raise BadInputError(f"{self.dataset_id}: no splits found in {self.path} (expected <config>/<split>/*.parquet)")
        return configs

    def _config_folder(self, config: str) -> Path:
        check_name(self.dataset_id, "config", config)
        folder = self.path if _is_config_folder(self.path) else self.path / config
        if not folder.resolve().is_relative_to(self.path.resolve()) or not folder.is_dir():
            raise BadInputError(f"{self.dataset_id} [{config}]: no such config")
        return folder

    @property
    def revision_sha(self) -> str:
        """A content fingerprint standing in for the Hub sha: changed files give a new revision.

        Hashing every byte of a large dataset costs more than measuring it, so each data file
        contributes its path, size and its first and last 64 KiB (a Parquet footer holds the
        row-group statistics and sizes); small files are hashed whole.
        """
        if self._revision is None:
            h = hashlib.sha1()
            for p in sorted(self.path.rglob("*")):
                if p.is_file() and p.suffix in (".parquet", ".arrow", ".json"):
                    size = p.stat().st_size
                    h.update(f"{p.relative_to(self.path)}\0{size}\0".encode())
                    with p.open("rb") as f:
                        if size <= 256 * 1024:
                            h.update(f.read())
                        else:
                            h.update(f.read(65536))
                            f.seek(-65536, 2)
                            h.update(f.read())
            self._revision = h.hexdigest()
        return self._revision

    def load(self, config: str) -> ConfigData:
        folder = self._config_folder(config)
        named = {}
        for name, (files, table) in _split_files(folder, self.dataset_id, config).items():
            check_name(self.dataset_id, "split", name)
            canon = SPLIT_ALIASES.get(name.lower(), name)
            named[name] = SplitData(canon, name, tuple(files), table)
        splits, ignored = canonical_splits(self.dataset_id, config, named)
        features = _features_from_save_to_disk(folder, splits)
        return ConfigData(self.dataset_id, config, self.revision_sha, splits, features, ignored)


def _features_from_save_to_disk(folder: Path, splits: Mapping[str, SplitData]) -> dict[str, Any]:
    for split in splits.values():
        info = folder / split.source_name / "dataset_info.json"
        if split.table is not None and info.exists():
            try:
                saved = loads_bounded(info.read_bytes())
            except (OSError, ValueError):  # unreadable, not JSON, or nested deeper than any real features
                continue
            feats = saved.get("features") if isinstance(saved, dict) else None
            if isinstance(feats, dict):
                return feats
    return {}


# --- the Hub ---------------------------------------------------------------------------------

class HubSource:
    """A dataset on the Hub, read from its ``refs/convert/parquet`` branch."""

    def __init__(self, dataset_id: str, client: Any, *, sha: str | None = None, files: Iterable[Any] | None = None):
        self.dataset_id = dataset_id
        self._client = client
        self._sha = sha
        self._parquet_sha: str | None = None
        self._files = list(files) if files is not None else None

    @property
    def revision_sha(self) -> str:
        if self._sha is None:
            self._sha = self._client.dataset_info(self.dataset_id).sha
        return self._sha

    @property
    def parquet_sha(self) -> str:
        """Downloads are pinned to the branch commit so that all files come from one revision."""
        if self._parquet_sha is None:
            self._parquet_sha = self._client.parquet_sha(self.dataset_id)
        return self._parquet_sha

    def _layout(self) -> dict[str, dict[str, list[str]]]:
        if self._files is None:
            from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

            try:
                self._files = self._client.parquet_tree(self.dataset_id)
            except RevisionNotFoundError:
                raise BadInputError(f"{self.dataset_id}: no Parquet export (no refs/convert/parquet branch)") from None
            except RepositoryNotFoundError:
                raise BadInputError(
                    f"{self.dataset_id}: no such dataset on {getattr(self._client, 'endpoint', 'the Hub')} "
                    "(or it is private and the token cannot see it)"
                ) from None
        layout: dict[str, dict[str, list[str]]] = {}
        for f in self._files:
            parts = f.path.split("/")
            if len(parts) < 3:  # config/split/file, or deeper: config/split/part-0/file
                continue
            config, split_dir = parts[:2]
            layout.setdefault(config, {}).setdefault(branch_split(split_dir), []).append(f.path)
        return layout

    def configs(self) -> list[str]:
        configs = sorted(self._layout())
        if not configs:
            raise BadInputError(f"{self.dataset_id}: no Parquet export (refs/convert/parquet is empty)")
        return configs

    def load(self, config: str) -> ConfigData:
        check_name(self.dataset_id, "config", config)
        layout = self._layout()
        if config not in layout:
            raise BadInputError(f"{self.dataset_id} [{config}]: no such config (have: {', '.join(sorted(layout))})")
        refuse_two_layouts(self.dataset_id, config, branch_layouts(p for ps in layout[config].values() for p in ps))
        remote = config_from_files(self.dataset_id, config, self.revision_sha, layout[config])
        if "test" not in remote.splits:  # fail before downloading anything
            return remote
        local = {
            s.source_name: [str(self._client.download(self.dataset_id, p, self.parquet_sha)) for p in s.files]
            for s in remote.splits.values()
        }
        return config_from_files(self.dataset_id, config, self.revision_sha, local)


def config_from_files(dataset_id: str, config: str, revision_sha: str | None, files: Mapping[str, Iterable[str]]) -> ConfigData:
    """A ConfigData from ``{split name as the dataset names it: [Parquet files]}``."""
    named = {}
    for name, paths in files.items():
        check_name(dataset_id, "split", name)
        named[name] = SplitData(SPLIT_ALIASES.get(name.lower(), name), name, tuple(sorted(paths)))
    splits, ignored = canonical_splits(dataset_id, config, named)
    return ConfigData(dataset_id, config, revision_sha, splits, {}, ignored)


def is_folder(target: str) -> bool:
    """Whether :func:`open_source` reads ``target`` as a local folder (it exists on disk), not as a Hub id."""
    return Path(target).exists()


def open_source(target: str, *, client: Any = None, dataset_id: str | None = None) -> FolderSource | HubSource:
    """A folder path if it exists on disk (:func:`is_folder`), otherwise a Hub id (``owner/name``)."""
    if is_folder(target):
        return FolderSource(Path(target), dataset_id)
    # A path-like target (./x, /x, ../x, or owner__name, the folder form of a Hub id) is a folder that
    # does not exist: say so at once rather than ask the Hub about it.
    path_like = target.startswith(("./", "/", "../", "~")) or ("__" in target and "/" not in target)
    if path_like or not re.fullmatch(r"[\w.\-]+(/[\w.\-]+)?", target) or ".." in target:
        raise BadInputError(f"{target}: neither a folder nor a Hub id")
    if client is None:
        from hubsurvey.core.hub import HubClient

        client = HubClient()
    return HubSource(target, client)
