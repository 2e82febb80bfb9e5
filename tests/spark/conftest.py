"""What the verifier's in-process tests share: a Spark session per test module, on 2 cores."""

import pytest

from dcdrill.spark import session


@pytest.fixture(scope="module")
def spark():
    s = session.session("local[2]")
    yield s
    s.stop()
