"""Label and field selectors: kube grammar, kube semantics and kube's error texts."""

from __future__ import annotations

import pytest

from runtimes.apimachinery.selectors import (
    FieldSelector,
    Operator,
    SelectorError,
    escape_value,
    field_values,
    parse_field_selector,
    parse_label_selector,
    unescape_value,
)

GOLD = {"app": "trainer", "tier": "gold"}
SILVER = {"app": "trainer", "tier": "silver", "legacy": "true"}
BARE: dict[str, str] = {}


@pytest.mark.parametrize(
    ("selector", "gold", "silver", "bare"),
    [
        ("app=trainer", True, True, False),
        ("app==trainer", True, True, False),
        ("app = trainer", True, True, False),
        ("tier!=gold", False, True, True),  # absent key satisfies !=
        ("tier in (gold,silver)", True, True, False),
        ("tier in (gold, silver)", True, True, False),
        ("tier notin (gold)", False, True, True),  # absent key satisfies notin
        ("app", True, True, False),
        ("!app", False, False, True),
        ("! legacy", True, False, True),
        ("app=trainer,tier in (gold,silver),!legacy", True, False, False),
        ("\tapp\n=\rtrainer ,  !legacy ", True, False, False),
        ("", True, True, True),
        ("app=", False, False, False),
        ("tier in (in,notin)", False, False, False),
    ],
)
def test_it_matches_like_kube(selector: str, gold: bool, silver: bool, bare: bool) -> None:
    parsed = parse_label_selector(selector)
    assert [parsed.matches(GOLD), parsed.matches(SILVER), parsed.matches(BARE)] == [
        gold,
        silver,
        bare,
    ]


def test_it_matches_an_empty_value_only_when_the_label_is_present_and_empty() -> None:
    selector = parse_label_selector("a=")
    assert selector.matches({"a": ""})
    assert not selector.matches({})
    assert parse_label_selector("a in (,b)").matches({"a": ""})


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("replicas>3", {"replicas": "4"}, True),
        ("replicas>3", {"replicas": "3"}, False),
        ("replicas<3", {"replicas": "-7"}, True),
        ("replicas>3", {"replicas": "four"}, False),  # unparsable label value never matches
        ("replicas>3", {}, False),
        ("replicas < 10", {"replicas": "+9"}, True),
        ("big>9223372036854775806", {"big": "9223372036854775807"}, True),
        ("big>1", {"big": "9223372036854775808"}, False),  # overflows int64
    ],
)
def test_it_compares_integers_for_gt_and_lt(
    selector: str, labels: dict[str, str], expected: bool
) -> None:
    assert parse_label_selector(selector).matches(labels) is expected


def test_it_reports_empty_and_sorted_requirements() -> None:
    assert parse_label_selector("").empty
    assert parse_label_selector(" \t ").empty
    selector = parse_label_selector("zeta,!alpha,mid in (b,a)")
    assert not selector.empty
    assert [r.key for r in selector.requirements] == ["alpha", "mid", "zeta"]
    assert [r.operator for r in selector.requirements] == [
        Operator.DOES_NOT_EXIST,
        Operator.IN,
        Operator.EXISTS,
    ]
    assert str(selector) == "!alpha,mid in (a,b),zeta"


def test_it_finds_the_value_an_exact_match_requires() -> None:
    assert parse_label_selector("a=1,b in (2)").requires_exact_match("b") == "2"
    assert parse_label_selector("a in (1,2)").requires_exact_match("a") is None
    assert parse_label_selector("a!=1").requires_exact_match("a") is None
    assert parse_label_selector("a=1").requires_exact_match("z") is None


def test_it_accepts_prefixed_keys_and_keyword_values() -> None:
    selector = parse_label_selector("example.com/tier==gold,nodus.dev/in in (notin)")
    assert selector.matches({"example.com/tier": "gold", "nodus.dev/in": "notin"})


QUALIFIED_REGEX = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        (
            "a in ()",
            "unable to parse requirement: values: Invalid value: []string{}: "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            "a notin ()",
            "unable to parse requirement: values: Invalid value: []string{}: "
            "for 'in', 'notin' operators, values set can't be empty",
        ),
        (
            "bad key=1",
            "unable to parse requirement: found 'key', expected: in, notin, =, ==, !=, gt, lt",
        ),
        ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt"),
        ("a in b", "unable to parse requirement: found 'b' expected: '('"),
        ("a in (b", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("a in (b c)", "unable to parse requirement: found 'c', expected: ',' or ')'"),
        ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("a in (b,=)", "unable to parse requirement: found '=', expected: ',', or identifier"),
        ("a=>b", "unable to parse requirement: found '>', expected: identifier"),
        ("a=(", "unable to parse requirement: found '(', expected: identifier"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("!a=b", "found '=', expected: ',' or 'end of string'"),
        ("a=b c", "found 'c', expected: ',' or 'end of string'"),
        ("a=b)", "found ')', expected: ',' or 'end of string'"),
        ("a,", "found '', expected: identifier after ','"),
        ("a,,b", "found ',', expected: identifier after ','"),
        (",a", "found ',', expected: !, identifier, or 'end of string'"),
        ("=a", "found '=', expected: !, identifier, or 'end of string'"),
        (
            "a>x",
            'unable to parse requirement: values[0]: Invalid value: "x": '
            "for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "a=" + "x" * 64,
            'unable to parse requirement: values[0][a]: Invalid value: "' + "x" * 64 + '": '
            "must be no more than 63 characters",
        ),
        (
            "-a",
            'unable to parse requirement: <nil>: Invalid value: "-a": name part must consist of '
            "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
            "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '"
            + QUALIFIED_REGEX
            + "')",
        ),
        (
            "Example.com/a",
            'unable to parse requirement: <nil>: Invalid value: "Example.com/a": prefix part a '
            "lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
            "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
            "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*"
            "[a-z0-9])?)*')",
        ),
    ],
)
def test_it_rejects_bad_selectors_with_kube_messages(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_label_selector(selector)
    assert caught.value.message == message
    assert str(caught.value) == message


@pytest.mark.parametrize(
    "key",
    ["a" * 64, "x/" + "a" * 64, "/a", "a/", "a/b/c", "a" * 254 + "/b", "a_", "é"],
)
def test_it_rejects_invalid_keys(key: str) -> None:
    with pytest.raises(SelectorError, match=r"^unable to parse requirement: <nil>: Invalid value"):
        parse_label_selector(key)


@pytest.mark.parametrize(
    "key", ["a" * 63, "a" * 63 + "/" + "b" * 63, "nodus.dev/A_b.c-d", "x.y.z/9"]
)
def test_it_accepts_keys_at_the_limits(key: str) -> None:
    assert parse_label_selector(key).matches({key: "v"})


SUPPORTED = {"metadata.name", "metadata.namespace", "spec.task", "status.managed"}


def test_it_parses_field_terms_and_matches_values() -> None:
    selector = parse_field_selector("spec.task=SFT,metadata.name!=old", SUPPORTED)
    assert selector.matches({"spec.task": "SFT", "metadata.name": "new"})
    assert not selector.matches({"spec.task": "SFT", "metadata.name": "old"})
    assert not selector.matches({"spec.task": "DPO", "metadata.name": "new"})
    assert parse_field_selector("spec.task==SFT", SUPPORTED).matches({"spec.task": "SFT"})


def test_it_treats_missing_field_values_as_empty() -> None:
    assert parse_field_selector("spec.task=", SUPPORTED).matches({})
    assert parse_field_selector("spec.task!=SFT", SUPPORTED).matches({})


def test_it_rejects_unsupported_field_labels() -> None:
    with pytest.raises(SelectorError) as caught:
        parse_field_selector("metadata.name=x,spec.foo=1", SUPPORTED)
    assert caught.value.message == "field label not supported: spec.foo"


def test_it_reports_syntax_errors_before_unsupported_labels() -> None:
    with pytest.raises(SelectorError) as caught:
        parse_field_selector("spec.foo=1,garbage", SUPPORTED)
    assert (
        caught.value.message == "invalid selector: 'spec.foo=1,garbage'; can't understand 'garbage'"
    )


def test_it_does_not_trim_field_labels() -> None:
    with pytest.raises(SelectorError, match=r"^field label not supported: metadata\.name $"):
        parse_field_selector("metadata.name =x", SUPPORTED)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("spec.task=a=b", "invalid field selector: unescaped character in value: 61"),
        ("spec.task=a\\x", "invalid field selector: invalid escape sequence: \\x"),
        ("spec.task=a\\", "invalid field selector: invalid escape sequence: \\"),
    ],
)
def test_it_rejects_bad_escapes(text: str, message: str) -> None:
    with pytest.raises(SelectorError) as caught:
        parse_field_selector(text, SUPPORTED)
    assert caught.value.message == message


def test_it_round_trips_escaped_values() -> None:
    raw = "a,b=c\\d"
    escaped = escape_value(raw)
    assert escaped == "a\\,b\\=c\\\\d"
    assert unescape_value(escaped) == raw
    selector = parse_field_selector(f"spec.task={escaped},metadata.name=n", SUPPORTED)
    assert selector.matches({"spec.task": raw, "metadata.name": "n"})
    assert len(selector.terms) == 2


def test_it_finds_the_exact_name() -> None:
    assert parse_field_selector("metadata.name=x", SUPPORTED).requires_exact_name() == "x"
    assert parse_field_selector("metadata.name==x", SUPPORTED).requires_exact_name() == "x"
    assert parse_field_selector("metadata.name!=x", SUPPORTED).requires_exact_name() is None
    assert parse_field_selector("spec.task=x", SUPPORTED).requires_exact_name() is None


def test_it_treats_an_empty_field_selector_as_everything() -> None:
    selector = parse_field_selector("", SUPPORTED)
    assert selector.empty
    assert selector == FieldSelector()
    assert selector.matches({"spec.task": "anything"})


def test_it_extracts_field_values_as_kube_strings() -> None:
    obj = {
        "metadata": {"name": "sft", "namespace": "demo"},
        "spec": {"task": "SFT", "replicas": 3, "nested": {"x": 1}},
        "status": {"managed": False},
    }
    values = field_values(
        obj, ["metadata.name", ".spec.task", "spec.replicas", "status.managed", "status.phase"]
    )
    assert values == {
        "metadata.name": "sft",
        "spec.task": "SFT",
        "spec.replicas": "3",
        "status.managed": "false",
        "status.phase": "",
    }
    assert field_values(obj, ["spec.nested", "spec.task.deeper"]) == {
        "spec.nested": "",
        "spec.task.deeper": "",
    }
    selector = parse_field_selector(
        "status.managed=false,spec.replicas=3", SUPPORTED | {"spec.replicas"}
    )
    assert selector.matches(field_values(obj, selector.fields))
