"""The analysis core: one program representation that every rank rule asks.

Floors, each importing only the ones before it:

- ``api`` (the distributed APIs known by name), ``names`` (a module's imports) and
  ``children`` (a node's children and ``walk``, faster than ``ast``'s own);
  ``forms`` (on ``names``): which forms a module holds at all, the screens that spare a
  file its LibCST parse (``CodeRule.may_report``);
- ``control_flow``: a control-flow graph per function (module code counts as one) on
  CPython's ``ast``, with exception edges, ``with`` exits, ``finally`` and loop ``else``;
- ``module_nodes``: one walk of the module: its nodes by type, its calls by scope;
- ``dominance``: post-dominators and control dependence (loop-carried exits included);
- ``single_process`` (on ``control_flow``, ``module_nodes`` and ``names``): the
  statements only a single-process job runs (the other arm of a test on the process
  count, or of a switch tied to it; local functions called only from there);
- ``divergence``: which values may differ between ranks, by facet (contents, shape,
  device), flow-sensitively, with the agreement a collective brings;
- ``effects``: which statements issue a collective, and of what kind;
- ``functions``: each function's facts (graph, dominance, divergence, effects) and the
  local functions that reach a collective;
- ``pairing``: whether ranks issue the same collectives: a test's branches, and the
  whole function walked as rank 0 and as another rank;
- ``questions``: the questions rules ask (where ranks part, at the root cause);
- ``lightning_monitors`` (on ``functions``): the metrics Lightning callbacks monitor,
  by allocation, and the logs that leave them rank-local.
- ``handles``: work handles of asynchronous collectives not waited where they matter
  (a forward analysis over ``control_flow``, beside ``questions``).
- ``rank_guards`` (on ``functions``): where a statement runs on some ranks only (the
  nearest divergent test it depends on, an expression guard, ``@rank_zero_only``);
  ``trainers``: which expressions hold a Lightning ``Trainer``, by what made them;
  ``trainer_questions`` on both (DDP214, DDP215); ``skip_decisions`` (DDP216): a
  flag from this rank's data broadcast from one rank, then obeyed by an exit;
  ``value_loops`` (DDP217): collectives repeated per value of this rank's batch.

Beside them, on ``control_flow``: ``batches`` (where this rank's batch enters a
function: a LightningModule's step parameters, a training loop's items), the seeds of
the batch view ``ModuleAnalysis.batch_view`` that only questions about this rank's data
ask. On ``names``: ``config_bindings`` (which names hold a config loaded from a
file, and which key an expression reads); ``literal_values`` (values decided where they
are set: module constants bound once, fixed keys of dict literals, and the tests they
decide, so ``divergence`` takes no parting at such a test); ``constants`` (on
``module_nodes``: an expression's constant value, following names bound once in their
function) with ``fallback_defaults`` (the default a value falls back to: a parameter's,
an ``argparse`` option's, a config field's); ``iterable_datasets`` (the module's
``IterableDataset`` classes, whether they split their stream by rank, the loaders over
them) and ``enumerate_loops`` (``for i, b in enumerate(loader)``, its last-batch and
periodic tests); ``object_flow`` (on ``module_nodes``: where the object one call makes travels in
a module, through names, ``self`` fields, returns and parameters, and the loops that
walk it with the loop that repeats them) with ``sampler_epochs`` (DDP402: a distributed
sampler walked every epoch with no ``set_epoch`` on it); ``timeouts`` (which APIs take
a process-group ``timeout``, and where); and ``project`` (below every floor): what the
project model tells the core of other modules (their collectives, DDP models their
callers hand in, their rank tests).
"""
