// The publish editor: CodeMirror 6 over the manifest's <textarea data-code-editor>, bundled by
// `npm run build` (esbuild) into build/static/console/editor.js. The textarea stays the form's
// field: every change is copied back and announced with an "input" event, so the server's
// check as you type (htmx) and the form's submit work as before, and without this script the
// textarea is the editor. From the TrainingRuntime's OpenAPI schema (embedded in the page by
// `json_script`) it offers the keys and enum values a place in the manifest takes, and shows a
// field's description on hover; the server's dry-run causes become diagnostics at their lines.

import { EditorView, keymap, lineNumbers, highlightActiveLine, hoverTooltip } from "@codemirror/view";
import { EditorState } from "@codemirror/state";
import { defaultKeymap, history, historyKeymap, indentWithTab } from "@codemirror/commands";
import { syntaxHighlighting, HighlightStyle, indentUnit } from "@codemirror/language";
import { tags } from "@lezer/highlight";
import { yaml } from "@codemirror/lang-yaml";
import { autocompletion, completionKeymap } from "@codemirror/autocomplete";
import { lintGutter, setDiagnostics } from "@codemirror/lint";

const MAX_DEPTH = 32; // $ref hops and path segments followed, whatever the schema says

// One line of YAML as far as nesting goes: its indent, whether it starts a list item, its key.
export function parseLine(text) {
  if (!text.trim() || /^\s*#/.test(text)) return null;
  const m = /^( *)(- +)?(?:([^\s:#'"][^:#]*?|"[^"]*"|'[^']*')\s*:(?=\s|$))?/.exec(text);
  const indent = m[1].length;
  const dash = m[2] ? m[2].length : 0;
  let key = m[3] || null;
  if (key && /^["']/.test(key)) key = key.slice(1, -1);
  return { indent, isItem: dash > 0, contentIndent: indent + dash, key };
}

// The keys (and "[]" for list items) that lead from the document's root to the mapping whose
// keys start at `here`'s column on line `index`.
export function containerPath(lines, index, here) {
  const path = [];
  let state = here.isItem ? { col: here.indent, item: true } : { col: here.contentIndent, item: false };
  for (let i = index - 1; i >= 0 && path.length < MAX_DEPTH; i--) {
    const p = parseLine(lines[i]);
    if (!p) continue;
    if (state.item) {
      if (p.indent > state.col || (p.isItem && p.indent === state.col)) continue;
      if (!p.key) continue;
      if (!p.isItem && p.indent <= state.col) {
        path.unshift(p.key, "[]");
        state = { col: p.indent, item: false };
      } else if (p.isItem && p.indent < state.col) {
        path.unshift(p.key, "[]");
        state = { col: p.indent, item: true };
      }
      continue;
    }
    if (p.contentIndent > state.col) continue;
    if (p.contentIndent === state.col) {
      if (p.isItem) state = { col: p.indent, item: true };
      continue;
    }
    if (!p.key) continue;
    path.unshift(p.key);
    state = p.isItem ? { col: p.indent, item: true } : { col: p.indent, item: false };
  }
  return path;
}

function resolve(schema, node) {
  for (let hops = 0; node && hops < MAX_DEPTH; hops++) {
    if (node.$ref) {
      node = schema.components[node.$ref.split("/").pop()];
    } else if (node.allOf && node.allOf.length === 1 && !node.properties) {
      node = { ...node.allOf[0], description: node.description || node.allOf[0].description };
    } else {
      return node;
    }
  }
  return node || null;
}

// The schema of the value at `path` ("[]" steps into a list's items), or null.
export function schemaAt(schema, path) {
  let node = resolve(schema, schema.root);
  for (const step of path.slice(0, MAX_DEPTH)) {
    if (!node) return null;
    if (step === "[]") node = resolve(schema, node.items);
    else if (node.properties && node.properties[step]) node = resolve(schema, node.properties[step]);
    else if (node.additionalProperties && typeof node.additionalProperties === "object") {
      node = resolve(schema, node.additionalProperties);
    } else return null;
  }
  return node;
}

function describe(node) {
  if (!node) return "";
  const type = node.type || (node["x-kubernetes-int-or-string"] ? "integer or string" : "");
  return type === "array" ? "list" : type === "object" ? "object" : type;
}

function completions(schema) {
  return (context) => {
    const line = context.state.doc.lineAt(context.pos);
    const before = line.text.slice(0, context.pos - line.from);
    const lines = context.state.doc.toString().split("\n");
    const here = parseLine(before) || { indent: before.length, isItem: false, contentIndent: before.length, key: null };
    const container = containerPath(lines, line.number - 1, here);
    const value = /^( *)(- +)?([^\s:#][^:#]*?)\s*:\s+(\S*)$/.exec(before);
    if (value) {
      const node = schemaAt(schema, [...container, value[3]]);
      const choices = node && (node.enum || (node.type === "boolean" ? [true, false] : null));
      if (!choices) return null;
      return {
        from: context.pos - value[4].length,
        options: choices.map((v) => ({ label: String(v), type: "enum" })),
        validFor: /^[\w.-]*$/,
      };
    }
    const word = /[\w$.-]*$/.exec(before)[0];
    if (before.slice(0, before.length - word.length).trim().replace(/^-\s*$/, "") !== "") return null;
    if (!context.explicit && !word) return null;
    const node = schemaAt(schema, container);
    if (!node || !node.properties) return null;
    return {
      from: context.pos - word.length,
      options: Object.entries(node.properties).map(([key, prop]) => {
        const target = resolve(schema, prop);
        return {
          label: key,
          type: "property",
          detail: describe(target),
          info: (target && (prop.description || target.description)) || undefined,
          apply: key + ": ",
        };
      }),
      validFor: /^[\w$.-]*$/,
    };
  };
}

function hover(schema) {
  return hoverTooltip((view, pos) => {
    const line = view.state.doc.lineAt(pos);
    const parsed = parseLine(line.text);
    if (!parsed || !parsed.key) return null;
    const start = line.from + line.text.indexOf(parsed.key, parsed.contentIndent);
    const end = start + parsed.key.length;
    if (pos < start || pos > end) return null;
    const lines = view.state.doc.toString().split("\n");
    const path = [...containerPath(lines, line.number - 1, parsed), parsed.key];
    const container = schemaAt(schema, path.slice(0, -1));
    const prop = container && container.properties && container.properties[parsed.key];
    const node = schemaAt(schema, path);
    const text = (prop && prop.description) || (node && node.description);
    if (!text) return null;
    return {
      pos: start,
      end,
      above: true,
      create() {
        const dom = document.createElement("div");
        dom.className = "cm-schema-doc";
        const head = document.createElement("strong");
        head.textContent = path.join(".").replace(/\.\[\]/g, "[]") + (describe(node) ? ` (${describe(node)})` : "");
        const body = document.createElement("p");
        body.textContent = text;
        dom.append(head, body);
        return { dom };
      },
    };
  });
}

// The server's causes (#publish-causes: "line N" buttons beside each message) as diagnostics.
function causesOf(doc) {
  const found = [];
  for (const item of document.querySelectorAll("#publish-causes li")) {
    const button = item.querySelector("[data-goto-line]");
    if (!button) continue;
    const number = Math.min(Math.max(1, Number(button.dataset.gotoLine) || 1), doc.lines);
    const line = doc.line(number);
    const message = item.textContent.replace(/^\s*line \d+\s*/, "").trim();
    found.push({ from: line.from, to: Math.max(line.from, line.to), severity: "error", message });
  }
  return found;
}

// What console.css cannot reach inside the shadow root: the editor's box, colours and tooltips.
const THEME = EditorView.theme({
  "&": { height: "100%", maxHeight: "70vh", backgroundColor: "var(--bg)", color: "var(--fg)" },
  "&.cm-focused": { outline: "none" },
  ".cm-scroller": { fontFamily: "var(--mono)", overflow: "auto", minHeight: "20rem" },
  ".cm-gutters": { backgroundColor: "var(--soft)", color: "var(--muted)", borderRight: "1px solid var(--line)" },
  ".cm-activeLine": { backgroundColor: "var(--soft)" },
  ".cm-tooltip": { backgroundColor: "var(--bg)", color: "var(--fg)", border: "1px solid var(--line)" },
  ".cm-schema-doc": { maxWidth: "28rem", padding: "0.4rem 0.6rem", fontSize: "0.85rem" },
  ".cm-schema-doc p": { margin: "0.25rem 0 0" },
});

// Colours from the console's palette, which meets contrast in the light and the dark theme.
const HIGHLIGHT = HighlightStyle.define([
  { tag: [tags.propertyName, tags.definition(tags.propertyName)], color: "var(--accent)" },
  { tag: [tags.string, tags.special(tags.string), tags.content], color: "var(--ok)" },
  { tag: [tags.number, tags.bool, tags.null, tags.atom, tags.keyword], color: "var(--warn)" },
  { tag: [tags.comment, tags.lineComment], color: "var(--muted)", fontStyle: "italic" },
  { tag: [tags.meta, tags.punctuation, tags.separator, tags.operator], color: "var(--fg)" },
]);

function mount(textarea) {
  if (textarea.dataset.codeEditorMounted) return;
  textarea.dataset.codeEditorMounted = "1";
  const source = document.getElementById(textarea.dataset.codeEditor);
  const schema = source ? JSON.parse(source.textContent) : null;
  const label = document.querySelector(`label[for="${textarea.id}"]`);
  let copying = false;
  const extensions = [
    lineNumbers(),
    history(),
    highlightActiveLine(),
    syntaxHighlighting(HIGHLIGHT),
    indentUnit.of("  "),
    EditorState.tabSize.of(2),
    yaml(),
    lintGutter(),
    keymap.of([...completionKeymap, ...defaultKeymap, ...historyKeymap, indentWithTab]),
    EditorView.contentAttributes.of({
      "aria-label": label ? label.textContent : "Manifest",
      "aria-describedby": textarea.getAttribute("aria-describedby") || "",
      spellcheck: "false",
      // Already in the tab order (contenteditable); said outright so checkers see the
      // scrolling box holds something keyboard users reach.
      tabindex: "0",
    }),
    EditorView.updateListener.of((update) => {
      if (!update.docChanged) return;
      textarea.value = update.state.doc.toString();
      copying = true;
      textarea.dispatchEvent(new Event("input", { bubbles: true }));
      copying = false;
    }),
  ];
  if (schema) extensions.push(autocompletion({ override: [completions(schema)] }), hover(schema));
  // CodeMirror writes its styles at run time. In a shadow root they go into a constructed
  // style sheet, which the page's CSP (no inline style) admits; in the document they would be
  // <style> elements, which it refuses.
  const host = document.createElement("div");
  host.className = "code-editor";
  host.id = `${textarea.id}-editor`;
  textarea.after(host);
  const root = host.attachShadow({ mode: "open" });
  extensions.push(THEME);
  const view = new EditorView({
    state: EditorState.create({ doc: textarea.value, extensions }),
    root,
    parent: root,
  });
  textarea.hidden = true;
  // A script that sets the text area's value (and says so with an "input" event) sets the
  // editor's text too.
  textarea.addEventListener("input", () => {
    if (copying || textarea.value === view.state.doc.toString()) return;
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: textarea.value } });
  });
  if (label) label.addEventListener("click", () => view.focus());

  const showCauses = () => view.dispatch(setDiagnostics(view.state, causesOf(view.state.doc)));
  document.body.addEventListener("htmx:afterSettle", (event) => {
    if (event.target && event.target.id === "publish-feedback") showCauses();
  });
  showCauses();
  // "line N" beside a cause: select that line in the editor (before live.js's textarea handler).
  document.addEventListener(
    "click",
    (event) => {
      const button = event.target.closest && event.target.closest("[data-goto-line]");
      if (!button) return;
      event.stopImmediatePropagation();
      const number = Math.min(Math.max(1, Number(button.dataset.gotoLine) || 1), view.state.doc.lines);
      const line = view.state.doc.line(number);
      view.dispatch({ selection: { anchor: line.from, head: line.to }, scrollIntoView: true });
      view.focus();
    },
    true,
  );
}

function mountAll(root) {
  for (const textarea of (root || document).querySelectorAll("textarea[data-code-editor]")) mount(textarea);
}

document.addEventListener("DOMContentLoaded", () => mountAll(document));
document.addEventListener("htmx:load", (event) => mountAll(event.target));
