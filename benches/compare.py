"""The peer benchmark's entry point: ``python benches/compare.py --help``.

The harness is the package beside this file, ``benches/compare/`` (``compare.cli`` parses
the command line); ``import compare`` gives the package, not this file.
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from compare.cli import main

if __name__ == "__main__":
    main()
