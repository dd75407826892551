"""Entry point for ``python -m ddplint``."""

from ddplint.cli import main

if __name__ == "__main__":
    main()
