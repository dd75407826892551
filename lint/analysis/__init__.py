"""The analysis core: one program representation that every rank rule asks.

Floors, each importing only the ones before it:

- ``control_flow``: a control-flow graph per function (module code counts as one) on
  CPython's ``ast``, with exception edges, ``with`` exits, ``finally`` and loop ``else``;
- ``dominance``: post-dominators and control dependence (loop-carried exits included);
- ``reaching``: reaching definitions, so a name read is the value bound on this path;
- ``calls``: what a call names once the module's imports are resolved;
- ``divergence``: which values may differ between ranks, by facet (contents, shape,
  device), with the agreement a collective brings;
- ``effects``: which statements issue a collective, and of what kind;
- ``pairing``: the collective sequence each rank class runs through a function;
- ``questions``: the questions rules ask (a collective reached on some ranks only, and
  where the ranks part).
"""
