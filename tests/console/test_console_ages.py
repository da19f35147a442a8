"""Ages as kubectl prints them, the absolute time for their title, and the one duration format."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from runtimes.console.ages import absolute_time, age_between, iso_time
from runtimes.console.summaries import human_duration

NOW = datetime(2026, 12, 5, 4, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("ago", "said"),
    [
        (timedelta(seconds=-5), "0s"),
        (timedelta(seconds=45), "45s"),
        (timedelta(seconds=119), "119s"),
        (timedelta(minutes=3), "3m"),
        (timedelta(minutes=119), "119m"),
        (timedelta(hours=5), "5h"),
        (timedelta(hours=47), "47h"),
        (timedelta(days=12), "12d"),
    ],
)
def test_it_says_an_age_as_kubectl_does(ago: timedelta, said: str) -> None:
    assert age_between(NOW - ago, NOW) == said


def test_it_gives_the_absolute_time_in_utc_with_its_zone() -> None:
    assert absolute_time("2026-12-05T05:30:00+01:30") == "2026-12-05 04:00:00 UTC"
    assert iso_time("2026-12-05T04:00:00Z") == "2026-12-05T04:00:00Z"
    assert iso_time(NOW) == "2026-12-05T04:00:00Z"
    for nonsense in ("", "yesterday", None, 3):
        assert absolute_time(nonsense) == ""
        assert iso_time(nonsense) == ""


@pytest.mark.parametrize(
    ("seconds", "said"),
    [(0.42, "0.42s"), (12, "12s"), (185, "3m5s"), (6480, "1h48m"), (7200, "2h"), (273600, "3d4h")],
)
def test_durations_have_one_format_everywhere(seconds: float, said: str) -> None:
    assert human_duration(seconds) == said
