"""Values a module reads from its configuration: the YAML files it is bound to, the keys it
reads, and the declared values (a literal, a default, a config key) a finding cites.
"""
