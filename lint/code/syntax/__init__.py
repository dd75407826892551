"""What a LibCST module says on its own: one indexed walk, names resolved through imports,
safe parsing, positions and snippets (the fixes and full-output frames of LibCST rules).
"""
