"""The integration's own errors (upstream's errors are raised as upstream raises them)."""

from __future__ import annotations

from modelmanager.errors import ModelManagerError

__all__ = ["IntegrationError", "NotInstalled"]

INSTALL_COMMAND = (
    "python3 -m pip install --no-deps -r models_spec/targets/roboflow_inference/requirements.txt"
)


class IntegrationError(ModelManagerError):
    """Root of the drop-in's own errors: a stack or an install it cannot honour."""


class NotInstalled(IntegrationError, ImportError):
    """roboflow's ``inference`` package is not importable here."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(
            f"the roboflow inference drop-in needs the `inference` package ({cause}); "
            f"install it into this environment, e.g. `{INSTALL_COMMAND}`"
        )
