"""``python -m rag``: the same command line as the ``rag`` script."""

from rag.cli import main

if __name__ == "__main__":
    main()
