"""A local stand-in for the Hugging Face Hub, for tests and demos (product code never imports it).

- ``StandinHub``: the HTTP server (``server``), serving hub roots (``catalog``);
- ``Faults``: deterministic fault switches (``faults``);
- ``generate_minihub``: a small hub root with planted leaks and its ground truth (``minihub``);
- ``reference.lle_reference``: the plain-Python LLE figures the truth is computed with.

``python -m hubsurvey_standin serve|generate`` runs them from the command line.
"""

from .faults import Faults, Quota, Scope
from .server import StandinHub

__all__ = ["Faults", "Quota", "Scope", "StandinHub", "generate_minihub"]


def generate_minihub(*args, **kwargs):
    """See ``minihub.generate_minihub`` (imported lazily: it is not needed to serve)."""
    from .minihub import generate_minihub as generate

    return generate(*args, **kwargs)
