"""Job parameters against a runtime's schema: formats are checked, not only types."""

from __future__ import annotations

from runtimes.catalog.parameters import parameter_errors

SCHEMA = {
    "type": "object",
    "properties": {
        "startAt": {"type": "string", "format": "date-time"},
        "callback": {"type": "string", "format": "uri"},
        "owner": {"type": "string", "format": "email"},
    },
}


def test_it_refuses_values_that_break_their_format() -> None:
    errors = parameter_errors(
        SCHEMA, {"startAt": "yesterday", "callback": "not a uri", "owner": "nobody"}, "parameters"
    )
    assert sorted(e.field for e in errors) == [
        "parameters.callback",
        "parameters.owner",
        "parameters.startAt",
    ]


def test_it_accepts_well_formed_values() -> None:
    good = {
        "startAt": "2026-12-02T10:40:51Z",
        "callback": "https://hooks.example.com/done",
        "owner": "alice@example.com",
    }
    assert parameter_errors(SCHEMA, good, "parameters") == []
