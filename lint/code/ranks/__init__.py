"""Which statements run on some ranks only: rank predicates, rank conditions as formulas, rank
reachability, the small ast form for code facts, process groups.
"""
