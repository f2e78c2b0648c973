"""torchenv.registry (placeholder: filled in by its issue)."""
