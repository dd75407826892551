"""Which values differ between ranks: values computed from this rank's batch or loss (and what
stays the same on every rank whatever the data), and iteration orders that come from a set.
"""
