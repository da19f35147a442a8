"""Forms generated from a JSON Schema (draft 2020-12): the Parameters tab's engine.

`resolve` turns a schema node into its effective form (local `$ref`, `allOf`, `if/then/else`,
unions); `values` reads a submitted form back into a JSON value and computes prefill and
changes; `nodes` builds the render tree the `_partials/_schema_*.html` templates draw. Anything
the generator cannot draw becomes a JSON textarea for that subtree, never an error page;
server-side jsonschema validation stays the authority.
"""
