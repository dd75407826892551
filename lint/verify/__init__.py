"""The runtime verifier (`ddplint verify`): launch the ranks under torchrun, trace their
collectives, detect a hang, compare the ranks and map the result to static findings.

This package init stays empty on purpose: the rank-side modules (bootstrap, rank_runtime,
instrument, frames) are also loaded inside user processes under a private package name,
where ``lint`` is not importable.
"""
