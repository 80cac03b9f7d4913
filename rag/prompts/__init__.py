"""What the LLM is told: one text file per prompt, its version in its name (``ask_v1.txt``).

A prompt that changes becomes a new file with the next version, so anything cached from
a model's answers can say which prompt produced it. Read them with ``rag.prompts.text``.
"""

from importlib import resources


def text(name: str) -> str:
    """The prompt ``name`` (``ask_v1``), as shipped in this package."""
    return (resources.files(__name__) / f"{name}.txt").read_text(encoding="utf-8")
