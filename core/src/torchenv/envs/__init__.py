"""torchenv.envs (placeholder: filled in by its issue)."""
