"""The Estimates tab: nodes from the preset or the job, only the parameters a runtime's task
uses under human labels, prices per node-hour and per job with their units, and the rule
explained in an accessible disclosure."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.support.console import client_for, managed_catalog

pytestmark = pytest.mark.django_db
HX = {"HX-Request": "true"}


def estimates(client: Any, runtime: str, query: str = "", partial: bool = False) -> str:
    response = client.get(
        f"/p/nodus/runtimes/{runtime}/estimates" + (f"?{query}" if query else ""),
        headers=HX if partial else {},
    )
    assert response.status_code == 200
    return response.content.decode()


def labels(html: str) -> dict[str, str]:
    return {k: v.strip() for k, v in re.findall(r'<label for="est-([^"]+)">([^<]*)</label>', html)}


def column(html: str, header: str) -> list[str]:
    """The cells of the results table's column with this header."""
    headers = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', html)
    index = headers.index(header)
    rows = re.findall(r"<tr><th scope=\"row\".*?</tr>", html, re.S)
    cells = [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", r) for r in rows]
    return [c[index] for c in cells]


def preset_index(name: str, model: str, method: str) -> int:
    runtime = next(m for m in managed_catalog() if m["metadata"]["name"] == name)
    presets = runtime["spec"]["presets"]
    return next(i for i, p in enumerate(presets) if (p["model"], p["method"]) == (model, method))


def dollars(cells: list[str]) -> list[float]:
    return [float(c.lstrip("$").replace(",", "")) for c in cells]


def test_it_offers_only_the_scaling_parameters_the_runtime_uses(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    sft = labels(estimates(client, "sft-qwen3"))
    assert sft["batchSize"] == "Batch size"
    assert sft["gradientAccumulation"] == "Gradient accumulation"  # the schema's title
    assert "maxCompletionLength" not in sft  # an SFT runtime generates no completions
    dpo = labels(estimates(client, "dpo-trl"))
    assert dpo["maxCompletionLength"] == "Max completion length"
    evaluation = labels(estimates(client, "evaluate-lm-harness"))
    # Tasks do not scale by batch size, though the runtime has one.
    assert set(evaluation) == {"amount", "nodes", "preset"}
    assert evaluation["amount"] == "How many evaluation tasks"
    # No raw key is shown as a label anywhere; custom-pytorch scales by none of them.
    assert set(labels(estimates(client, "custom-pytorch"))) == {"amount", "nodes", "preset"}
    for found in (sft, dpo, evaluation):
        assert not any(re.fullmatch(r"[a-z]+[A-Z]\w*", text) for text in found.values())


def test_it_states_the_units_of_every_price(catalog_data: Any) -> None:
    html = estimates(client_for(catalog_data["bob"]), "sft-qwen3", "amount=1000")
    headers = re.findall(r'<th scope="col"[^>]*>([^<]*)</th>', html)
    assert {"GPUs per node", "Nodes", "Price per node-hour", "Cost per job"} <= set(headers)
    assert "Prices in US dollars" in html
    per_node_hour = dollars(column(html, "Price per node-hour"))
    per_job = dollars(column(html, "Cost per job"))
    assert per_node_hour
    assert all(p > 0 for p in per_node_hour)
    assert len(per_job) == len(per_node_hour)


def test_nodes_come_from_the_preset_and_the_job(catalog_data: Any) -> None:
    client = client_for(catalog_data["bob"])
    two = preset_index("sft-llama3", "meta-llama/Llama-3.1-70B", "Full")
    on_preset = estimates(client, "sft-llama3", f"preset={two}")
    assert set(column(on_preset, "Nodes")) == {"2"}
    assert 'placeholder="2"' in on_preset  # the nodes field shows the preset's
    four = estimates(client, "sft-llama3", f"preset={two}&nodes=4")
    assert set(column(four, "Nodes")) == {"4"}
    # Twice the nodes for the same time: twice the cost per job, the same price per node-hour.
    assert dollars(column(four, "Cost per job")) == pytest.approx(
        [2 * c for c in dollars(column(on_preset, "Cost per job"))], rel=0.01
    )
    assert column(four, "Price per node-hour") == column(on_preset, "Price per node-hour")


def test_it_refuses_fewer_nodes_than_the_preset_and_multi_node_without_a_gang_launcher(
    catalog_data: Any,
) -> None:
    client = client_for(catalog_data["bob"])
    two = preset_index("sft-llama3", "meta-llama/Llama-3.1-70B", "Full")
    fewer = estimates(client, "sft-llama3", f"preset={two}&nodes=1", partial=True)
    assert "May only raise the preset&#x27;s 2 nodes" in fewer
    assert 'id="err-est-nodes" hx-swap-oob="true">May only raise' in fewer
    plain = estimates(client, "sft-unsloth", "nodes=2")  # launcher Plain
    assert re.search(r'id="est-nodes"[^>]*aria-invalid="true"', plain)
    assert "needs a gang launcher" in plain


def test_it_explains_the_scaling_rule_in_a_disclosure(catalog_data: Any) -> None:
    html = estimates(client_for(catalog_data["bob"]), "dpo-trl")
    rule = re.search(r'<details class="estimate-rule".*?</details>', html, re.S)
    assert rule, "the rule is a <details>, reachable by keyboard and screen readers"
    text = re.sub(r"<[^>]+>", " ", rule.group(0))
    assert "How this estimate is made" in text
    assert "max completion length (runtime default 1024)" in text
    assert "price per node-hour" in text
    evaluation = estimates(client_for(catalog_data["bob"]), "evaluate-lm-harness")
    assert "evaluation tasks \u00d7 the seconds one task took" in evaluation


@pytest.mark.parametrize("preset", ["%C2%B9", "%D9%A1", "-1", "99999", "x"])
def test_a_preset_that_is_not_one_is_the_runtime_defaults_never_an_error(
    catalog_data: Any, preset: str
) -> None:
    client = client_for(catalog_data["bob"])
    page = estimates(client, "sft-llama3", f"preset={preset}")
    defaults = estimates(client, "sft-llama3")
    assert column(page, "Nodes") == column(defaults, "Nodes")
