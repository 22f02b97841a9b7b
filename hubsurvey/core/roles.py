"""Column roles: which columns are the text (input) and which are labels.

Inference reads the Hugging Face ``Features`` stored in the Parquet metadata (or derives them from
the Arrow schema when absent) and applies, in order:

1. ``ClassLabel`` and lists of ``ClassLabel`` are label columns.
2. Name rules (documented in the README, "Column roles"):
   - id-like columns are left out: ``id``, ``idx``, ``index``, ``guid``, ``uuid``, ``key`` and names
     ending in ``_id``, ``_idx``, ``_uuid``, ``_guid``, or the pandas ``__index_level_0__``;
   - metadata columns are left out: ``lang``, ``langs``, ``language``, ``languages``, ``spans``
     (annotation rendered as strings), ``url``, ``urls``, ``date``, ``timestamp``, ``split``;
   - a column whose name is a label name (``label``, ``labels``, ``gold_label``, ``target``,
     ``targets``, ``class``, ``category``, or ending in ``_label``, ``_labels``, ``_tags``) is a
     label when its values are integers or booleans (or lists of them); a *string* column is a
     label only for ``label``, ``labels``, ``gold_label`` and ``*_label`` (so a translation
     ``target`` string stays text).
3. Text columns are strings, lists of strings, and structs whose leaves are all strings
   (translation pairs). Numbers that are not labels, images, audio and other structs are left out.

An override file (TOML) takes precedence over inference, per dataset and config::

    ["eriktks/conll2003".conll2003]
    text = ["tokens"]
    labels = ["ner_tags"]

    ["some/dataset"."*"]        # every config of the dataset
    text = ["question", "context"]
    labels = []

    ["some/forum"."*"]          # text and labels inferred; these columns name groups and dates
    groups = ["thread", "source"]
    dates = ["posted"]
"""

from __future__ import annotations

import logging
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from hubsurvey.core.errors import BadInputError
from hubsurvey.core.safety import loads_bounded, read_text_file

ID_NAMES = {"id", "idx", "index", "guid", "uuid", "key", "__index_level_0__"}
ID_SUFFIXES = ("_id", "_idx", "_uuid", "_guid")
METADATA_NAMES = {"lang", "langs", "language", "languages", "spans", "url", "urls", "date", "timestamp", "split"}
LABEL_NAMES = {"label", "labels", "gold_label", "target", "targets", "class", "category"}
LABEL_SUFFIXES = ("_label", "_labels", "_tags")
STRING_LABEL_NAMES = {"label", "labels", "gold_label"}
STRING_LABEL_SUFFIXES = ("_label",)
MEDIA_TYPES = {"Image", "Audio", "Video", "Pdf", "Nifti"}
URL_NAMES = {"url", "urls"}
DATE_NAMES = {"date", "timestamp", "time", "datetime", "created", "published"}
DATE_SUFFIXES = ("_date", "_time", "_at", "_timestamp")
STRING_DTYPES = {"string", "large_string", "string_view"}
INT_DTYPES = {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}


@dataclass(frozen=True)
class ColumnRoles:
    """The roles used for one measurement; stored with every result."""

    text_columns: tuple[str, ...]
    label_columns: tuple[str, ...]
    ignored: Mapping[str, str] = field(default_factory=dict)  # column -> why it was left out
    source: str = "inferred"  # "inferred" or "override"
    #: group and date columns declared in the roles file (``groups = [...]``, ``dates = [...]``)
    groups: tuple[str, ...] = ()
    dates: tuple[str, ...] = ()

    def group_columns(self) -> dict[str, str]:
        """The columns whose values may name a group (a dialogue, file, document, thread, author or
        URL), with where each comes from: 'declared' (the roles file), else 'inferred' from the
        columns left out of the text key as id-like, and ``url``/``urls``. Whether an inferred one's
        values repeat within a split (a group) or not (a row id, never a group) is the engine's
        to find."""
        found = dict.fromkeys(self.groups, "declared")
        for name, why in self.ignored.items():
            if why == "id-like" or name.lower() in URL_NAMES:
                found.setdefault(name, "inferred")
        return found

    def date_columns(self, features: Mapping[str, Any]) -> dict[str, str]:
        """The columns that may date a row: 'declared' ones, else 'inferred' among the columns left
        out of the text key: a date or timestamp type, or a date-like name (``date``, ``timestamp``,
        ``*_date``, ``*_time``, ``*_at``, ``created``, ``published``)."""
        found = dict.fromkeys(self.dates, "declared")
        for name in self.ignored:
            kind = features.get(name)
            dtype = kind.get("dtype", "") if isinstance(kind, dict) else ""
            low = name.lower()
            if (str(dtype).startswith(("timestamp", "date"))
                    or low in DATE_NAMES or low.endswith(DATE_SUFFIXES)):
                found.setdefault(name, "inferred")
        return found


# --- feature classification -------------------------------------------------------------------

def _kind(feature: Any) -> str:
    """Classify one HF feature as: classlabel, string, int, float, media, list:<kind>, struct:<kinds>."""
    if isinstance(feature, list):  # legacy Sequence spelling: [feature]
        return "list:" + _kind(feature[0]) if feature else "other"
    if not isinstance(feature, dict):
        return "other"
    ftype = feature.get("_type")
    if ftype == "ClassLabel":
        return "classlabel"
    if ftype == "Value":
        dtype = feature.get("dtype", "")
        if dtype in STRING_DTYPES:
            return "string"
        if dtype in INT_DTYPES:
            return "int"
        return "float" if dtype.startswith(("float", "double", "decimal")) else "other"
    if ftype in MEDIA_TYPES:
        return "media"
    if ftype in ("List", "Sequence", "LargeList"):
        inner = feature.get("feature")
        if isinstance(inner, dict) and "_type" not in inner:  # Sequence of a dict of features
            return "list:" + _struct_kind(inner)
        return "list:" + _kind(inner)
    if ftype is None:
        return _struct_kind(feature)
    return "other"


def _struct_kind(fields: Mapping[str, Any]) -> str:
    kinds = {_kind(v) for v in fields.values()}
    return "struct:string" if kinds and kinds <= {"string", "list:string"} else "struct:other"


def _base(kind: str) -> str:
    while kind.startswith("list:"):
        kind = kind[5:]
    return kind


def features_from_arrow(schema: pa.Schema) -> dict[str, Any]:
    """HF features stored in the Parquet/Arrow metadata, else a best-effort derivation from types."""
    meta = schema.metadata or {}
    if b"huggingface" in meta:
        try:
            info = loads_bounded(meta[b"huggingface"])
        except (ValueError, UnicodeDecodeError):  # not JSON, or nested deeper than any real features
            info = None
        feats = info.get("info", {}).get("features") if isinstance(info, dict) and isinstance(info.get("info"), dict) else None
        if isinstance(feats, dict):
            return feats
        # Malformed or list-valued metadata: the Arrow types still say which columns are text.
        logging.getLogger(__name__).warning("ignoring malformed 'huggingface' Parquet metadata; roles inferred from the Arrow schema")
    return {f.name: _arrow_feature(f.type) for f in schema}


def _arrow_feature(t: pa.DataType) -> Any:
    # A dictionary column (a pandas categorical) holds its value type, stored once per distinct
    # value: it is classed by that type. The engine compares decoded values, so two files with
    # different dictionaries still match equal strings.
    if pa.types.is_dictionary(t):
        return _arrow_feature(t.value_type)
    if (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or pa.types.is_list_view(t) or pa.types.is_large_list_view(t)):
        return {"_type": "List", "feature": _arrow_feature(t.value_type)}
    if pa.types.is_struct(t):
        return {t.field(i).name: _arrow_feature(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return {"_type": "Value", "dtype": "string"}
    if pa.types.is_integer(t) or pa.types.is_boolean(t):
        return {"_type": "Value", "dtype": "int64"}
    if pa.types.is_floating(t):
        return {"_type": "Value", "dtype": "float64"}
    return {"_type": "Value", "dtype": str(t)}


# --- ClassLabel names ---------------------------------------------------------------------------

#: Bounds on the names kept per label column: the names are untrusted Hub text (a feature may list
#: any number of names of any length). A longer name is cut and ends with "…"; an id past the bound
#: has no name and is shown as its id.
MAX_LABEL_NAMES = 10_000
MAX_LABEL_NAME_CHARS = 200


@dataclass(frozen=True)
class LabelNames:
    """A label column's ClassLabel names, in id order (``names[i]`` names id ``i``), and its feature:
    ``ClassLabel``, or ``List(ClassLabel)`` for a list of them (multi-label, a tag per token)."""

    feature: str
    names: tuple[str, ...]


def class_label_names(features: Mapping[str, Any]) -> dict[str, LabelNames]:
    """The ClassLabel names of each column whose HF feature is a ``ClassLabel`` or a list of them
    (``Sequence``/``List``/``LargeList``, nested, or the legacy ``[feature]`` spelling), read from the
    features alone (the Parquet schema's ``huggingface`` metadata: no dataset code runs). A ClassLabel
    without a ``names`` list (only ``num_classes``) has none. Bounded: :data:`MAX_LABEL_NAMES` names
    of :data:`MAX_LABEL_NAME_CHARS` characters at most."""
    out = {}
    for column, feature in features.items():
        depth, inner = 0, feature
        while True:
            if isinstance(inner, list) and len(inner) == 1:
                inner = inner[0]
            elif isinstance(inner, dict) and inner.get("_type") in ("List", "Sequence", "LargeList"):
                inner = inner.get("feature")
            else:
                break
            depth += 1
        if not (isinstance(inner, dict) and inner.get("_type") == "ClassLabel" and isinstance(inner.get("names"), list)):
            continue
        names = tuple(_bounded_name(n) for n in inner["names"][:MAX_LABEL_NAMES])
        if names:
            out[str(column)] = LabelNames("List(" * depth + "ClassLabel" + ")" * depth, names)
    return out


def _bounded_name(name: Any) -> str:
    text = name if isinstance(name, str) else str(name)
    return text if len(text) <= MAX_LABEL_NAME_CHARS else text[:MAX_LABEL_NAME_CHARS - 1] + "…"


# --- inference -------------------------------------------------------------------------------

def _is_id_like(name: str) -> bool:
    low = name.lower()
    return low in ID_NAMES or low.endswith(ID_SUFFIXES)


def _label_by_name(name: str, base: str) -> bool:
    low = name.lower()
    if base == "int":
        return low in LABEL_NAMES or low.endswith(LABEL_SUFFIXES)
    if base == "string":
        return low in STRING_LABEL_NAMES or low.endswith(STRING_LABEL_SUFFIXES)
    return False


def infer_roles(features: Mapping[str, Any]) -> ColumnRoles:
    """Infer text and label columns from HF features (see the module docstring for the rules)."""
    text, labels, ignored = [], [], {}
    for name, feature in features.items():
        kind = _kind(feature)
        base = _base(kind)
        if base == "classlabel":
            labels.append(name)
        elif _is_id_like(name):
            ignored[name] = "id-like"
        elif name.lower() in METADATA_NAMES:
            ignored[name] = "metadata"
        elif _label_by_name(name, base) and not kind.startswith("struct"):
            labels.append(name)
        elif base in ("string", "struct:string"):
            text.append(name)
        elif base == "media":
            ignored[name] = "media"
        elif base in ("int", "float"):
            ignored[name] = "number, not a label"
        else:
            ignored[name] = f"unsupported type ({kind})"
    return ColumnRoles(tuple(text), tuple(labels), ignored, "inferred")


class RoleOverrides:
    """Per (dataset, config) roles from a TOML file; ``"*"`` as config matches every config."""

    def __init__(self, table: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None):
        self._table = dict(table or {})

    @classmethod
    def load(cls, path: str | Path | None) -> RoleOverrides:
        if path is None:
            return cls()
        try:
            return cls(tomllib.loads(read_text_file(path, "roles file", BadInputError)))
        except tomllib.TOMLDecodeError as e:
            raise BadInputError(f"roles file {path}: {e}") from None

    def _entry(self, dataset_id: str, config: str) -> Mapping[str, Any] | None:
        configs = self._table.get(dataset_id) or {}
        return configs.get(config) or configs.get("*")

    def lookup(self, dataset_id: str, config: str) -> ColumnRoles | None:
        """The text and label columns the file gives (None: it gives no ``text``: inferred)."""
        entry = self._entry(dataset_id, config)
        if entry is None or ("text" not in entry and ("groups" in entry or "dates" in entry)):
            return None
        return ColumnRoles(tuple(entry.get("text", ())), tuple(entry.get("labels", ())), {}, "override")

    def declared(self, dataset_id: str, config: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The group and date columns the file declares (``groups = [...]``, ``dates = [...]``)."""
        entry = self._entry(dataset_id, config) or {}
        groups, dates = entry.get("groups", ()), entry.get("dates", ())
        for what, names in (("groups", groups), ("dates", dates)):
            if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
                raise BadInputError(f"{dataset_id} [{config}]: roles file: {what} must be a list of column names")
        return tuple(groups), tuple(dates)


def resolve_roles(
    features: Mapping[str, Any],
    dataset_id: str,
    config: str,
    overrides: RoleOverrides | None = None,
) -> ColumnRoles:
    """Roles for one config: the override when there is one, else inference; checked either way."""
    roles = (overrides.lookup(dataset_id, config) if overrides else None) or infer_roles(features)
    if overrides is not None:
        groups, dates = overrides.declared(dataset_id, config)
        if groups or dates:
            roles = replace(roles, groups=groups, dates=dates)
            if roles.source == "inferred":  # a group or a date names the row, it is not its text
                declared = {**dict.fromkeys(groups, "group (declared)"), **dict.fromkeys(dates, "date (declared)")}
                roles = replace(roles, text_columns=tuple(c for c in roles.text_columns if c not in declared),
                                label_columns=tuple(c for c in roles.label_columns if c not in declared),
                                ignored={**roles.ignored, **declared})
    missing = [c for c in roles.text_columns + roles.label_columns + roles.groups + roles.dates if c not in features]
    if missing:
        raise BadInputError(f"{dataset_id} [{config}]: roles name unknown columns {missing}")
    if not roles.text_columns:
        kinds = ", ".join(f"{n}: {why}" for n, why in roles.ignored.items()) or "no columns"
        raise BadInputError(f"{dataset_id} [{config}]: only unsupported column types ({kinds})")
    return roles


_SAFE_NAME = re.compile(r"^[^/\\\x00]+$")


def check_name(dataset_id: str, what: str, name: str) -> str:
    """Config and split names become path parts: refuse separators and '..'."""
    if not _SAFE_NAME.match(name) or ".." in name or name.strip() != name or name in (".",):
        raise BadInputError(f"{dataset_id}: unsafe {what} name {name!r} (path separator or '..')")
    return name
