"""The small ``ast`` form of "is this call reached on one rank only?" that the code facts
need (the rank questions themselves are the analysis core's).
"""
