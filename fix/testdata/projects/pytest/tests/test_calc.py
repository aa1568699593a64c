import pytest

from calc import add, div


def test_add():
    assert add(2, 3) == 5


class TestDiv:
    def test_zero(self):
        assert div(1, 0) == 0

    def test_half(self):
        assert div(1, 2) == 0.5


@pytest.fixture
def broken():
    raise RuntimeError("fixture exploded")


def test_fixture(broken):
    assert broken
