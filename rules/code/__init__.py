"""Code rules: one module per rule."""
