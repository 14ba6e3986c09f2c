"""Repository-wide pytest configuration.

pytest only honours ``pytest_plugins`` in the rootdir conftest, so plugins
the tests share are declared here.
"""

pytest_plugins = ["pytester"]
