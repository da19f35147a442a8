"""Where nodus's parameter validator answers otherwise than the JSON Schema Test Suite (draft
2020-12), each with its reason: the one list of them (docs/parameters.md explains each).

`reason_for(case)` names the difference a suite case falls under, or None; the suite test fails
on a case that differs without one, and on a reason that no case needs any more.
"""

from __future__ import annotations

from tests.support.json_schema_suite import Case

REMOTE_REF = (
    "a $ref to another document: admission refuses it, since the server never fetches a "
    "schema, so the validator cannot resolve it"
)
FORMAT_ASSERTED = (
    "format is asserted, by design: a parameter declared as an email, a date or a URI is "
    "checked before a job runs with it, as kube-apiserver checks a CRD's formats"
)
RE2_NOT_ECMA = (
    "pattern is RE2 (linear time), not ECMA 262: \\s and \\S are ASCII whitespace, \\cX and "
    "\\p{digit} are not RE2 syntax, \\a is the bell; admission refuses what RE2 cannot compile"
)
CUSTOM_META_SCHEMA = (
    "a $schema naming another meta-schema is not fetched (admission refuses any but 2020-12's), "
    "so every 2020-12 vocabulary applies"
)

REMOTE_DYNAMIC_REF_GROUPS = {
    "strict-tree schema, guards against misspelled properties",
    "tests for implementation dynamic anchor and reference link",
    "$ref and $dynamicAnchor are independent of order - $defs first",
    "$ref and $dynamicAnchor are independent of order - $ref first",
    "$ref to $dynamicRef finds detached $dynamicAnchor",
}

REASONS = (REMOTE_REF, FORMAT_ASSERTED, RE2_NOT_ECMA, CUSTOM_META_SCHEMA)


def reason_for(case: Case) -> str | None:
    if case.file == "refRemote.json" or (
        case.file == "dynamicRef.json" and case.group in REMOTE_DYNAMIC_REF_GROUPS
    ):
        return REMOTE_REF
    if case.file == "format.json" and case.test.endswith("is only an annotation by default"):
        return FORMAT_ASSERTED
    if case.file in ("optional/ecmascript-regex.json", "optional/format/ecmascript-regex.json"):
        return RE2_NOT_ECMA
    if case.file == "vocabulary.json" and "custom metaschema" in case.group:
        return CUSTOM_META_SCHEMA
    return None
