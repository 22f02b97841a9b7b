"""The commands of ``hubsurvey``, one module per area; only :mod:`hubsurvey.cli` imports them.

Each command is a plain function with ``Annotated`` options (declared once in :mod:`.options`,
defaults taken from the dataclasses they fill) and raises :class:`hubsurvey.core.errors.HubsurveyError`
on failure; :mod:`hubsurvey.cli` registers every one the same way, inside one error handler.
"""
