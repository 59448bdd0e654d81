"""How many servers of a boot fit under a project's quota (pure arithmetic)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from stratus.api.ops import quotas
from stratus.api.store.quotas import Usage

UNLIMITED = {"instances": -1, "cores": -1, "ram": -1}


def test_as_many_as_fit_up_to_max_count():
    limit = {"instances": 10, "cores": 20, "ram": -1}
    # 4 instances left, but cores allow only 3 more of 4 vCPUs (8 of 20 used).
    assert quotas.fit_boot(limit, Usage(6, 8), vcpus=4, ram=512, min_count=1,
                           max_count=8) == 3


def test_fewer_than_min_count_is_refused_with_what_is_left():
    with pytest.raises(quotas.QuotaExceeded) as exc:
        quotas.fit_boot({"instances": 10, "cores": -1, "ram": -1}, Usage(9), vcpus=1,
                        ram=1, min_count=2, max_count=2)
    assert "already used 9 of 10 instances (left: 1 instances)" in exc.value.message


def test_unlimited_counts_nothing():
    assert not quotas.counts_servers(UNLIMITED)
    assert quotas.counts_servers(dict(UNLIMITED, ram=0))   # 0 is a limit: nothing fits
    assert quotas.fit_boot(UNLIMITED, Usage(), 64, 10 ** 6, 1, 1000) == 1000


@given(st.integers(-1, 50), st.integers(0, 60), st.integers(1, 8), st.integers(1, 20),
       st.integers(1, 20))
def test_what_fits_never_takes_a_project_over_its_limit(limit, used, vcpus, lo, extra):
    hi = lo + extra
    caps = {"instances": -1, "cores": limit, "ram": -1}
    try:
        n = quotas.fit_boot(caps, Usage(cores=used), vcpus, 1, lo, hi)
    except quotas.QuotaExceeded:
        assert limit >= 0 and used + lo * vcpus > limit
        return
    assert lo <= n <= hi
    assert limit < 0 or used + n * vcpus <= limit
    assert n == hi or used + (n + 1) * vcpus > limit   # none left out that would fit
