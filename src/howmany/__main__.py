"""``python -m howmany ...`` — see ``howmany.cli``."""

from .cli import main

raise SystemExit(main())
