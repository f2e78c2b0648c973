"""torchenv.testing (placeholder: filled in by its issue)."""
