"""Which calls communicate: the one catalogue of collectives, what a call reaches through
functions, per-rank collective sequences, timeouts and DDP wrappers.
"""
