"""Cutting files into chunks: one module per kind of file, pure Python, no database."""
