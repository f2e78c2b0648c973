"""torchenv.batched (placeholder: filled in by its issue)."""
