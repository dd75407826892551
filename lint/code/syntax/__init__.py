"""What a LibCST module says on its own: one indexed walk, names resolved through imports, call
arguments, constants, the conditions a statement runs under, calls inside a module, safe
parsing and message snippets.
"""
