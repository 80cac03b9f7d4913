"""Every kind of source behind the one ``Source`` protocol (#50): each registered under the name
the config gives it, made from its spec and from its catalog row, watched, described and kept on
disk as its kind says; and the service and the watcher never switch on a kind's name."""

import ast
import inspect
import typing
from pathlib import Path

import pytest

from rag.config import ConfluencePages, RagConfig, SourceConfig, SourceSpec
from rag.errors import ConfigError
from rag.schemas import GitCommit
from rag.sources.base import Described, PollIntervals, Source
from rag.sources.confluence.space import ConfluenceSpace, confluence_source
from rag.sources.folder import Folder, LocalFolder, folder_source
from rag.sources.registry import KINDS, catalog_source, source_for
from rag.sources.repository import GitRepository, git_source

RAG = Path(__file__).resolve().parents[2] / "rag"
CONFIG = RagConfig.model_validate({"indexing": {"git": {"cloneDir": "/srv/clones"}}})


def test_every_kind_the_config_names_is_registered_and_implements_the_protocol() -> None:
    configured = typing.get_args(SourceConfig.model_fields["type"].annotation)

    assert sorted(KINDS) == sorted(configured)
    for name, kind in KINDS.items():
        assert issubclass(kind, Source) and kind.kind == name
        assert not inspect.isabstract(kind), f"{kind.__name__} leaves {kind.__abstractmethods__} out"


@pytest.mark.parametrize(("spec", "kind"), [
    (folder_source(Path("/work/app")), LocalFolder),
    (git_source("https://example.com/org/lib.git", "main"), GitRepository),
    (confluence_source("https://wiki.example.com/", ("OPS",), None, "wiki"), ConfluenceSpace),
])
def test_a_spec_and_its_catalog_row_make_the_same_source(spec: SourceSpec, kind: type[Source]) -> None:
    config = {"include": ["*.py"], "exclude": [], **(spec.pages.as_config() if spec.pages else {})}
    row = {"name": spec.name, "type": spec.type, "location": spec.location, "branch": spec.branch,
           "config": config}

    source = source_for(spec, CONFIG)

    assert type(source) is kind and source.spec == spec
    assert catalog_source(row) == SourceSpec(spec.name, spec.type, spec.location, spec.branch, ("*.py",), (),
                                             spec.pages)


def test_a_kind_no_registry_knows_is_refused() -> None:
    with pytest.raises(ConfigError, match="unknown source type 'svn'; use one of local, git, confluence"):
        source_for(SourceSpec("old", "svn", "svn://x"), CONFIG)


def test_a_local_folder_is_watched_by_its_events_and_kept_nowhere_else(tmp_path: Path) -> None:
    source = source_for(folder_source(tmp_path, "app"), CONFIG)
    gone = source_for(folder_source(tmp_path / "gone", "gone"), CONFIG)

    assert source.folder() == tmp_path and source.watched(PollIntervals())
    assert not gone.watched(PollIntervals(git=5, confluence=5)), "a folder not on this machine"
    assert source.poll() is None and source.kept_copy() is None
    assert source.describe("abc") == Described()


def test_a_git_repository_is_polled_cloned_where_configured_and_described_by_its_commit() -> None:
    source = source_for(git_source("https://example.com/org/lib.git", "main"), CONFIG)

    assert source.folder() is None and source.kept_copy() == Path("/srv/clones/lib")
    assert source.poll_interval(PollIntervals(git=5, confluence=7)) == 5
    assert source.watched(PollIntervals(git=5)) and not source.watched(PollIntervals(confluence=5))
    assert source.describe("abc").commit == GitCommit(name="lib", branch="main", commit_sha="abc")


def test_a_confluence_selection_is_polled_and_described_by_its_pages() -> None:
    spec = confluence_source("https://wiki.example.com", ("OPS", "DEV"), "label = runbook", "wiki")
    source = source_for(spec, CONFIG)

    assert source.folder() is None and source.kept_copy() is None
    assert source.poll() is None, "its sync's listing is the check"
    assert source.poll_interval(PollIntervals(git=5, confluence=7)) == 7
    assert source.describe(None) == Described(fields={"spaces": ["OPS", "DEV"], "cql": "label = runbook"})
    assert spec.pages == ConfluencePages(("OPS", "DEV"), "label = runbook")


def test_a_folder_resolves_to_its_files_and_a_dry_run_leaves_out_what_a_run_would_refuse(
    tmp_path: Path,
) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    (tmp_path / "blob.txt").write_bytes(b"\x00\x01" * 100)
    (tmp_path / "key.txt").write_text("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n")
    (tmp_path / "node_modules").mkdir()
    source = source_for(folder_source(tmp_path, "app"), CONFIG)

    with source.resolve(sync=False) as resolved:
        preview = source.dry_run(resolved.documents)

    assert isinstance(resolved.documents, Folder) and resolved.root == str(tmp_path)
    assert resolved.commit is None
    assert [f.path for f in preview.files] == ["app.py"] and not preview.fetched
    assert preview.skipped["secret"] == ["key.txt"] and preview.skipped["builtin"] == ["node_modules/"]
    assert preview.problems == [{"path": "blob.txt", "error": "binary file"}]


# -- the service and the watcher ask the source, never its kind's name ----------------------------

def _switches_on_kinds(path: Path) -> list[str]:
    """Where ``path`` compares a source's ``type`` with something, or names a kind other than
    ``local`` (which is a provider's name too) in a string."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(isinstance(o, ast.Attribute) and o.attr == "type" for o in operands) or any(
                isinstance(o, ast.Subscript) and isinstance(o.slice, ast.Constant) and o.slice.value == "type"
                for o in operands
            ):
                found.append(f"{path.name}:{node.lineno}: {ast.unparse(node)}")
        elif isinstance(node, ast.Constant) and node.value in set(KINDS) - {"local"}:
            found.append(f"{path.name}:{node.lineno}: {node.value!r}")
    return found


def test_the_service_and_the_watcher_do_not_switch_on_the_kind_of_a_source() -> None:
    files = [*sorted((RAG / "service").glob("*.py")), RAG / "watcher.py"]

    assert len(files) > 3, "the service's modules are where the test looks"
    assert [line for path in files for line in _switches_on_kinds(path)] == []


def test_the_check_sees_a_switch(tmp_path: Path) -> None:
    sample = tmp_path / "switch.py"
    sample.write_text("a = spec.type == 'git'\nb = row['type'] != 'local'\nc = provider == 'local'\n")

    assert sorted(_switches_on_kinds(sample)) == [
        "switch.py:1: 'git'", "switch.py:1: spec.type == 'git'", "switch.py:2: row['type'] != 'local'",
    ]
