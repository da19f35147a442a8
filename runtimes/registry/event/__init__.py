"""The core/v1 Event kind: what the controller records about the objects it reconciles."""
