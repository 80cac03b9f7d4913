"""Sources: what local-rag indexes, each kind behind one ``Source`` (``base``), chosen by its
name in one place (``registry``): a local folder (``folder``), a git repository (``repository``,
a shallow clone kept up to date by ``git``), a Confluence selection (``confluence``).

A folder's files are chosen by ``scan`` (built-in exclusions, .gitignore/.ragignore files read
by ``ignore``, per-source include/exclude globs) and read by ``reading``. This package's own
module imports none of them, so that knowing the kinds costs no import of what they use.
"""
