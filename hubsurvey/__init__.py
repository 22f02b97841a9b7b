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
