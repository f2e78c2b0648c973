"""Built-in pure-torch environments."""
