"""How a field error shows the value it refuses: as apimachinery does, whatever the value."""

from __future__ import annotations

from runtimes.apimachinery.fielderrors import invalid, render_value


def test_it_shows_strings_quoted_and_numbers_bare() -> None:
    assert render_value("a") == '"a"'
    assert render_value(3) == "3"
    assert render_value(None) == "null"


def test_it_shows_a_structure_holding_an_integer_past_64_bits() -> None:
    big = 2**70
    assert render_value({"b": [big], "a": 1}) == f'{{"a":1,"b":[{big}]}}'
    assert str(big) in str(invalid("spec.x", [big], "must be small"))
