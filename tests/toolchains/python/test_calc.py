import sys

from calc import mean


def test_mean():
    assert mean([1, 2, 3, 6]) == 3


def test_runs_in_the_workspace_venv():
    assert sys.prefix != sys.base_prefix, "pytest should run from the workspace's venv"
