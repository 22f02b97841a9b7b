"""hubsurvey: can I believe the test split of this dataset?

Stages (one package each): ``crawler`` (list and filter the Hub) -> ``survey`` (measure)
-> ``hubsurvey.core.store`` (DuckDB) -> ``analysis`` + ``templates`` (findings, report, export).
"""

from importlib.metadata import PackageNotFoundError, version as _version

try:
    __version__ = _version("hubsurvey")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.1.0"

# The measurement method is versioned apart from the tool: a row says which definitions produced it.
LLE_METHOD = "lle-2024"
LLE_METHOD_VERSION = 1
