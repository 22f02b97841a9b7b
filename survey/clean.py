"""Clean test splits: each config's test split without the rows a profile counts as contaminated.

``hubsurvey clean`` is a thin layer over :func:`clean`; ``hubsurvey.load_clean_test`` over
:func:`load_clean_test`. What a run writes into ``out``:

- ``<config>/test/0000.parquet`` per config (the config name through ``store.safe_name``, so a Hub
  name never leaves the folder): the test rows kept, in their order, with the split's Parquet
  schema and its ``huggingface`` metadata (features, ClassLabel names), so the folder is audited
  (``hubsurvey audit OUT``) and loaded like the original;
- ``manifest.json``: the dataset, its revision and Parquet commit, the profile, the tool and method
  versions and, per config, the rows kept, the rows dropped by reason, the hs1 fingerprints of the
  test split and of the clean one, and the kept row positions.

A test row is dropped when the profile's contaminated figure counts it (``Engine.test_rows_dropped``):
under ``raw`` and ``normalized`` its text key is in train or validation or repeats an earlier test
row; under ``near`` the near figures' rule (``test_rows_near_contaminated``) applies: it is near
train or validation at Jaccard >= tau, or near an earlier test row. With ``db``, each config's kept
positions go to the ``clean_test`` table, which ``publish`` exports as the results' ``clean_test``
config (positions only: no third-party text is redistributed).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from hubsurvey import __version__
from hubsurvey.core.errors import (
    BadInputError,
    ExitCode,
    HubsurveyError,
    HubUnreachableError,
    OutputExistsError,
    StoreError,
    UnreadableDataError,
    scrub,
)
from hubsurvey.core.figures import EXACT_METHOD, EXACT_METHOD_VERSION, NEAR_METHOD, NEAR_METHOD_VERSION
from hubsurvey.core.fingerprint import FINGERPRINT_VERSION, split_fingerprint
from hubsurvey.core.hub import HubClient
from hubsurvey.core.outputs import output_folder, read_sealed, remove_written, seal, written_files
from hubsurvey.core.roles import RoleOverrides, check_name, resolve_roles
from hubsurvey.core.runs import Runs, RunStatus
from hubsurvey.core.signals import raise_if_stopped
from hubsurvey.core.store import CLEAN_TEST_PARQUET_PATH, DEFAULT_DB, Store, insert, now, safe_name
from hubsurvey.survey.audit import _config_error, outcome_exit_code
from hubsurvey.survey.measure import is_data_error
from hubsurvey.survey.metrics import Engine
from hubsurvey.survey.sources import ConfigData, FolderSource, HubSource, check_config, open_source

#: The profiles a clean can follow, and the method whose rule each applies.
PROFILES: dict[str, tuple[str, int]] = {
    "raw": (EXACT_METHOD, EXACT_METHOD_VERSION),
    "normalized": (EXACT_METHOD, EXACT_METHOD_VERSION),
    "near": (NEAR_METHOD, NEAR_METHOD_VERSION),
}
DEFAULT_PROFILE = "normalized"
#: Why a row is dropped, in the order a row's reason is picked (each row counted once).
REASONS = ("train", "validation", "repeated", "near")
MANIFEST = "manifest.json"
CLEAN_FILE = "0000.parquet"
#: the format marker of a clean's sealed manifest (:mod:`hubsurvey.core.outputs`)
CLEAN_FORMAT = "hubsurvey-clean/1"


@dataclass
class CleanOutcome:
    """What a clean wrote (the manifest's configs) and the one-line errors of what failed."""

    dataset_id: str
    out: Path
    configs: dict[str, dict[str, Any]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    failures: list[HubsurveyError] = field(default_factory=list)
    manifest: dict[str, Any] = field(default_factory=dict)

    @property
    def exit_code(self) -> ExitCode:
        """0 all cleaned; 1 partial; else the gravest failure's code."""
        return outcome_exit_code(self.failures, done=bool(self.configs))


def clean_folder(out: Path, config: str) -> Path:
    """``out/<config>/test``, the config's name made one safe path component."""
    folder = out / safe_name(config) / "test"
    if not folder.resolve().is_relative_to(out.resolve()):  # safe_name never leaves: checked all the same
        raise BadInputError(f"config {config!r}: its folder would leave {out}")
    return folder


def _prepare(out: Path) -> dict[str, Any] | None:
    """Refuse an output folder holding anything but an earlier clean; return that clean's manifest.

    An earlier clean is recognised by more than its keys: its manifest is sealed (the format
    marker, the files it wrote with their sizes and hashes, a checksum over all of it:
    :mod:`hubsurvey.core.outputs`). Another tool's ``manifest.json``, one written or edited by hand,
    a link, or one from before the seal, is refused: nothing in the folder is overwritten."""
    output_folder(out)
    if not out.exists() or not any(out.iterdir()):
        return None
    path = out / MANIFEST
    if not path.is_file() and not path.is_symlink():
        raise OutputExistsError(f"{out}: holds files that are not a clean test split; give an empty or new folder")
    earlier = read_sealed(path, CLEAN_FORMAT)
    if earlier is None:
        raise OutputExistsError(f"{out}: its {MANIFEST} was not written by hubsurvey clean (or was changed since); "
                                "nothing is overwritten: give an empty or new folder")
    return earlier


def _check_targets(out: Path, names: list[str], owned: set[Path]) -> None:
    """Refuse, before anything is written, a clean file's path that holds something an earlier
    clean did not write (or that changed since): it would be overwritten."""
    for name in names:
        path = clean_folder(out, name) / CLEAN_FILE
        if (path.exists() or path.is_symlink()) and path not in owned:
            raise OutputExistsError(f"{out}: {path.relative_to(out).as_posix()} is not a file hubsurvey clean wrote "
                                    "(or it changed since); nothing is overwritten: give an empty or new folder")


def read_test(data: ConfigData) -> pa.Table:
    """The test split as written: its rows in position order (files in the order measured), the
    first file's schema and metadata; an in-memory split's features as ``huggingface`` metadata."""
    split = data.splits["test"]
    if split.table is not None:
        table = split.table
    else:
        parts = [pq.read_table(path) for path in split.files]
        schema = parts[0].schema
        table = pa.concat_tables([p if p.schema.equals(schema, check_metadata=False) else p.cast(schema) for p in parts])
        table = table.replace_schema_metadata(schema.metadata)
    metadata = dict(table.schema.metadata or {})
    if b"huggingface" not in metadata and data.features:
        metadata[b"huggingface"] = json.dumps({"info": {"features": data.features}}).encode()
        table = table.replace_schema_metadata(metadata)
    return table


def _write_atomic(path: Path, write: Any) -> None:
    """Write ``path`` through a temp file beside it, renamed over it: never half a file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def clean_config(data: ConfigData, out: Path, profile: str, overrides: RoleOverrides | None = None) -> dict[str, Any]:
    """Write one config's clean test split under ``out``; return its manifest entry."""
    data = check_config(data)
    roles = resolve_roles(data.features, data.dataset_id, data.config, overrides)
    try:
        with Engine(data) as engine:
            dropped, near = engine.test_rows_dropped(roles.text_columns, profile)
        test = read_test(data)
    except Exception as e:
        if is_data_error(e):  # files that cannot be read as they are: the data's fault, as for audit
            first = (str(e).strip().splitlines() or [type(e).__name__])[0]
            raise UnreadableDataError(f"{data.where()}: {type(e).__name__}: {first}") from None
        raise
    gone = dropped.column("pos").to_numpy()
    keep = np.ones(test.num_rows, dtype=bool)
    keep[gone] = False
    kept_positions = np.flatnonzero(keep)
    cleaned = test.take(pa.array(kept_positions, pa.int64()))
    path = clean_folder(out, data.config) / CLEAN_FILE
    _write_atomic(path, lambda tmp: pq.write_table(cleaned, tmp, compression="zstd"))
    reasons = dropped.column("reason").to_pylist()
    method, version = PROFILES[profile]
    return {
        "path": path.relative_to(out).as_posix(),
        "test_split": data.splits["test"].source_name,
        "text_columns": list(roles.text_columns),
        "rows_test": test.num_rows,
        "rows_kept": len(kept_positions),
        "dropped": {reason: reasons.count(reason) for reason in REASONS},
        "test_fingerprint": split_fingerprint(test),
        "fingerprint": split_fingerprint(cleaned),
        "method": method,
        "method_version": version,
        "near": near,
        "kept_positions": kept_positions.tolist(),
    }


def clean(
    target: str,
    *,
    out: str | Path,
    config: str | None = None,
    profile: str = DEFAULT_PROFILE,
    db: str | Path | None = None,
    roles_file: str | Path | None = None,
    dataset_id: str | None = None,
    client: Any = None,
) -> CleanOutcome:
    """Write the clean test split of every config of ``target`` (or just ``config``) into ``out``,
    with ``manifest.json`` (module docstring); with ``db``, record the kept positions in ``clean_test``.

    A config that fails is reported in ``errors`` (one line naming it) and the others go on; each
    file is written whole or not at all, and each config's ``clean_test`` row in one transaction.
    """
    if profile not in PROFILES:
        raise BadInputError(f"--profile {profile!r}: not one of {', '.join(PROFILES)}")
    out = Path(out)
    earlier = _prepare(out)
    source = open_source(target, client=client, dataset_id=dataset_id)
    configs = source.configs()
    if config is not None:
        check_name(source.dataset_id, "config", config)
        if config not in configs:
            raise BadInputError(f"{source.dataset_id} [{config}]: no such config (have: {', '.join(configs)})")
    overrides = RoleOverrides.load(roles_file)
    owned = set(written_files(out, earlier)) if earlier else set()  # the earlier clean's files, still as written
    _check_targets(out, [config] if config else list(configs), owned)
    if earlier and not _same_clean(earlier, source.dataset_id, source.revision_sha, profile):
        remove_written(out, earlier, out / MANIFEST)  # another dataset, revision or profile: none of its files may stay
        earlier, owned = None, set()
    outcome = CleanOutcome(source.dataset_id, out)
    hub = isinstance(source, HubSource)
    args = {"target": target, "config": config, "profile": profile, "roles": str(roles_file) if roles_file else None}
    with (Store(db) if db is not None else nullcontext(None) as store,  # closed however the block ends
          Runs(store).recording("clean", args) if store is not None else nullcontext(None) as recording):
        if recording is not None:
            recording.counts = lambda: {"configs": len(outcome.configs), "errors": len(outcome.errors)}
        for name in [config] if config else configs:
            try:
                entry = clean_config(source.load(name), out, profile, overrides)
            except (HubUnreachableError, StoreError, KeyboardInterrupt):
                raise
            except Exception as e:
                raise_if_stopped(e)  # a query Ctrl-C or SIGTERM cut short (DuckDB's own error): the command stops
                error = _config_error(e, f"{source.dataset_id} [{name}]")
                outcome.failures.append(error)
                outcome.errors.append(scrub(str(error)))
                continue
            outcome.configs[name] = entry
            if store is not None and recording is not None:
                _record(store, source.dataset_id, source.revision_sha, source.parquet_sha if hub else None,  # type: ignore[union-attr]
                        name, profile, entry, recording.run_id)
        if recording is not None and outcome.errors and not outcome.configs:
            recording.status = RunStatus.FAILED
    if outcome.configs:
        outcome.manifest = _manifest(source, profile, outcome.configs, earlier, owned, out)
        _write_atomic(out / MANIFEST, lambda tmp: tmp.write_text(json.dumps(outcome.manifest, indent=1, ensure_ascii=False)
                                                                 + "\n", encoding="utf-8"))
    return outcome


def _same_clean(manifest: Mapping[str, Any], dataset_id: str, revision: str, profile: str) -> bool:
    return (manifest.get("dataset"), manifest.get("revision"), manifest.get("profile")) == (dataset_id, revision, profile)


def _manifest(source: FolderSource | HubSource, profile: str, configs: Mapping[str, dict[str, Any]],
              earlier: dict[str, Any] | None, owned: set[Path], out: Path) -> dict[str, Any]:
    """The sealed manifest: this clean's configs, and an earlier clean's other configs of the same
    dataset, revision and profile whose files are still as it wrote them (a clean of one config adds
    it to the folder's manifest); the files listed with their sizes and hashes."""
    head = {
        "dataset": source.dataset_id,
        "revision": source.revision_sha,
        "parquet_sha": source.parquet_sha if isinstance(source, HubSource) else None,
        "source": "hub" if isinstance(source, HubSource) else "folder",
        "profile": profile,
        "tool_version": __version__,
        "method": PROFILES[profile][0],
        "method_version": PROFILES[profile][1],
        "fingerprint_version": FINGERPRINT_VERSION,
    }
    kept = {}
    if earlier and _same_clean(earlier, source.dataset_id, source.revision_sha, profile):
        kept = {k: v for k, v in (earlier.get("configs") or {}).items()
                if k not in configs and isinstance(v, dict) and out / str(v.get("path")) in owned}
    every = {**kept, **configs}
    return seal({**head, "configs": every}, out, [str(entry["path"]) for entry in every.values()], CLEAN_FORMAT)


def _record(store: Store, dataset_id: str, revision_sha: str, parquet_sha: str | None, config: str, profile: str,
            entry: Mapping[str, Any], run_id: str) -> None:
    """One config's ``clean_test`` row, replacing an earlier clean of the same revision and profile."""
    key = {"d": dataset_id, "r": revision_sha, "c": config, "p": profile}
    with store.transaction() as con:
        con.execute("DELETE FROM clean_test WHERE dataset_id = $d AND revision_sha = $r AND config = $c AND profile = $p", key)
        insert(con, "clean_test", {
            "dataset_id": dataset_id, "revision_sha": revision_sha, "parquet_sha": parquet_sha, "config": config,
            "profile": profile, "text_columns": entry["text_columns"], "test_split": entry["test_split"],
            "rows_test": entry["rows_test"], "rows_kept": entry["rows_kept"], "dropped": entry["dropped"],
            "kept_positions": entry["kept_positions"], "test_fingerprint": entry["test_fingerprint"],
            "clean_fingerprint": entry["fingerprint"], "near": entry["near"], "method": entry["method"],
            "method_version": entry["method_version"], "tool_version": __version__, "cleaned_at": now(), "run_id": run_id,
        })


# --- loading a published clean test split ------------------------------------------------------------

def load_clean_test(dataset_id: str, config: str, profile: str = DEFAULT_PROFILE, *, results: str | None = None,
                    db: str | Path | None = None, client: Any = None) -> Any:
    """The clean test split of ``dataset_id`` [``config``] under ``profile``, as a ``datasets.Dataset``.

    The kept positions come from a results dataset published by ``hubsurvey publish`` (``results``:
    its repo id; its ``clean_test`` config) or from a results DB (``db``; default ``results.duckdb``)
    that ``hubsurvey clean --db`` wrote. The test split's Parquet files are downloaded at the Parquet
    commit that was cleaned (pinned: never a newer revision), loaded with ``datasets``' Parquet
    builder (never dataset code), and the kept rows selected; the result's hs1 fingerprint is
    checked against the one recorded.
    """
    client = client or HubClient()
    row = _clean_row(dataset_id, config, profile, results=results, db=db, client=client)
    if not row.get("parquet_sha"):
        raise BadInputError(f"{dataset_id} [{config}]: cleaned from a folder, not from the Hub: no pinned revision to load")
    prefix = f"{config}/{row['test_split']}/"
    files = sorted(f.path for f in client.parquet_tree(dataset_id, revision=row["parquet_sha"]) if f.path.startswith(prefix))
    if not files:
        raise BadInputError(f"{dataset_id} [{config}]: no test files at Parquet commit {row['parquet_sha']}")
    local = [str(client.download(dataset_id, path, row["parquet_sha"])) for path in files]
    import datasets  # type: ignore[import-untyped]  # (no type information)

    test = datasets.load_dataset("parquet", data_files={"test": local}, split="test")
    selected = test.select([int(p) for p in row["kept_positions"]])
    got = split_fingerprint(selected.flatten_indices().data.table)
    if got != row["clean_fingerprint"]:
        raise BadInputError(f"{dataset_id} [{config}]: the clean rows' fingerprint {got} is not the recorded "
                            f"{row['clean_fingerprint']}")
    return selected


def _clean_row(dataset_id: str, config: str, profile: str, *, results: str | None, db: str | Path | None,
               client: Any) -> dict[str, Any]:
    """The newest clean of (dataset, config, profile): from the results repo's clean_test file, or the DB."""
    where = f"{dataset_id} [{config}] ({profile})"
    query = ("SELECT * FROM clean_test WHERE dataset_id = $d AND config = $c AND profile = $p "
             "ORDER BY cleaned_at DESC, revision_sha LIMIT 1")
    params = {"d": dataset_id, "c": config, "p": profile}
    if results is not None:
        from hubsurvey.core import duck

        path = client.download(results, CLEAN_TEST_PARQUET_PATH, "main")
        con = duck.connect()
        try:
            con.read_parquet(str(path)).create_view("clean_test")
            result = con.execute(query, params)
            names = [d[0] for d in result.description]
            rows = [dict(zip(names, r)) for r in result.fetchall()]
        finally:
            con.close()
    else:
        with Store(db or DEFAULT_DB, read_only=True) as store:
            rows = store.records(query, params)
    if not rows:
        raise BadInputError(f"{where}: no clean test split recorded in {results or db or DEFAULT_DB}")
    return rows[0]
