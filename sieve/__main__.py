from sieve.cli import run

raise SystemExit(run())
