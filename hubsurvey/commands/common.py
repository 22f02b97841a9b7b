"""What several commands share, imported downward by each: the results DB opened for reading, the
Hub client built from the command line's Hub options, and the output formats of a query's rows.

No command imports another command's module: a helper two commands need lives here.
"""

from __future__ import annotations

import contextlib
import csv
import io
import sys
from collections.abc import Iterator, Sequence
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hubsurvey.commands.options import say_snapshot
from hubsurvey.core.errors import BadInputError, StoreError
from hubsurvey.core.options import HubOptions
from hubsurvey.core.safety import json_text
from hubsurvey.core.store import Store

if TYPE_CHECKING:
    from hubsurvey.core.hub import HubClient

#: DuckDB settings of the ``sql`` connection: no file reads or writes, no extension install or load
SAFE_CONFIG = {
    "enable_external_access": False,
    "autoload_known_extensions": False,
    "autoinstall_known_extensions": False,
}


@contextlib.contextmanager
def writing_into(out: Path) -> Iterator[None]:
    """A folder a command writes that cannot be written (no permission, a full disk): one line naming
    it, exit 2, rather than a traceback."""
    try:
        yield
    except OSError as e:
        raise BadInputError(f"{out}: {e}") from None


def results_file(db: Path) -> Path:
    """``db`` when it is a file a read command can open: a missing or empty file is one line and
    exit 3, the same for every command (DuckDB's own error names neither the DB nor what to do)."""
    path = Path(db)
    if not path.is_file():
        raise StoreError(f"{db}: no such results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    if path.stat().st_size == 0:
        raise StoreError(f"{db}: empty file, not a results DB (run `hubsurvey run` or `hubsurvey audit` first)")
    return path


def open_results(db: Path, *, safe: bool = False) -> Store:
    """The results DB, read-only; a missing, empty or foreign file is one line and exit 3.

    Never creates the file. With ``safe`` the connection has file access and extensions off. While
    a survey run holds the DB, its read snapshot is opened instead, and one stderr line says so
    (:meth:`Store.open_for_reading`). The store is a context manager: ``with open_results(db) as store``.
    """
    path = results_file(db)
    store = Store.open_for_reading(path, config=dict(SAFE_CONFIG) if safe else None)
    version = store._check_version()
    if version == 0:
        store.close()
        raise StoreError(f"{db}: holds no hubsurvey results (run `hubsurvey run` or `hubsurvey audit` first)")
    if store.snapshot_of is not None:
        say_snapshot(store.snapshot_of["run_id"], store.snapshot_of["snapshot_at"])
    return store


def hub_client(hub: HubOptions | None = None) -> HubClient:
    """The Hub client of a command, from the settings built once: the environment, then the
    command line's Hub options. No rate: follow the quota; a rate of 0 means unpaced."""
    # here: a command that reads only the DB or a folder never loads the Hub's HTTP stack
    from hubsurvey.core.hub import HubClient

    return HubClient((hub or HubOptions()).settings())


def is_hub_answer(exc: BaseException) -> bool:
    """True for the Hub's own HTTP answer (huggingface_hub's ``HfHubHTTPError``): a refusal or a
    failure the client gave up on. A command that built no Hub client never loaded huggingface_hub,
    and nothing it raised can be one."""
    errors = sys.modules.get("huggingface_hub.errors")
    return errors is not None and isinstance(exc, errors.HfHubHTTPError)


# --- a query's rows as table, CSV or JSON ------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A JSON-ready value: timestamps in ISO 8601, decimals as numbers, nested lists/maps kept."""
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _cell(value: Any, null: str) -> str:
    if value is None:
        return null
    value = _plain(value)
    if isinstance(value, (list, dict)):
        return json_text(value)
    return str(value)


def format_table(names: Sequence[str], rows: Sequence[Sequence[Any]], null: str = "NULL") -> str:
    """Aligned columns with a header rule; numbers right-aligned, NULL shown as ``null``."""
    cells = [[_cell(v, null).replace("\n", "\\n") for v in row] for row in rows]
    widths = [max([len(n)] + [len(r[i]) for r in cells]) for i, n in enumerate(names)]
    numeric = [
        bool(rows) and all((isinstance(r[i], (int, float, Decimal)) and not isinstance(r[i], bool)) or r[i] is None for r in rows)
        for i in range(len(names))
    ]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(names), "  ".join("-" * w for w in widths)]
    out += [line(r) for r in cells]
    out.append(f"({len(rows)} row{'s' if len(rows) != 1 else ''})")
    return "\n".join(out)


def format_csv(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """CSV with a header; NULL is an empty cell."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(names)
    for row in rows:
        writer.writerow([_cell(v, "") for v in row])
    return buf.getvalue()


def format_json(names: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """A JSON array of objects; NULL, NaN and infinities are null (valid JSON for jq and JavaScript)."""
    return json_text([{n: _plain(v) for n, v in zip(names, row)} for row in rows], indent=1)


RENDER = {"table": format_table, "csv": format_csv, "json": format_json}


def write_rows(fmt: str, names: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Print rows in the format asked for (``table``, ``csv`` or ``json``), ending with one newline."""
    sys.stdout.write(RENDER[fmt](names, rows).rstrip("\n") + "\n")


def write_records(fmt: str, records: Sequence[dict[str, Any]]) -> None:
    """Print records (dicts with the same keys) as :func:`write_rows` prints rows."""
    names = list(records[0]) if records else []
    write_rows(fmt, names, [[r[n] for n in names] for r in records])
