"""Where training steps run and what they do: training loops, forward paths, loop counters,
step skips, returns, optimizer steps, loaders and datasets.
"""
