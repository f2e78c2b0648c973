"""torchenv.record (placeholder: filled in by its issue)."""
