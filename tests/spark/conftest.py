"""What the verifier's in-process tests share: a Spark session per test module, on 2 cores."""
import pytest

from spark import verify


@pytest.fixture(scope="module")
def spark():
    s = verify.session("local[2]")
    yield s
    s.stop()
