"""torchenv.specs (placeholder: filled in by its issue)."""
