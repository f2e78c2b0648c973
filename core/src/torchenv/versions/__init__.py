"""torchenv.versions (placeholder: filled in by its issue)."""
