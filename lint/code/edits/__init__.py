"""Text edits for fixes: node-position edits, argument and statement edits, and making a name
importable.
"""
