"""What language a source file is written in, and the language names a user may type.

* ``detect_language``: a tree-sitter-language-pack grammar name for a code file
  (by file name, then shebang or content), or None for prose and data files.
* ``language_names`` / ``language_name``: every language a chunk can carry, and
  the one a user's word (a name, an alias, an extension) means, for
  ``rag search --lang`` and the MCP search tool.
"""

import re
from collections.abc import Mapping
from functools import lru_cache
from pathlib import PurePath

_EXTENSIONS: Mapping[str, str] = {
    # the JavaScript family (the javascript grammar parses JSX)
    ".js": "javascript", ".jsx": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "tsx",
    # Python, JVM, .NET
    ".py": "python", ".pyi": "python", ".pyw": "python",
    ".java": "java", ".kt": "kotlin", ".kts": "kotlin", ".scala": "scala", ".sc": "scala",
    ".groovy": "groovy", ".gradle": "groovy", ".clj": "clojure", ".cljs": "clojure",
    ".cljc": "clojure", ".edn": "clojure", ".cs": "csharp", ".fs": "fsharp",
    ".fsx": "fsharp", ".fsi": "fsharp_signature",
    # systems languages
    ".go": "go", ".rs": "rust", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp",
    ".cxx": "cpp", ".c++": "cpp", ".hh": "cpp", ".hpp": "cpp", ".hxx": "cpp", ".h++": "cpp",
    ".ipp": "cpp", ".inl": "cpp", ".cu": "cuda", ".cuh": "cuda", ".m": "objc", ".mm": "objc",
    ".swift": "swift", ".zig": "zig", ".d": "d", ".odin": "odin", ".v": "verilog",
    ".sv": "verilog", ".vhd": "vhdl", ".vhdl": "vhdl", ".nim": "nim", ".ha": "hare",
    ".f": "fortran", ".f90": "fortran", ".f95": "fortran", ".f03": "fortran", ".for": "fortran",
    ".ada": "ada", ".adb": "ada", ".ads": "ada", ".pas": "pascal", ".pp": "pascal",
    ".asm": "asm", ".s": "asm", ".ll": "llvm", ".wat": "wat", ".wast": "wast",
    ".glsl": "glsl", ".vert": "glsl", ".frag": "glsl", ".hlsl": "hlsl", ".wgsl": "wgsl",
    ".ispc": "ispc", ".cairo": "cairo", ".sol": "solidity", ".cob": "cobol", ".cbl": "cobol",
    # scripting languages
    ".rb": "ruby", ".rake": "ruby", ".gemspec": "ruby", ".php": "php", ".pl": "perl",
    ".pm": "perl", ".t": "perl", ".lua": "lua", ".luau": "luau", ".r": "r", ".jl": "julia",
    ".ex": "elixir", ".exs": "elixir", ".erl": "erlang", ".hrl": "erlang", ".gleam": "gleam",
    ".hs": "haskell", ".elm": "elm", ".ml": "ocaml", ".mli": "ocaml_interface",
    ".purs": "purescript", ".rkt": "racket", ".scm": "scheme", ".ss": "scheme",
    ".lisp": "commonlisp", ".cl": "commonlisp", ".el": "elisp", ".fnl": "fennel",
    ".janet": "janet", ".dart": "dart", ".hx": "haxe", ".hack": "hack", ".tcl": "tcl",
    ".gd": "gdscript", ".nut": "squirrel", ".pony": "pony", ".as": "actionscript",
    ".matlab": "matlab", ".vim": "vim", ".ps1": "powershell", ".psm1": "powershell",
    ".sh": "bash", ".bash": "bash", ".zsh": "bash", ".ksh": "bash", ".fish": "fish",
    ".star": "starlark", ".bzl": "starlark", ".bazel": "starlark", ".nix": "nix",
    ".apex": "apex", ".cls": "apex", ".bsl": "bsl", ".smali": "smali", ".magik": "magik",
    # web, query and schema languages
    ".html": "html", ".htm": "html", ".vue": "vue", ".svelte": "svelte", ".astro": "astro",
    ".css": "css", ".scss": "scss", ".sql": "sql", ".graphql": "graphql", ".gql": "graphql",
    ".proto": "proto", ".thrift": "thrift", ".capnp": "capnp", ".prisma": "prisma",
    ".smithy": "smithy", ".rego": "rego", ".sparql": "sparql", ".twig": "twig",
    ".erb": "embeddedtemplate", ".ejs": "embeddedtemplate", ".heex": "heex",
    # build and configuration files
    ".json": "json", ".jsonc": "json", ".json5": "json", ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml", ".xml": "xml", ".xsd": "xml", ".ini": "ini", ".cfg": "ini",
    ".properties": "properties", ".hcl": "hcl", ".tf": "terraform", ".tfvars": "terraform",
    ".bicep": "bicep", ".cmake": "cmake", ".mk": "make", ".mak": "make", ".ninja": "ninja",
    ".gn": "gn", ".gni": "gn", ".jsonnet": "jsonnet", ".libsonnet": "jsonnet", ".kdl": "kdl",
    ".ron": "ron", ".dockerfile": "dockerfile", ".bb": "bitbake", ".bbappend": "bitbake",
}

_FILE_NAMES: Mapping[str, str] = {
    "dockerfile": "dockerfile", "containerfile": "dockerfile", "makefile": "make",
    "gnumakefile": "make", "cmakelists.txt": "cmake", "rakefile": "ruby", "gemfile": "ruby",
    "vagrantfile": "ruby", "podfile": "ruby", "jenkinsfile": "groovy", "build": "starlark",
    "workspace": "starlark", "tiltfile": "starlark", "go.mod": "gomod", "meson.build": "meson",
    ".bashrc": "bash", ".bash_profile": "bash", ".profile": "bash", ".zshrc": "bash",
    ".vimrc": "vim", "kconfig": "kconfig",
}

# Variants named after the file they vary (Dockerfile.dev, Makefile.am): their extension is no language.
_FILE_NAME_PREFIXES: Mapping[str, str] = {
    "dockerfile.": "dockerfile", "containerfile.": "dockerfile", "makefile.": "make",
}

# Interpreters named on a shebang line; versions are stripped first (python3.11 -> python).
_INTERPRETERS: Mapping[str, str] = {
    "python": "python", "pypy": "python", "sh": "bash", "bash": "bash", "dash": "bash",
    "ksh": "bash", "zsh": "bash", "ash": "bash", "fish": "fish", "node": "javascript",
    "nodejs": "javascript", "deno": "typescript", "bun": "typescript", "ts-node": "typescript",
    "tsx": "typescript", "ruby": "ruby", "perl": "perl", "php": "php", "lua": "lua",
    "luajit": "lua", "rscript": "r", "julia": "julia", "elixir": "elixir", "escript": "erlang",
    "racket": "racket", "guile": "scheme", "sbcl": "commonlisp", "tclsh": "tcl",
    "wish": "tcl", "pwsh": "powershell", "groovy": "groovy", "make": "make",
}

_SHEBANG = re.compile(r"#!\s*(\S+)(.*)")
_CPP_MARKERS = re.compile(r"^\s*(class|namespace|template\s*<|using\s|public:|private:)|::", re.M)
_OBJC_MARKERS = re.compile(r"^\s*(@interface|@implementation|@protocol|#import)\b", re.M)


def detect_language(path: str, text: str | None = None) -> str | None:
    """Grammar name for a code file, or None when it is prose, data or unknown."""
    name = PurePath(path).name.lower()
    by_name = _FILE_NAMES.get(name)
    if by_name is not None:
        return by_name
    suffix = PurePath(name).suffix
    language = _EXTENSIONS.get(suffix)
    if language is not None:
        return _refine_ambiguous(suffix, language, text)
    by_prefix = next((lang for prefix, lang in _FILE_NAME_PREFIXES.items() if name.startswith(prefix)), None)
    if by_prefix is not None:
        return by_prefix
    if suffix and not suffix[1:].isdigit():
        return None  # an extension we don't treat as code (.md, .txt, .csv, .pdf, ...)
    # Extension-less (or "script.1"): scripts announce themselves on the first line.
    return _sniff_content(text) if text else None


def _refine_ambiguous(suffix: str, language: str, text: str | None) -> str:
    """Pick between grammars sharing an extension (.h: C or C++, .m: Objective-C or MATLAB)."""
    if text is None:
        return language
    head = text[:20_000]
    if suffix == ".h" and _CPP_MARKERS.search(head):
        return "cpp"
    if suffix == ".m" and not _OBJC_MARKERS.search(head):
        return "matlab"
    return language


def _sniff_content(text: str) -> str | None:
    first_line = text[:300].split("\n", 1)[0]
    match = _SHEBANG.match(first_line)
    if match:
        program, rest = match.groups()
        interpreter = PurePath(program).name
        if interpreter == "env":
            # "/usr/bin/env -S node --flag": the first word that isn't an option
            words = [word for word in rest.split() if not word.startswith("-") and "=" not in word]
            interpreter = words[0] if words else ""
        return _INTERPRETERS.get(re.sub(r"[\d.]+$", "", interpreter.lower()))
    if first_line.lstrip().startswith("<?php"):
        return "php"
    return None


# --- language names a user may type (rag search --lang, the MCP search tool) -------------

# Languages of chunks no grammar names: prose, documents and plain-text data.
_PROSE_LANGUAGES = ("markdown", "text", "pdf", "docx", "csv", "log", "rst")
# Common names that are neither a language nor one of its file extensions.
_ALIASES: Mapping[str, str] = {
    "golang": "go", "md": "markdown", "txt": "text", "shell": "bash", "sh": "bash", "c#": "csharp",
    "cs": "csharp", "f#": "fsharp", "objective-c": "objc", "node": "javascript", "yml": "yaml",
}


@lru_cache(maxsize=1)
def language_names() -> frozenset[str]:
    """Every language a chunk can carry."""
    return frozenset([*_EXTENSIONS.values(), *_FILE_NAMES.values(), *_INTERPRETERS.values(),
                      *_PROSE_LANGUAGES])


def language_name(given: str) -> str | None:
    """The language ``given`` names, case-insensitive: a language (``typescript``), an alias
    (``golang``) or a file extension (``ts``, ``py``, ``c++``); None for none of them."""
    key = given.strip().lower()
    if key in language_names():
        return key
    return _ALIASES.get(key) or _EXTENSIONS.get("." + key.removeprefix("."))
