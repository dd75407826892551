"""Config (YAML) rules: one module per rule."""
