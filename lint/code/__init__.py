"""What code rules share: the module index, names resolved through imports, forward
paths, and helpers to build findings and fixes."""
