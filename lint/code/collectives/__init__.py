"""The LibCST catalogue of collectives (kinds, needles, the receivers a module allocates),
kept for the engine's needles and for rules written on LibCST.
"""
