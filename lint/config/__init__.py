"""What YAML config rules share: loading with positions, the document model, OmegaConf
resolution, world size, which YAML is a training config, and text edits for fixes."""
