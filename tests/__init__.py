"""dcdrill's tests. ROOT: the checkout they run in."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
