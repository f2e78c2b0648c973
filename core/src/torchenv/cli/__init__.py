"""torchenv.cli (placeholder: filled in by its issue)."""
