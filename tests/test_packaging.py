"""The user's install (#49): a wheel built from this checkout carries every file local-rag reads at
run time, and installed into a fresh venv outside the checkout it initialises a database, indexes
(keyword-only and hybrid), searches and serves MCP.

The fresh venv holds only the wheel; its dependencies come from the test venv's site-packages,
named in a ``.pth`` file (a path line adds the folder without running the ``.pth`` files inside it,
so the checkout's editable install stays out of the way). No network is needed.
"""

import json
import os
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from rag import db

ROOT = Path(__file__).resolve().parent.parent
SITE_PACKAGES = Path(next(p for p in sys.path if p.endswith("site-packages")))
# (a PYTHONPATH naming a checkout would make pip take its egg-info for an installed local-rag)
CLEAN_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def data_files_rag_reads() -> set[str]:
    """Every file of the checkout that the package opens at run time, by its name inside the wheel:
    the non-Python files under rag/, and sql/ and migrations/ mapped to rag/sql and rag/migrations."""
    files = {p.relative_to(ROOT).as_posix() for p in (ROOT / "rag").rglob("*")
             if p.is_file() and p.suffix not in {".py", ".pyc"} and "__pycache__" not in p.parts}
    files |= {f"rag/sql/{p.name}" for p in (ROOT / "sql").glob("*.sql")}
    files |= {f"rag/migrations/{p.name}" for p in (ROOT / "migrations").glob("*.sql")}
    return files | {"rag/migrations/RELEASED"}


def test_every_package_under_rag_is_listed_in_pyproject() -> None:
    """Packages are listed (sql/ and migrations/ are mapped in): a new folder must be named there."""
    listed = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "rag").rglob("__init__.py")}
    on_disk |= {"rag.sql", "rag.migrations"}  # data folders without __init__.py
    assert listed == on_disk


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # From a copy of what the package is built of: setuptools would also ship what an earlier
    # build left in the checkout's build/lib (a module moved since, say).
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    for name in ("rag", "sql", "migrations"):
        shutil.copytree(ROOT / name, source / name, ignore=shutil.ignore_patterns("__pycache__"))
    # --no-build-isolation: the test venv's setuptools, offline
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(out), str(source)], check=True, capture_output=True, timeout=300,
                   env=CLEAN_ENV)
    (built,) = out.glob("local_rag-*.whl")
    return built


@pytest.mark.slow
def test_the_wheel_carries_every_file_the_package_reads(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = data_files_rag_reads() - names
    assert not missing, f"left out of the wheel: {sorted(missing)}"
    python = {p.relative_to(ROOT).as_posix() for p in (ROOT / "rag").rglob("*.py")}
    assert python <= names


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh venv holding the wheel; returns its bin folder."""
    home = tmp_path_factory.mktemp("user-venv")
    venv.EnvBuilder(with_pip=False).create(home)
    python = home / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                    str(wheel)], check=True, capture_output=True, timeout=300, env=CLEAN_ENV)
    (site,) = (home / "lib").glob("python3*/site-packages")
    (site / "test-dependencies.pth").write_text(f"{SITE_PACKAGES}\n")
    yield home / "bin"


def run(bin_dir: Path, *args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(bin_dir / "rag"), *args], capture_output=True, text=True, cwd=cwd, env=env,
                          timeout=300, check=False)
    assert done.returncode == 0, f"rag {' '.join(args)}: {done.stderr}"
    return done


@pytest.mark.slow
def test_an_installed_wheel_runs_outside_the_checkout(installed: Path, empty_db: db.DatabaseTarget,
                                                       tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "tokens.py").write_text(
        "def refresh_token(session):\n    \"\"\"Ask the server for a new access token.\"\"\"\n"
        "    return session.post('/token')\n")
    (project / "README.md").write_text("# Project\n\n## Tokens\n\nTokens are refreshed by refresh_token.\n")
    elsewhere.mkdir()
    (tmp_path / "keyword.yaml").write_text("embeddings: {provider: none}\n")
    env = dict(CLEAN_ENV, RAG_DATABASE_URL=empty_db.url, RAG_HOME=str(tmp_path / "rag-home"), HF_HUB_OFFLINE="1")

    located = subprocess.run([str(installed / "python"), "-c", "import rag; print(rag.__file__)"],
                             capture_output=True, text=True, cwd=elsewhere, env=env, check=True)
    assert Path(located.stdout.strip()).is_relative_to(installed.parent), "the checkout's rag was imported"

    init = run(installed, "init", cwd=elsewhere, env=env)
    assert f"({len(db.migration_files())} migrations applied now)" in init.stdout
    run(installed, "--config", str(tmp_path / "keyword.yaml"), "index", "--path", str(project), "--name",
        "keywords", cwd=elsewhere, env=env)
    run(installed, "index", "--path", str(project), "--name", "hybrid", cwd=elsewhere, env=env)

    found = json.loads(run(installed, "search", "how is the access token refreshed", "--source", "hybrid",
                           "--json", cwd=elsewhere, env=env).stdout)
    assert found["results"][0]["path"] == "src/tokens.py"
    assert found["results"][0]["scores"]["vectorRank"] is not None  # the bundled model answered
    keyword = json.loads(run(installed, "--config", str(tmp_path / "keyword.yaml"), "search", "refresh_token",
                             "--source", "keywords", "--json", cwd=elsewhere, env=env).stdout)
    assert keyword["results"][0]["sourceName"] == "keywords"
    assert keyword["results"][0]["scores"]["vectorRank"] is None

    as_module = subprocess.run([str(installed / "python"), "-m", "rag", "status"], capture_output=True,
                               text=True, cwd=elsewhere, env=env, timeout=120, check=False)
    assert as_module.returncode == 0, as_module.stderr
    assert "hybrid" in as_module.stdout

    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(command=str(installed / "rag"), args=["mcp"], env=env, cwd=str(elsewhere))

    async def tool_names() -> set[str]:
        async with Client(params, mode="legacy", read_timeout_seconds=120) as client:
            return {tool.name for tool in (await client.list_tools()).tools}

    assert {"search", "read_source", "status"} <= anyio.run(tool_names)
