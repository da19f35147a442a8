"""The JSON-Schema form generator, one behaviour per keyword: draw, submit, read back, validate."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from runtimes.console.forms import schema_form
from runtimes.console.forms.nodes import Node
from runtimes.console.forms.schema_form import SchemaForm
from tests.support.console import form_fields


def html_of(form: SchemaForm) -> str:
    return render_to_string("_partials/_schema_node.html", {"node": form.tree, "form_url": "/f"})


def draw(schema: dict[str, Any], defaults: dict[str, Any] | None = None) -> str:
    return html_of(schema_form.initial(schema, defaults))


def submit(schema: dict[str, Any], html: str | None = None, **changes: Any) -> SchemaForm:
    html = html if html is not None else draw(schema)
    return schema_form.submitted(schema, None, form_fields(html, **changes))


def obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def node(form: SchemaForm, key: str) -> Node:
    return next(n for n in form.nodes() if n.key == key)


def test_it_reads_strings_back() -> None:
    form = submit(obj(name={"type": "string"}), p__name="hello")
    assert form.value == {"name": "hello"}


def test_it_leaves_out_empty_optional_fields() -> None:
    assert submit(obj(name={"type": "string"})).value == {}


def test_it_reads_integers_and_reports_text_at_the_field() -> None:
    schema = obj(epochs={"type": "integer"})
    assert submit(schema, p__epochs="3").value == {"epochs": 3}
    form = submit(schema, p__epochs="three")
    assert "epochs" not in form.value
    assert node(form, "p.epochs").errors == ["Enter a whole number ('three' is not one)"]


def test_it_reads_numbers() -> None:
    form = submit(obj(lr={"type": "number"}), p__lr="2e-5")
    assert form.value == {"lr": 2e-5}


def test_it_draws_booleans_with_a_default_as_checkboxes() -> None:
    schema = obj(packing={"type": "boolean", "default": True})
    html = draw(schema)
    assert 'type="checkbox" id="sf-p_2e_packing" name="p.packing" value="true" checked' in html
    assert submit(schema, html, p__packing=None).value == {"packing": False}


def test_it_draws_booleans_without_a_default_as_not_set_true_false() -> None:
    schema = obj(private={"type": "boolean"})
    html = draw(schema)
    assert '<option value="" selected>not set</option>' in html
    assert submit(schema, html).value == {}
    assert submit(schema, html, p__private="false").value == {"private": False}


def test_it_reads_null() -> None:
    form = submit({"type": "object", "properties": {"x": {"type": "null"}}, "required": ["x"]})
    assert form.value == {"x": None}


def test_it_offers_a_picker_for_a_type_union() -> None:
    schema = obj(limit={"type": ["integer", "string"]})
    html = draw(schema)
    assert 'name="p.limit.$variant"' in html
    form = submit(schema, html, **{"p.limit.$variant": "1"})
    # The picker just changed: the string form starts empty and is drawn next.
    assert node(form, "p.limit").kind in ("union", "string")
    redrawn = html_of(form)
    form = submit(schema, redrawn, p__limit="unlimited")
    assert form.value == {"limit": "unlimited"}


def test_it_draws_enums_as_selects_and_validates_them() -> None:
    schema = obj(sched={"enum": ["linear", "cosine", 3]})
    html = draw(schema)
    assert '<option value="&quot;cosine&quot;">cosine</option>' in html
    assert submit(schema, html, p__sched='"cosine"').value == {"sched": "cosine"}
    assert submit(schema, html, p__sched="3").value == {"sched": 3}
    form = submit(schema, html, p__sched='"bogus"')
    assert node(form, "p.sched").errors[0].startswith("Not one of the choices here")


def test_it_keeps_const_values() -> None:
    schema = {"type": "object", "required": ["name"], "properties": {"name": {"const": "adamw"}}}
    assert submit(schema).value == {"name": "adamw"}


def test_it_prefills_defaults_and_reports_only_changes() -> None:
    schema = obj(epochs={"type": "integer", "default": 1}, lr={"type": "number", "default": 0.1})
    html = draw(schema)
    assert 'value="1"' in html
    form = submit(schema, html, p__epochs="4")
    assert form.value == {"epochs": 4, "lr": 0.1}
    assert form.changed == {"epochs": 4}


def test_it_prefers_the_runtimes_default_parameters_over_schema_defaults() -> None:
    schema = obj(epochs={"type": "integer", "default": 1})
    form = schema_form.initial(schema, {"epochs": 3})
    assert node(form, "p.epochs").text == "3"
    assert form.changed == {}


def test_it_shows_title_description_and_examples() -> None:
    schema = obj(
        lr={"type": "number", "title": "Learning rate", "description": "Peak LR.", "examples": [1]}
    )
    html = draw(schema)
    assert ">Learning rate" in html
    assert "Peak LR." in html
    assert "e.g. 1" in html
    assert '<datalist id="sf-p_2e_lr-examples"><option value="1"></datalist>' in html


def test_it_validates_numeric_bounds_at_the_field() -> None:
    schema = obj(lr={"type": "number", "exclusiveMinimum": 0, "maximum": 1})
    assert node(submit(schema, p__lr="2"), "p.lr").errors == ["Must be 1 or less"]
    assert node(submit(schema, p__lr="0"), "p.lr").errors == ["Must be more than 0"]
    assert submit(schema, p__lr="0.5").valid


def test_it_validates_multiple_of() -> None:
    schema = obj(n={"type": "integer", "multipleOf": 8})
    assert "multiple of 8" in node(submit(schema, p__n="12"), "p.n").errors[0]
    assert submit(schema, p__n="16").valid
    assert "a multiple of 8" in draw(schema)


def test_it_validates_string_length_and_pattern() -> None:
    schema = obj(tag={"type": "string", "minLength": 2, "maxLength": 4, "pattern": "^[a-z]+$"})
    html = draw(schema)
    assert 'minlength="2"' in html
    assert 'maxlength="4"' in html
    assert "at least 2 characters" in node(submit(schema, p__tag="a"), "p.tag").errors[0]
    assert "pattern" in node(submit(schema, p__tag="AB"), "p.tag").errors[0]
    assert submit(schema, p__tag="abc").valid


def test_it_uses_inputs_for_formats_and_checks_them() -> None:
    schema = obj(
        hook={"type": "string", "format": "uri"},
        mail={"type": "string", "format": "email"},
        day={"type": "string", "format": "date"},
        at={"type": "string", "format": "date-time"},
    )
    html = draw(schema)
    assert 'type="url"' in html
    assert 'type="email"' in html
    assert 'type="date"' in html
    assert 'placeholder="2026-01-31T18:00:00Z"' in html
    # The server's validator is the authority: it checks date and email (date-time and uri
    # need optional jsonschema extras the platform does not install).
    form = submit(schema, html, p__mail="nobody", p__day="2026-02-30")
    assert node(form, "p.mail").errors
    assert node(form, "p.day").errors
    assert submit(schema, html, p__at="2026-01-31T18:00:00Z", p__day="2026-02-01").valid


def test_it_draws_nested_objects_as_fieldsets() -> None:
    schema = {
        "type": "object",
        "required": ["lora"],
        "properties": {"lora": obj(r={"type": "integer"})},
    }
    html = draw(schema)
    lora = '<fieldset class="sf-object" id="sf-p_2e_lora" aria-describedby="err-sf-p_2e_lora">'
    assert lora in html
    assert submit(schema, html, p__lora__r="8").value == {"lora": {"r": 8}}


def test_it_switches_optional_objects_on_and_off() -> None:
    schema = obj(
        push={
            "type": "object",
            "required": ["repo"],
            "properties": {
                "repo": {"type": "string"},
                "private": {"type": "boolean", "default": True},
            },
        }
    )
    html = draw(schema)
    assert 'name="p.push.$on"' in html
    assert 'name="p.push.repo"' not in html
    assert submit(schema, html).value == {}
    switched = submit(schema, html, **{"p.push.$on": "on"})
    assert switched.value == {"push": {"private": True}}
    assert node(switched, "p.push.repo").errors == ["This is required"]
    form = submit(schema, html_of(switched), p__push__repo="acme/x")
    assert form.value == {"push": {"repo": "acme/x", "private": True}}


def test_it_adds_removes_and_reorders_array_items() -> None:
    schema = obj(mods={"type": "array", "items": {"type": "string"}, "default": ["a", "b"]})
    html = draw(schema)
    assert submit(schema, html).value == {"mods": ["a", "b"]}
    added = submit(schema, html, _op="add:p.mods")
    assert added.value == {"mods": ["a", "b", ""]}
    assert submit(schema, html_of(added), **{"p.mods.2": "c"}).value == {"mods": ["a", "b", "c"]}
    assert submit(schema, html, _op="remove:p.mods.0").value == {"mods": ["b"]}
    assert submit(schema, html, _op="up:p.mods.1").value == {"mods": ["b", "a"]}
    assert submit(schema, html, _op="down:p.mods.0").value == {"mods": ["b", "a"]}


def test_it_edits_arrays_of_objects() -> None:
    item = {
        "type": "object",
        "required": ["n"],
        "properties": {"n": {"type": "integer", "default": 1}},
    }
    schema = obj(steps={"type": "array", "items": item})
    added = submit(schema, _op="add:p.steps")
    assert added.value == {"steps": [{"n": 1}]}
    form = submit(schema, html_of(added), **{"p.steps.0.n": "5"})
    assert form.value == {"steps": [{"n": 5}]}


def test_it_draws_unique_enum_arrays_as_checkboxes() -> None:
    schema = obj(to={"type": "array", "uniqueItems": True, "items": {"enum": ["tb", "wandb"]}})
    html = draw(schema)
    assert 'type="checkbox" id="sf-p_2e_to-1" name="p.to" value="&quot;tb&quot;"' in html
    assert submit(schema, html, p__to=['"tb"', '"wandb"']).value == {"to": ["tb", "wandb"]}


def test_it_resolves_local_refs_and_defs() -> None:
    schema = {
        "type": "object",
        "properties": {"lora": {"$ref": "#/$defs/lora"}},
        "required": ["lora"],
        "$defs": {"lora": obj(r={"type": "integer", "title": "Rank", "default": 16})},
    }
    html = draw(schema)
    assert ">Rank" in html
    assert submit(schema, html).value == {"lora": {"r": 16}}


def test_it_bounds_recursive_refs_with_a_json_textarea() -> None:
    schema = {
        "type": "object",
        "required": ["tree"],
        "properties": {"tree": {"$ref": "#/$defs/node"}},
        "$defs": {
            "node": {
                "type": "object",
                "required": ["child"],
                "properties": {"label": {"type": "string"}, "child": {"$ref": "#/$defs/node"}},
            }
        },
    }
    form = schema_form.initial(schema, None)
    kinds = {n.kind for n in form.nodes()}
    assert "json" in kinds  # recursion ends in a textarea instead of looping
    assert len(form.nodes()) < 40


def test_it_picks_a_oneof_variant_and_validates_inside_it() -> None:
    adam = {
        "type": "object",
        "title": "AdamW",
        "required": ["name"],
        "additionalProperties": False,
        "properties": {"name": {"const": "adamw"}, "beta": {"type": "number", "maximum": 1}},
    }
    ada = {
        "type": "object",
        "title": "Adafactor",
        "required": ["name"],
        "additionalProperties": False,
        "properties": {
            "name": {"const": "adafactor"},
            "relative": {"type": "boolean", "default": False},
        },
    }
    schema = obj(opt={"oneOf": [adam, ada], "default": {"name": "adamw", "beta": 0.9}})
    html = draw(schema)
    assert '<option value="0" selected>AdamW</option>' in html
    form = submit(schema, html, p__opt__beta="2")
    assert node(form, "p.opt.beta").errors
    switched = submit(schema, html, **{"p.opt.$variant": "1"})
    assert switched.value == {"opt": {"name": "adafactor", "relative": False}}
    assert switched.valid


def test_it_treats_anyof_like_oneof() -> None:
    schema = obj(v={"anyOf": [{"type": "integer"}, {"type": "string", "title": "Text"}]})
    html = draw(schema)
    assert ">Text</option>" in html
    assert '<option value="" selected>not set</option>' in html
    assert submit(schema, html).value == {}


def test_it_merges_allof() -> None:
    schema = {"allOf": [obj(a={"type": "integer"}), {"properties": {"b": {"type": "string"}}}]}
    html = draw(schema)
    assert 'name="p.a"' in html
    assert 'name="p.b"' in html


def test_it_applies_if_then_else_from_the_value() -> None:
    schema = {
        "type": "object",
        "properties": {"method": {"enum": ["Full", "LoRA"], "default": "Full"}},
        "if": {"properties": {"method": {"const": "LoRA"}}},
        "then": {"properties": {"rank": {"type": "integer", "default": 8}}, "required": ["rank"]},
        "else": {"properties": {"zero": {"type": "boolean", "default": True}}},
    }
    html = draw(schema)
    assert 'name="p.zero"' in html
    assert 'name="p.rank"' not in html
    form = submit(schema, html, p__method='"LoRA"')
    assert 'name="p.rank"' in html_of(form)
    # The field the `then` branch adds appears with its default.
    assert form.value == {"method": "LoRA", "rank": 8}


def test_it_marks_required_fields_and_reports_them_missing() -> None:
    schema = {"type": "object", "required": ["lr"], "properties": {"lr": {"type": "number"}}}
    html = draw(schema)
    assert '<span class="req">required</span>' in html
    assert node(submit(schema, html), "p.lr").errors == ["This is required"]


def test_it_shows_read_only_fields_without_submitting_them() -> None:
    schema = obj(v={"type": "string", "readOnly": True, "default": "1.0"})
    html = draw(schema)
    assert 'value="1.0" readonly' in html
    assert 'name="p.v"' not in html
    assert submit(schema, html).value == {}


def test_it_marks_deprecated_fields() -> None:
    html = draw(obj(old={"type": "string", "deprecated": True}))
    assert 'class="deprecated"' in html
    assert "(deprecated)" in html


def test_it_falls_back_to_json_for_what_it_cannot_draw() -> None:
    schema = obj(
        remote={"$ref": "https://example.com/schema.json"},
        free={"type": "object", "additionalProperties": {"type": "integer"}},
        tuple={"type": "array", "prefixItems": [{"type": "integer"}]},
    )
    html = draw(schema)
    for name in ("remote", "free", "tuple"):
        assert f'name="p.{name}.$json"' in html
    form = submit(schema, html, **{"p.free.$json": '{"a": 1}', "p.tuple.$json": "[1"})
    assert form.value["free"] == {"a": 1}
    assert node(form, "p.tuple").errors[0].startswith("This is not valid JSON")


def test_it_escapes_schema_text() -> None:
    html = draw(
        obj(x={"type": "string", "description": "<script>alert(1)</script>", "title": "<b>t</b>"})
    )
    assert "<script>" not in html
    assert "<b>" not in html
    assert "&lt;script&gt;" in html


def test_it_places_errors_without_a_widget_on_the_nearest_ancestor() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "additionalProperties": False,
    }
    form = schema_form.submitted(schema, None, form_fields(draw(schema)))
    form2 = schema_form._finish(schema, {"zzz": 1}, {}, {}, validate=True)
    assert form.valid
    assert any("zzz" in e for e in form2.tree.errors)
