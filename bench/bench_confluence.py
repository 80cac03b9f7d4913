"""Confluence benchmark (`make bench-confluence`): a fake site of many pages, indexed twice.

A fake Confluence (tests/fake_confluence.py: a real HTTP server on 127.0.0.1, Cloud REST v2
shapes, 250 pages a listing page) serves ``--pages`` pages in two spaces, each a realistic
body (headings, paragraphs, a list, a table, a code macro, an info panel). Then:

  - the first index (keyword-only, provider none): seconds, pages/s, body requests;
  - ``--changed`` pages edited and ``--deleted`` deleted, and a second index: seconds, the
    body requests it made (goal: exactly the changed pages) and the listing requests.

Uses RAG_DATABASE_URL when set, else its own embedded server under .bench/home-confluence.

    .venv/bin/python bench/bench_confluence.py [--pages 2000] [--changed 20] [--deleted 5]
"""

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_confluence import FakeConfluence, Page  # noqa: E402
from machine import speed_line  # noqa: E402

BODY = """<h1>{title}</h1>
<p>This runbook explains how the <strong>{service}</strong> service is deployed, monitored and
rolled back. Owners: team {team}. Read it before your first on-call shift.</p>
<h2>Deploying</h2>
<ol><li>Build the image with <code>make image SERVICE={service}</code></li>
<li>Roll out to the canary, then to everyone</li><li>Watch the error rate for 15 minutes</li></ol>
<ac:structured-macro ac:name="code"><ac:parameter ac:name="language">bash</ac:parameter>
<ac:plain-text-body><![CDATA[kubectl -n {team} rollout status deploy/{service}
kubectl -n {team} logs deploy/{service} --since=15m | grep -c ERROR]]></ac:plain-text-body></ac:structured-macro>
<ac:structured-macro ac:name="info"><ac:rich-text-body><p>Deploys of {service} stop at 16:00 on Fridays.</p>
</ac:rich-text-body></ac:structured-macro>
<h2>Environments</h2>
<table><tbody><tr><th>Environment</th><th>URL</th><th>Alerts</th></tr>
<tr><td>staging</td><td>https://{service}.staging.example.com</td><td>#{team}-staging</td></tr>
<tr><td>production</td><td>https://{service}.example.com</td><td>#{team}-alerts</td></tr></tbody></table>
<h2>Rolling back</h2>
<p>Page {number}: run <code>make rollback SERVICE={service}</code>; the previous image is kept for
seven days. If the database schema changed, ask the owners before rolling back.</p>
"""


def site(pages: int) -> FakeConfluence:
    fake = FakeConfluence("cloud", page_size=250)
    fake.add_space("ENG", "Engineering")
    fake.add_space("OPS", "Operations")
    for number in range(pages):
        space = "ENG" if number % 2 == 0 else "OPS"
        page_id = str(100_000 + number)
        parent = str(100_000 + number - 2) if number >= 2 and number % 10 else None
        service, team = f"service-{number}", f"team-{number % 17}"
        fake.add(Page(page_id, f"Runbook {number}: {service}", space,
                      BODY.format(title=f"Runbook for {service}", service=service, team=team, number=number),
                      parent=parent))
    return fake


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--changed", type=int, default=20)
    parser.add_argument("--deleted", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("RAG_HOME", str(ROOT / ".bench" / "home-confluence"))

    from rag.config import ConfluencePages, LoadedConfig, RagConfig, SourceSpec
    from rag.service import RagService

    fake = site(args.pages).start()
    os.environ.update(fake.environ())
    spec = SourceSpec("bench-wiki", "confluence", fake.base_url,
                      pages=ConfluencePages(("ENG", "OPS"), flavor="cloud"))
    config = RagConfig.model_validate({"embeddings": {"provider": "none"}})
    print(speed_line())
    with RagService(loaded=LoadedConfig(config, None, "bench")) as service:
        service.with_db(lambda conn: conn.execute("SELECT rag.remove_source('bench-wiki')")
                        if conn.execute("SELECT 1 FROM rag.sources WHERE name = 'bench-wiki'").fetchone() else None)
        started = time.monotonic()
        first = service.index(spec)
        seconds = time.monotonic() - started
        print(f"first index: {first.new:,} pages, {first.chunks_total:,} chunks in {seconds:.1f} s "
              f"= {first.new / seconds:.0f} pages/s; {fake.body_requests:,} body requests, "
              f"{len(fake.requests) - fake.body_requests:,} other requests")

        ids = sorted(fake.pages)
        for page_id in ids[: args.changed]:
            fake.pages[page_id].edit(fake.pages[page_id].body.replace("seven days", "ten days"))
        for page_id in ids[-args.deleted:]:
            del fake.pages[page_id]
        fake.body_requests, fake.requests = 0, []
        started = time.monotonic()
        second = service.index(spec)
        seconds = time.monotonic() - started
        listing = len(fake.requests) - fake.body_requests
        print(f"second index ({args.changed} changed, {args.deleted} deleted): {seconds:.2f} s; "
              f"changed {second.changed}, deleted {second.deleted}, unchanged {second.unchanged:,}; "
              f"body requests {fake.body_requests} (goal: {args.changed}), listing requests {listing}")
        service.with_db(lambda conn: conn.execute("SELECT rag.remove_source('bench-wiki')"))
    fake.stop()
    if fake.body_requests != args.changed:
        sys.exit(f"the second run fetched {fake.body_requests} bodies, not only the {args.changed} changed pages")


if __name__ == "__main__":
    main()
