"""The Confluence client and converter against a fake Confluence on 127.0.0.1 (both flavors):
listing with pagination, CQL, retries on 429/503 within the deadline, 401 naming the
variables, restricted pages, secrets kept out of messages, and the Markdown of every
fixture page against its golden file (regenerate with ``OVERWRITE_GOLDEN=1``)."""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fake_confluence import API_TOKEN, PAT, FakeConfluence, sample_site

from rag.errors import FileUnreadableError, SourceError
from rag.sources.confluence.client import ConfluenceClient, PageBody, flavor_of
from rag.sources.confluence.pages import page_markdown, page_path

GOLDEN = Path(__file__).parent / "confluence_golden"


_opened: list[ConfluenceClient] = []


@pytest.fixture(params=["cloud", "server"])
def site(request: pytest.FixtureRequest) -> Iterator[FakeConfluence]:
    fake = sample_site(request.param).start()
    yield fake
    while _opened:
        _opened.pop().close()
    fake.stop()


def client(fake: FakeConfluence, environ: dict[str, str] | None = None, **kw: object) -> ConfluenceClient:
    made = ConfluenceClient(fake.base_url, fake.flavor, environ=fake.environ() if environ is None else environ,
                            **kw)  # type: ignore[arg-type]
    _opened.append(made)
    return made


@pytest.mark.parametrize("page_id", sorted(sample_site("cloud").pages))
def test_every_fixture_page_converts_to_its_golden_markdown(page_id: str) -> None:
    page = sample_site("cloud").pages[page_id]
    from rag.sources.confluence.client import PageRef

    ref = PageRef(page.id, page.title, page.space, page.version, page.modified)
    markdown = page_markdown(page.title, PageBody(page.body, 1, "", "", ""))
    golden = GOLDEN / f"{page_path(ref).replace('/', '_')}.md"
    if os.environ.get("OVERWRITE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(markdown, encoding="utf-8")
    assert markdown == golden.read_text(encoding="utf-8"), (
        "OVERWRITE_GOLDEN=1 pytest tests/sources/test_sources_confluence.py and review the diff")


def test_the_flavor_is_told_by_the_base_url_unless_given() -> None:
    assert flavor_of("https://acme.atlassian.net/wiki") == "cloud"
    assert flavor_of("https://wiki.acme.com") == "server"
    assert flavor_of("https://acme.atlassian.net/wiki", "server") == "server"
    with pytest.raises(SourceError, match="use cloud or server"):
        flavor_of("https://wiki.acme.com", "datacenter")


def test_listing_follows_every_page_of_the_answer(site: FakeConfluence) -> None:
    pages = list(client(site).pages(("ENG", "OPS"), None))
    assert [p.id for p in pages] == ["100", "101", "102", "103", "104", "105", "106", "200", "201"]
    listing_requests = [r for r in site.requests if "/pages" in r or "/rest/api/content?" in r]
    assert len(listing_requests) == 4 + 1  # ENG: 7 pages, 2 a page; OPS: 2
    deploy = pages[2]
    assert (deploy.title, deploy.space, deploy.version, deploy.parent_id) == (
        "Deploy the billing service", "ENG", 1, "101")
    assert site.body_requests == 0  # listing reads no body


def test_cql_chooses_pages_within_the_spaces(site: FakeConfluence) -> None:
    pages = list(client(site).pages(("ENG",), 'label = "runbook"'))
    assert [p.id for p in pages] == ["102", "103"]
    assert 'space in ("ENG") AND type = page AND (label = "runbook")' in "".join(
        __import__("urllib.parse").parse.unquote_plus(r) for r in site.requests)


def test_429_and_503_are_retried_after_what_retry_after_says(site: FakeConfluence) -> None:
    waits: list[float] = []
    site.failures = [(429, {"Retry-After": "1"}), (503, {"Retry-After": "2"})]
    pages = list(client(site, sleep=waits.append).pages(("OPS",), None))
    assert [p.id for p in pages] == ["200", "201"] and waits == [1.0, 2.0]


def test_a_wait_beyond_the_deadline_fails_the_request_within_it(site: FakeConfluence) -> None:
    site.failures = [(429, {"Retry-After": "30"})]
    with pytest.raises(SourceError, match="deadline"):
        list(client(site, timeout=5, sleep=lambda s: None).pages(("OPS",), None))


def test_401_says_in_one_line_which_variables_to_set(site: FakeConfluence) -> None:
    wrong = ({"CONFLUENCE_EMAIL": "x@example.com", "CONFLUENCE_API_TOKEN": "wrong-token-1234"}
             if site.flavor == "cloud" else {"CONFLUENCE_TOKEN": "wrong-token-1234"})
    for environ in ({}, wrong):
        with pytest.raises(SourceError) as caught:
            list(client(site, environ).pages(("ENG",), None))
        message = str(caught.value)
        assert "\n" not in message and "HTTP 401" in message and "wrong-token-1234" not in message
        needed = "CONFLUENCE_EMAIL and CONFLUENCE_API_TOKEN" if site.flavor == "cloud" else "CONFLUENCE_TOKEN"
        assert f"set {needed}" in message


def test_an_unknown_space_is_named(site: FakeConfluence) -> None:
    with pytest.raises(SourceError, match="NOPE"):
        list(client(site).pages(("NOPE",), None))


def test_a_restricted_page_is_its_own_error_and_restrictions_come_with_a_body(site: FakeConfluence) -> None:
    api = client(site)
    pages = {p.id: p for p in api.pages(("ENG",), None)}
    with pytest.raises(FileUnreadableError, match=r"page 104 .*restricted"):
        api.body(pages["104"])
    body = api.body(pages["102"])
    assert body.restrictions == {"users": ["alice"], "groups": ["billing-team"]}
    assert "<ac:structured-macro" in body.storage and api.body_requests == 2


def test_secrets_never_reach_a_message(site: FakeConfluence) -> None:
    api = client(site, sleep=lambda s: None)
    page = next(p for p in api.pages(("OPS",), None) if p.id == "200")
    secret = API_TOKEN if site.flavor == "cloud" else PAT
    site.failures = [(500, {})] * 6
    site.echo_authorization = True  # a server whose error text repeats the request's header
    with pytest.raises(FileUnreadableError) as caught:
        api.body(page)
    assert "giving up after 6 attempts" in str(caught.value)
    assert secret not in str(caught.value) and "Basic ZGV2" not in str(caught.value)
