"""The publish editor in a real browser: CodeMirror (built from npm by `make test-deps`) over the
manifest's text area, completing keys and enum values from the TrainingRuntime's schema, showing
a field's description on hover, the server's dry-run causes at their lines, and a save that
writes what was typed."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = pytest.mark.browser


def editor(s: Any) -> Any:
    page = s.go("/publish")
    content = page.locator(".code-editor .cm-content")
    expect(content).to_be_visible()
    expect(page.locator("#publish-manifest")).to_be_hidden()
    return page, content


def go_to_end_of(page: Any, content: Any, text: str) -> None:
    content.locator(".cm-line", has_text=text).first.click()
    page.keyboard.press("End")


def test_it_completes_keys_and_values_from_the_schema(session_for: Any) -> None:
    s = session_for("alice")
    page, content = editor(s)
    go_to_end_of(page, content, "launcher:")
    page.keyboard.press("Enter")
    page.keyboard.type("checkp")
    options = page.locator(".cm-tooltip-autocomplete li")
    expect(options.filter(has_text="checkpointing")).to_be_visible()
    page.wait_for_timeout(300)  # CodeMirror takes Enter only once its list has been shown 75 ms
    page.keyboard.press("Enter")  # takes the completion: "checkpointing: "
    line = content.locator(".cm-line", has_text="checkpointing")
    expect(line).to_have_text(re.compile(r"^\s+checkpointing: $"))
    for _ in range(len("checkpointing: ")):
        page.keyboard.press("Backspace")
    # A value from the schema's enum: the launcher.
    go_to_end_of(page, content, "launcher:")
    for _ in range(len("Accelerate")):
        page.keyboard.press("Backspace")
    page.keyboard.press("Control+Space")
    expect(options.filter(has_text="Torchrun")).to_be_visible()
    # The text area the form submits follows the editor.
    page.keyboard.press("Escape")
    page.keyboard.type("Torchrun")
    assert "launcher: Torchrun" in page.locator("#publish-manifest").input_value()


def test_it_explains_a_field_on_hover(session_for: Any) -> None:
    s = session_for("alice")
    page, content = editor(s)
    # The page's dry run answers after load, and its diagnostics redraw the editor's lines: a
    # hover begun over a line that is then redrawn is forgotten (CodeMirror looks for the element
    # the mouse last moved over), as a person's would be until they move the mouse again.
    expect(page.locator("#publish-feedback")).to_contain_text("Valid:", timeout=10_000)
    content.locator(".cm-line", has_text="launcher:").first.get_by_text("launcher").hover()
    doc = page.locator(".cm-schema-doc")
    expect(doc).to_be_visible()
    expect(doc).to_contain_text("spec.launcher")


def test_it_marks_the_servers_causes_at_their_lines_and_saves_what_was_typed(
    session_for: Any,
) -> None:
    s = session_for("alice")
    page, content = editor(s)
    go_to_end_of(page, content, "task:")
    for _ in range(len("SFT")):
        page.keyboard.press("Backspace")
    page.keyboard.type("Juggling")
    expect(page.locator("#publish-causes")).to_contain_text("spec.task")
    marked = page.locator(".cm-gutter-lint .cm-lint-marker-error")
    expect(marked).to_have_count(1)
    page.locator("#publish-causes [data-goto-line]").first.click()
    expect(page.locator(".cm-activeLine")).to_contain_text("task: Juggling")
    page.keyboard.press("End")  # the whole line is selected: keep it, edit its end
    for _ in range(len("Juggling")):
        page.keyboard.press("Backspace")
    page.keyboard.type("SFT")
    go_to_end_of(page, content, "name:")
    page.keyboard.type("-typed")
    expect(page.locator("#publish-verdict")).to_contain_text("Valid")
    expect(marked).to_have_count(0)
    page.locator("#publish-save").click()
    page.wait_for_url(re.compile(r"/runtimes/my-runtime-typed/status"))
    expect(page.locator("#messages, .toast").first).to_contain_text("Published my-runtime-typed")
