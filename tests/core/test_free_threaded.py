"""On a free-threaded CPython (3.13t) the core keeps the GIL off.

An extension module that does not declare free-threading support turns the GIL
back on for the whole process when it is imported, and the core's real-thread
tests would then prove nothing about running without it. A fresh interpreter
(started without ``PYTHON_GIL``, which would force the answer) imports
``modelmanager`` and every one of its modules (but an integration's modules
that need a server package not installed there) and reports whether the GIL is
still off. Skipped, saying so, on a build with the GIL (3.11, 3.12, 3.13): the
free-threaded CI step (``.ci/free_threaded``) runs it on 3.13t.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig

import pytest

FREE_THREADED = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))

IMPORT_EVERYTHING = """
import pkgutil, sys
import modelmanager
from modelmanager.integrations.roboflow_inference import NotInstalled
for module in pkgutil.walk_packages(modelmanager.__path__, "modelmanager."):
    try:
        __import__(module.name)
    except NotInstalled:  # an integration whose server package is not installed here
        pass
print("gil-enabled" if sys._is_gil_enabled() else "gil-disabled", len(sys.modules))
"""


@pytest.mark.skipif(not FREE_THREADED, reason="needs a free-threaded CPython (3.13t)")
def test_importing_modelmanager_leaves_the_gil_disabled() -> None:
    env = {name: value for name, value in os.environ.items() if name != "PYTHON_GIL"}
    env["PYTHONPATH"] = os.pathsep.join(entry for entry in sys.path if entry)
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_EVERYTHING],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[0] == "gil-disabled", done.stdout + done.stderr
