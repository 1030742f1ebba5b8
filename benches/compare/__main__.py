"""``python -m compare`` (from benches/), the same as ``python benches/compare.py``."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from compare.cli import main

main()
