"""Map the import name ``ddplint`` onto the folders ``lint/`` and ``rules/``.

The folders keep the names of the design card, but nothing is importable as ``lint`` or
``rules``: a user's project with its own ``lint`` package on PYTHONPATH cannot shadow
ddplint (static mode must never import the project's code).
"""

from setuptools import find_packages, setup


def _mapped(folder: str, name: str) -> list[str]:
    return [name + p[len(folder) :] for p in find_packages(include=[folder, folder + ".*"])]


setup(
    packages=_mapped("lint", "ddplint") + _mapped("rules", "ddplint.rules"),
    package_dir={"ddplint": "lint", "ddplint.rules": "rules"},
)
