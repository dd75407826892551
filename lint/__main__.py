"""Entry point for ``python -m lint``."""

from lint.cli import main

if __name__ == "__main__":
    main()
