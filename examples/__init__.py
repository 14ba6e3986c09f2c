"""Runnable examples of model types served through ``modelmanager``.

Examples may import optional third-party packages (torch); the core never
imports anything from here.
"""

__all__: list[str] = []
