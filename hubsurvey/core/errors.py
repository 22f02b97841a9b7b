"""Typed errors of the survey stage.

Every message is one line that names the dataset, the config and (where known) the split, then
the cause, so that a failed job in an overnight run explains itself.
"""


class SurveyError(Exception):
    """Base class: something stopped one (dataset, config) from being measured."""

    #: a short stable class name stored with failed jobs ("bad_input", "unreadable", ...)
    error_class = "survey_error"


class BadInputError(SurveyError):
    """The dataset cannot be measured as it is (no test split, empty test, unsafe names...)."""

    error_class = "bad_input"


class UnreadableDataError(SurveyError):
    """A data file could not be read (truncated, corrupt, not Parquet)."""

    error_class = "unreadable"


class SchemaMismatchError(SurveyError):
    """Splits (or files of one split) disagree on their columns or types."""

    error_class = "schema_mismatch"
