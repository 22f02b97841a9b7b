"""hubsurvey: can I believe the test split of this dataset?

Stages (one package each): ``crawler`` (list and filter the Hub) -> ``survey`` (measure)
-> ``hubsurvey.core.store`` (DuckDB) -> ``analysis`` + ``templates`` (findings, report, export).
The method's figures are declared once, in ``hubsurvey.core.figures``.
"""

from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as _version

try:
    __version__ = _version("hubsurvey")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.1.0"


#: The package's functions for notebooks, resolved on first use: every module imports this package
#: (for __version__), so it imports no stage at import time.
_LAZY = {"load_clean_test": "hubsurvey.survey.clean", "split_fingerprint": "hubsurvey.core.fingerprint"}


def __getattr__(name: str) -> object:
    """``hubsurvey.load_clean_test(dataset_id, config, profile="normalized", *, results=None, db=None)``:
    a Hub dataset's test split without its contaminated rows (``hubsurvey.survey.clean.load_clean_test``);
    ``hubsurvey.split_fingerprint(table)``: a split's hs1 content fingerprint (``hubsurvey.core.fingerprint``)."""
    if name in _LAZY:
        from importlib import import_module

        return getattr(import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'hubsurvey' has no attribute {name!r}")
