"""The folders hubsurvey writes into: a file is never taken for a folder, and only what hubsurvey
wrote is ever replaced.

- :func:`output_folder`: every command's output folder (``--out``, ``--report-dir``) passes here
  first. A path that exists and is not a folder (or lies under a file) is refused in one line with
  exit 2, before anything is measured or written.
- A *sealed manifest* (:func:`seal`, :func:`read_sealed`, :func:`written_files`) is how a folder
  says that hubsurvey wrote it: a format marker, the list of the files written with each one's size
  and SHA-256, and a checksum over the manifest's own content. A ``manifest.json`` with the right
  keys but written by hand, by another tool, or changed since, does not verify: the folder is
  refused, nothing in it is overwritten or deleted. The checksum is no signature (anyone can compute
  it): it recognises hubsurvey's own manifests, it does not authenticate them. What may be deleted
  is narrower still: a listed file that lies inside the folder (no ``..``, no absolute path, no
  symbolic link on the way) and still has the size and hash it was written with.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from hubsurvey.core.errors import OutputExistsError

#: the key and value that mark a manifest written by hubsurvey, and the key of its checksum
FORMAT_KEY, CHECKSUM_KEY, FILES_KEY = "format", "checksum", "files"
#: a manifest larger than this is not one hubsurvey wrote (it lists files, not data)
MAX_MANIFEST_BYTES = 64 * 2**20


def output_folder(path: str | Path, option: str = "--out") -> Path:
    """``path`` as an output folder: missing (it is made later) or a folder; a file, or a path
    under a file, is :class:`OutputExistsError` (exit 2)."""
    folder = Path(path)
    for candidate in (folder, *folder.parents):
        if candidate.exists() or candidate.is_symlink():
            if not candidate.is_dir():
                where = "exists and is not a folder" if candidate == folder else f"lies under the file {candidate}"
                raise OutputExistsError(f"{option} {folder}: {where}; give a folder")
            break
    return folder


def file_digest(path: Path) -> str:
    """A file's SHA-256, in hex."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _checksum(content: Mapping[str, Any]) -> str:
    """The checksum over a manifest's content (every key but the checksum), in canonical JSON."""
    body = {k: v for k, v in content.items() if k != CHECKSUM_KEY}
    text = json.dumps(body, sort_keys=True, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return "sha256:" + hashlib.sha256(text.encode("ascii")).hexdigest()


def seal(manifest: Mapping[str, Any], folder: Path, files: Iterable[str], format_name: str) -> dict[str, Any]:
    """``manifest`` with the format marker, the files written (relative POSIX paths under ``folder``,
    each with its size and SHA-256) and the checksum over all of it."""
    listed = {}
    for relative in sorted(set(files)):
        path = folder / relative
        listed[relative] = {"size": path.stat().st_size, "sha256": file_digest(path)}
    content = {FORMAT_KEY: format_name, **{k: v for k, v in manifest.items() if k not in (FORMAT_KEY, CHECKSUM_KEY, FILES_KEY)},
               FILES_KEY: listed}
    return {**content, CHECKSUM_KEY: _checksum(content)}


def _safe_relative(name: Any) -> bool:
    """A listed path that stays inside its folder: relative, POSIX, no ``..``, ``.`` or empty part."""
    if not isinstance(name, str) or not name or "\\" in name or "\x00" in name:
        return False
    parts = PurePosixPath(name).parts
    return not name.startswith("/") and all(p not in ("", ".", "..") for p in parts) and "/".join(parts) == name


def read_sealed(path: Path, format_name: str) -> dict[str, Any] | None:
    """The manifest at ``path`` when hubsurvey wrote it in ``format_name`` and it is unchanged since
    (its checksum verifies, every listed file is a safe relative path with a size and hash), else None."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_MANIFEST_BYTES:  # a symlink or a device is none
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get(FORMAT_KEY) != format_name or not isinstance(data.get(CHECKSUM_KEY), str):
        return None
    files = data.get(FILES_KEY)
    if not isinstance(files, dict) or not all(
            _safe_relative(name) and isinstance(entry, dict) and isinstance(entry.get("size"), int)
            and isinstance(entry.get("sha256"), str) for name, entry in files.items()):
        return None
    try:
        return data if _checksum(data) == data[CHECKSUM_KEY] else None
    except ValueError:  # NaN or infinity in a value: not JSON hubsurvey writes
        return None


def _inside(folder: Path, relative: str) -> Path | None:
    """``folder / relative`` when no part of the way is a symbolic link and it stays inside."""
    path = folder
    for part in PurePosixPath(relative).parts:
        path = path / part
        if path.is_symlink():
            return None
    return path if path.resolve().is_relative_to(folder.resolve()) else None


def written_files(folder: Path, manifest: Mapping[str, Any]) -> Iterator[Path]:
    """The files a sealed manifest lists that are still as written: inside ``folder`` (no link on
    the way), regular files, with the listed size and SHA-256. Anything else is left alone."""
    for relative, entry in (manifest.get(FILES_KEY) or {}).items():
        if not _safe_relative(relative):
            continue
        path = _inside(folder, relative)
        if path is None or not path.is_file():
            continue
        if path.stat().st_size == entry.get("size") and file_digest(path) == entry.get("sha256"):
            yield path


def remove_written(folder: Path, manifest: Mapping[str, Any], manifest_path: Path) -> list[Path]:
    """Delete the files of :func:`written_files`, the folders their removal leaves empty (up to
    ``folder``), and the manifest itself; return the files deleted."""
    removed = list(written_files(folder, manifest))
    root = folder.resolve()
    for path in removed:
        path.unlink()
        for parent in path.parents:
            if parent.resolve() == root or not parent.resolve().is_relative_to(root):
                break
            try:
                parent.rmdir()
            except OSError:  # not empty: it holds something hubsurvey did not write
                break
    manifest_path.unlink(missing_ok=True)
    return removed
