"""torchenv.transforms (placeholder: filled in by its issue)."""
