"""The Parameters form people can finish: its state in the URL (round trip and hostile links),
the error summary and the fields' aria attributes, plain messages, a control for every input a
TrainingJob takes, enums and presets' choices as selects, and the focus after "add item"."""

from __future__ import annotations

import re
from collections.abc import Callable
from html.parser import HTMLParser
from typing import Any
from urllib.parse import urlencode

import pytest
import yaml
from django.http import QueryDict

from runtimes.console.forms import url_state
from tests.support.api import ApiClient
from tests.support.console import client_for, form_fields, managed_catalog

pytestmark = pytest.mark.django_db
SFT = "/p/nodus/runtimes/sft-qwen3"
LR = "sf-p_2e_learningRate"  # the id of the Learning rate field


class Elements(HTMLParser):
    """Every start tag's attributes, by id, plus the texts of labels by their `for`."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.by_id: dict[str, dict[str, str | None]] = {}
        self.tags: dict[str, str] = {}
        self.labels: dict[str, str] = {}
        self._label: str | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if found.get("id"):
            self.by_id[str(found["id"])] = found
            self.tags[str(found["id"])] = tag
        if tag == "label" and found.get("for"):
            self._label = str(found["for"])
            self.labels[self._label] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "label":
            self._label = None

    def handle_data(self, data: str) -> None:
        if self._label is not None:
            self.labels[self._label] += data


def form_of(html: str) -> str:
    start = html.index('<form id="param-form"')
    return html[start : html.index("</form>", start)]


def state_of(html: str) -> QueryDict:
    """What the page's script writes into the address: every field but the bookkeeping."""
    data = form_fields(form_of(html))
    for name in ("_shape", "_choices", "_op", "_submit", "_offers"):
        data.pop(name, None)
    return data


def page(client: Any, query: str = "", path: str = SFT) -> str:
    response = client.get(f"{path}/parameters" + (f"?{query}" if query else ""))
    assert response.status_code == 200
    return response.content.decode()


def manifest_of(html: str) -> dict[str, Any]:
    text = re.search(r'<pre class="code" id="job-manifest">(.*?)</pre>', html, re.S).group(1)
    return yaml.safe_load(text.replace("&#x27;", "'").replace("&quot;", '"'))


def error_line(html: str, control: str) -> str:
    found = re.search(rf'<p class="field-error" id="err-{re.escape(control)}"[^>]*>(.*?)</p>', html)
    assert found, f"no error line for {control}"
    return re.sub(r"<[^>]+>", " ", found.group(1)).strip()


def summary_links(html: str) -> dict[str, str]:
    block = re.search(r'<div id="error-summary".*?</div>', html, re.S).group(0)
    return {
        target: re.sub(r"\s+", " ", text)
        for target, text in re.findall(r'<a href="#([^"]+)" data-field="[^"]+">(.*?)</a>', block)
    }


def test_it_restores_the_whole_form_from_the_query_string(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    # A structural edit first (one more target module), then values typed in fields.
    edited = client.post(
        f"{SFT}/parameters/check?render=form",
        form_fields(form_of(page(client)), _op="add:p.lora.targetModules"),
    ).content.decode()
    data = form_fields(
        edited,
        **{
            "p.learningRate": "0.0003",
            "p.lora.targetModules.4": "gate_proj",
            "p.lrScheduler": '"linear"',
            "job.model": "Qwen/Qwen3-0.6B",
            "job.method": "QLoRA",
            "job.quantization": "nf4",
            "job.amount": "250",
            "job.data": "hf://datasets/acme/chat",
            "job.accelerator": "L4",
        },
    )
    for name in ("_shape", "_choices", "_op", "_submit"):
        data.pop(name, None)
    query = data.urlencode()

    restored = page(client, query)

    assert state_of(restored) == data
    spec = manifest_of(restored)["spec"]
    assert spec["parameters"]["learningRate"] == 0.0003
    assert spec["parameters"]["lora"]["targetModules"][-1] == "gate_proj"
    assert spec["parameters"]["lrScheduler"] == "linear"
    assert (spec["model"], spec["method"], spec["quantization"]) == (
        "Qwen/Qwen3-0.6B",
        "QLoRA",
        "nf4",
    )
    assert (spec["steps"], spec["data"], spec["accelerator"]) == (
        250,
        "hf://datasets/acme/chat",
        "L4",
    )
    # Restored state is valid: no error, and the verdict says the job compiles.
    assert 'id="error-summary"' in restored
    assert summary_links(restored) == {}
    assert "Valid: this job compiles" in restored


def test_a_fresh_form_writes_a_link_that_draws_the_same_form(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    fresh = page(client)
    again = page(client, state_of(fresh).urlencode())
    assert state_of(again) == state_of(fresh)
    assert manifest_of(again) == manifest_of(fresh)


@pytest.mark.parametrize(
    "query",
    [
        "p.learningRate=" + "9" * (url_state.MAX_QUERY + 10),
        "&".join(f"p.x{i}=1" for i in range(3000)),
        "&".join(f"job.model={i}" for i in range(url_state.MAX_FIELDS + 1)),
        "p.lora.targetModules.%24len=999999999",
        "p.lora.targetModules.%24len=99999999999999999999",
        "p.lora.targetModules.%24len=-1",
        "p.optimizer.%24variant=99&p.optimizer.%24shown=0",
        "p.learningRate=%F0%9F%92%A5&job.amount=%C2%B2&job.nodes=1e9",
        "p.lrScheduler=%7Bnot-json&p.%24extra.%24json=%5B1",
        "job.work=years&job.amount=" + "9" * 40,
        "p.%2e%2e=1&p..=2&p.=3&.=4&=5&%00=6",
    ],
)
def test_it_answers_a_hostile_link_with_a_form_never_an_error_page(
    catalog_data: Any, query: str
) -> None:
    response = client_for(catalog_data["bob"]).get(f"{SFT}/parameters?{query}")
    assert response.status_code == 200
    assert '<form id="param-form"' in response.content.decode()


def test_it_refuses_an_oversized_link_and_says_so(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    too_long = page(client, "p.learningRate=" + "9" * (url_state.MAX_QUERY + 10))
    assert "characters long; a link keeps at most 8,192" in too_long
    assert 'name="p.learningRate" type="text" value="2e-05"' in too_long  # the defaults

    many = page(client, "&".join("job.data=" for _ in range(url_state.MAX_FIELDS + 1)))
    assert f"a link keeps at most {url_state.MAX_FIELDS}" in many
    assert 'id="job-data" name="job.data" value=""' in many


def test_it_shows_bad_link_values_as_errors_at_their_fields(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    query = urlencode(
        {
            "p.learningRate": "x" * (url_state.MAX_VALUE + 1),
            "p.epochs": "three",
            "p.lora.targetModules.$len": "99999",
            "job.amount": "-3",
            "job.quantization": "int8",
            "job.model": "Qwen/Qwen3-0.6B",
            "job.method": "LoRA",
        }
    )
    html = page(client, query)
    assert "at most 4,096 are kept" in error_line(html, LR)
    assert (
        error_line(html, "sf-p_2e_epochs") == "Enter a whole number (&#x27;three&#x27; is not one)"
    )
    assert "a link holds at most 400" in error_line(html, "sf-p_2e_lora_2e_targetModules")
    assert error_line(html, "job-amount") == "Enter a whole number of 1 or more"
    assert error_line(html, "job-quantization").startswith("Not one of the choices here")
    links = summary_links(html)
    assert set(links) >= {
        LR,
        "sf-p_2e_epochs",
        "sf-p_2e_lora_2e_targetModules",
        "job-amount",
        "job-quantization",
    }


def test_it_names_the_fields_of_a_link_the_form_does_not_have(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    query = state_of(page(client))
    query.update({"p.noSuchParameter": "1", "job.colour": "red", "p.lora.r.$weird": "2"})
    html = page(client, query.urlencode())
    assert "fields this form does not have, so they were left out: " in html
    named = html[html.index("left out: ") :].split("<", 1)[0]
    assert "p.noSuchParameter" in named
    assert "job.colour" in named
    assert "p.lora.r.$weird" not in named  # bookkeeping of a field the form has
    # The rest of the link still counts.
    assert state_of(html) == state_of(page(client))


def test_every_error_is_in_the_summary_with_a_link_and_marks_its_field(
    catalog_data: Any,
) -> None:
    client = client_for(catalog_data["bob"])
    changed = form_fields(
        form_of(page(client)),
        **{"p.learningRate": "5", "p.optimizer.beta1": "2", "job.amount": "lots"},
    )
    changed.pop("_shape")
    html = page(client, changed.urlencode())
    links = summary_links(html)
    assert links[LR] == "Learning rate: Must be 1 or less"
    assert links["sf-p_2e_optimizer_2e_beta1"] == "Optimizer / Beta 1: Must be 0.9999 or less"
    assert links["job-amount"] == "Work: Enter a whole number of 1 or more"
    elements = Elements(form_of(html))
    for target in links:
        control = elements.by_id[target]
        assert control.get("aria-invalid") == "true", target
        described = str(control.get("aria-describedby")).split()
        assert f"err-{target}" in described
        # Every id it points at is on the page.
        assert all(i in elements.by_id for i in described), described
    # Plain words, not the API's Kubernetes phrasing.
    assert "Invalid value" not in html
    assert "Required value" not in html
    # A field without an error is not marked.
    assert "aria-invalid" not in str(elements.by_id["sf-p_2e_epochs"])


def test_it_shows_the_api_fix_beside_a_plain_message(catalog_data: Any) -> None:
    html = page(client_for(catalog_data["bob"]), "job.environment=nodus/webshop")
    line = error_line(html, "job-environment")
    assert line.startswith("This runtime&#x27;s image cannot run environment tasks")
    assert "Remove spec.environment, or choose a runtime" in line
    summary = html[html.index('<div id="error-summary"') :]
    assert '<span class="fix">Remove spec.environment' in summary[: summary.index("</ul>")]
    # Offered although this runtime cannot run one: the value from the link stays editable.
    assert "disabled" not in str(Elements(form_of(html)).by_id["job-environment"])


def test_missing_inputs_are_still_needed_until_the_user_checks(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    fresh = page(client)
    assert summary_links(fresh) == {}
    assert "still needed before this job can run: Model, Training data" in fresh
    assert "autofocus" not in fresh[fresh.index('id="error-summary"') :][:200]

    checked = page(client, "_submit=1")
    links = summary_links(checked)
    assert links["job-model"] == "Model: This is required"
    assert links["job-data"] == "Training data: This is required"
    summary = checked[checked.index('<div id="error-summary"') :]
    assert summary[: summary.index(">")].endswith("autofocus")  # no script: focus by markup

    posted = client.post(
        f"{SFT}/parameters/check", form_fields(form_of(fresh), _submit="1")
    ).content.decode()
    assert "Model: This is required" in posted


def test_every_input_of_a_training_job_has_a_labelled_control(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    wanted = ("model", "method", "quantization", "amount", "accelerator", "data", "teacher")
    for manifest in managed_catalog():
        name = manifest["metadata"]["name"]
        html = page(client, path=f"/p/nodus/runtimes/{name}")
        elements = Elements(form_of(html))
        for field in (*wanted, "environment"):
            assert f"job-{field}" in elements.by_id, (name, field)
            assert elements.labels.get(f"job-{field}", "").strip(), (name, field)
        # Environment is offered where the runtime's image can run one, else explained.
        environment = elements.by_id["job-environment"]
        can_run = manifest["spec"].get("environmentTasks") == "AttemptAPI"
        assert ("disabled" not in environment) == can_run, name
        # Nodes, for runtimes with a gang launcher.
        gang = manifest["spec"].get("launcher") in ("Torchrun", "Accelerate", "Deepspeed")
        assert ("job-nodes" in elements.by_id) == gang, name
        # The work is counted in the unit the runtime's modes use.
        unit = "tasks" if manifest["spec"].get("modes") == ["Evaluate"] else "steps"
        assert f'name="job.work" value="{unit}"' in html, name


def test_enums_and_preset_choices_are_selects(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    html = page(client, urlencode({"job.model": "Qwen/Qwen3-0.6B", "job.method": "QLoRA"}))
    elements = Elements(form_of(html))
    for control in ("job-model", "job-method", "job-quantization", "job-accelerator"):
        assert elements.tags[control] == "select", control
    assert elements.tags["sf-p_2e_lrScheduler"] == "select"  # a schema enum

    def options(control: str) -> list[str]:
        block = re.search(rf'<select id="{control}".*?</select>', html, re.S).group(0)
        return re.findall(r'<option value="([^"]*)"', block)

    # The QLoRA preset's one scheme is the choice, and chosen.
    assert options("job-quantization") == ["nf4"]
    assert manifest_of(html)["spec"]["quantization"] == "nf4"
    assert options("job-method") == ["", "Full", "LoRA", "QLoRA"]
    # Accelerators: those the chosen preset's GPU request matches, grouped by family, each
    # family's own choice first in its group.
    runtime = next(m for m in managed_catalog() if m["metadata"]["name"] == "sft-qwen3")
    preset = next(
        p
        for p in runtime["spec"]["presets"]
        if (p["model"], p["method"]) == ("Qwen/Qwen3-0.6B", "QLoRA")
    )
    families = set(preset["resources"]["gpu"]["type"])
    offered = options("job-accelerator")
    assert offered[0] == ""
    block = re.search(r'<select id="job-accelerator".*?</select>', html, re.S).group(0)
    groups = re.findall(r'<optgroup label="([^"]*)"><option value="([^"]*)"', block)
    assert {label for label, _first in groups} == families
    assert all(label == first for label, first in groups)
    full = page(client, urlencode({"job.model": "Qwen/Qwen3-0.6B", "job.method": "Full"}))
    block = re.search(r'<select id="job-quantization".*?</select>', full, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)"', block) == [""]
    # Before a model is chosen, every scheme of the presets is offered.
    fresh = page(client)
    block = re.search(r'<select id="job-quantization".*?</select>', fresh, re.S).group(0)
    assert re.findall(r'<option value="([^"]*)"', block) == ["", "nf4"]


def test_choosing_a_model_redraws_the_choices_it_narrows(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    fresh = form_of(page(client))
    same = client.post(f"{SFT}/parameters/check", form_fields(fresh)).content.decode()
    assert 'id="field-job-quantization"' not in same  # nothing moved: errors and output only
    chosen = client.post(
        f"{SFT}/parameters/check",
        form_fields(fresh, **{"job.model": "Qwen/Qwen3-0.6B", "job.method": "QLoRA"}),
    ).content.decode()
    assert '<form id="param-form"' not in chosen  # the rest of the form stays as typed
    field = re.search(
        r'<div class="sf-field[^"]*" id="field-job-quantization" hx-swap-oob="true">.*?</div>',
        chosen,
        re.S,
    )
    assert field
    assert re.findall(r'<option value="([^"]*)"', field.group(0)) == ["nf4"]
    assert 'id="field-job-accelerator" hx-swap-oob="true"' in chosen


def test_the_first_field_of_an_added_item_takes_the_focus(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    data = form_fields(form_of(page(client)), _op="add:p.lora.targetModules")
    body = client.post(f"{SFT}/parameters/check?render=form", data).content.decode()
    focused = re.findall(
        r"<(?:input|select|textarea|fieldset|output)[^>]*\bautofocus\b[^>]*>", body
    )
    assert len(focused) == 1
    assert 'name="p.lora.targetModules.4"' in focused[0]


ONE_VERDICT = {
    "p.learningRate": "abc",
    "p.epochs": "-1",
    "p.optimizer.beta1": "2",
    "job.amount": "ten",
    "job.project": "demo",
    "_submit": "1",
}


def test_one_verdict_each_problem_once_and_the_apis_own(
    catalog_data: Any, api: Callable[[str | None], ApiClient]
) -> None:
    """The form's errors are its parse errors plus exactly the causes the API answers a dry
    run of the job the form can read with, each once, on its field; nothing can be created."""
    client = client_for(catalog_data["alice"])  # an editor of demo, where the job would go
    html = page(client, urlencode(ONE_VERDICT))
    links = summary_links(html)
    # A value that does not read is said once: not also "This is required".
    assert links[LR] == "Learning rate: Enter a number ('abc' is not one)".replace("'", "&#x27;")
    assert links["job-amount"] == "Work: Enter a whole number of 1 or more"
    # The API's dry run of what the form could read: every cause is in the summary, once.
    readable = manifest_of(html)
    readable["spec"]["parameters"].pop("learningRate")
    readable["spec"].pop("steps")
    readable["metadata"] = {"generateName": "sft-qwen3-"}
    answer = api("alice").post(
        "/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs?dryRun=All", readable
    )
    assert answer.status_code == 422, answer.json_body
    causes = {c["field"] for c in answer.json_body["details"]["causes"]}
    assert {"spec.model", "spec.data", "spec.parameters.epochs"} <= causes
    on_parsed_fields = {"spec.parameters.learningRate", "spec.steps"}
    assert len(links) == len(causes - on_parsed_fields) + 2, (links, causes)
    # The preview keeps what was typed and says it is not valid; Create job is refused.
    shown = manifest_of(html)
    assert shown["spec"]["parameters"]["learningRate"] == "abc"
    assert shown["spec"]["steps"] == "ten"
    assert 'id="manifest-verdict"' in html
    assert "data-create-job=" not in html


def test_a_valid_form_offers_create_job_with_the_manifest_it_shows(
    catalog_data: Any, api: Callable[[str | None], ApiClient]
) -> None:
    client = client_for(catalog_data["alice"])
    query = {"job.model": "Qwen/Qwen3-0.6B", "job.method": "LoRA", "job.data": "s3://d/train"}
    query |= {"job.amount": "100", "job.project": "demo", "_submit": "1"}
    html = page(client, urlencode(query))
    assert summary_links(html) == {}
    assert 'id="manifest-verdict"' not in html
    assert "data-create-job=" in html
    shown = manifest_of(html)
    shown["metadata"] = {"generateName": "sft-qwen3-"}
    answer = api("alice").post(
        "/apis/nodus.dev/v1beta1/namespaces/demo/trainingjobs?dryRun=All", shown
    )
    assert answer.status_code == 201, answer.json_body
