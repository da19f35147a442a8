"""The Parameters form in a real browser: its state survives a reload through the address, the
focus follows an added item, and the error summary takes the focus and leads to each field."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser

PARAMETERS = "/p/nodus/runtimes/sft-qwen3/parameters"


def test_it_restores_the_form_from_the_address_after_a_reload(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go(PARAMETERS)
    page.get_by_label("Learning rate").fill("0.0003")
    page.locator("#job-model").select_option("Qwen/Qwen3-4B")
    page.get_by_label("Training data").fill("hf://datasets/acme/chat")
    expect(page).to_have_url(re.compile(r"p\.learningRate=0\.0003"))
    expect(page).to_have_url(re.compile(r"job\.data=hf%3A%2F%2Fdatasets%2Facme%2Fchat"))
    expect(page.locator("#job-manifest")).to_contain_text("learningRate: 0.0003")

    page.reload()
    expect(page.get_by_label("Learning rate")).to_have_value("0.0003")
    expect(page.locator("#job-model")).to_have_value("Qwen/Qwen3-4B")
    expect(page.get_by_label("Training data")).to_have_value("hf://datasets/acme/chat")
    expect(page.locator("#job-manifest")).to_contain_text("model: Qwen/Qwen3-4B")

    # The same link in a fresh browser (shared with someone) draws the same form.
    other = session_for("bob")
    shared = other.go(page.url.removeprefix(s.server.url))
    expect(shared.get_by_label("Learning rate")).to_have_value("0.0003")


def test_adding_an_item_moves_the_focus_to_it(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go(PARAMETERS)
    page.get_by_role("button", name=re.compile(r"^Add target modules$", re.I)).click()
    focused = page.locator(":focus")
    expect(focused).to_have_attribute("name", "p.lora.targetModules.4")
    page.keyboard.type("gate_proj")
    expect(page.locator("#job-manifest")).to_contain_text("gate_proj")
    expect(page).to_have_url(re.compile(r"targetModules\.4=gate_proj"))


def test_the_error_summary_takes_the_focus_and_links_to_each_field(session_for: Any) -> None:
    s = session_for("alice")
    page = s.go(PARAMETERS)
    field = page.get_by_label("Learning rate")
    field.fill("5")
    expect(field).to_have_attribute("aria-invalid", "true")
    page.get_by_role("button", name="Check job").click()
    summary = page.locator("#error-summary")
    expect(summary).to_be_focused()
    links = summary.get_by_role("link")
    expect(links).to_have_count(3)  # learning rate, model and training data
    s.shot("parameters-error-summary")

    summary.get_by_role("link", name=re.compile("Learning rate")).click()
    expect(field).to_be_focused()
    summary.get_by_role("link", name=re.compile("Training data")).click()
    expect(page.get_by_label("Training data")).to_be_focused()

    # Fixed, the field loses its mark and the summary its entry.
    field.fill("0.0001")
    expect(field).not_to_have_attribute("aria-invalid", "true")
    expect(links).to_have_count(2)
