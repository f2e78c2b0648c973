"""``python -m torchenv.cli``."""

from torchenv.cli import main

raise SystemExit(main())
