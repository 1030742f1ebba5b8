"""``python -m pqindex.cli``: the ``pqindex`` command without its console script."""

from pqindex.cli import main

raise SystemExit(main())
