"""PDF chunking: pages, merged small pages, split long pages, broken and
encrypted files. The PDFs are written here, by hand, with Helvetica text."""

from io import BytesIO
from itertools import pairwise

import pytest
from fixtures.docs.invariants import assert_chunk_invariants
from pypdf import PdfReader, PdfWriter

from rag.chunking.pdf import PAGE_SEPARATOR, chunk_pdf
from rag.dispatcher import chunk_bytes


def make_pdf(pages: list[list[str]]) -> bytes:
    """A PDF whose page i shows the lines pages[i], one text line each."""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>"
        % (b" ".join(b"%d 0 R" % (4 + 2 * i) for i in range(len(pages))), len(pages)),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for index, lines in enumerate(pages):
        objects.append(
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            b"/Resources << /Font << /F1 3 0 R >> >> /Contents %d 0 R >>" % (5 + 2 * index)
        )
        shown = b"".join(b"(%s) Tj T*\n" % _pdf_string(line) for line in lines)
        stream = b"BT /F1 10 Tf 12 TL 40 760 Td\n" + shown + b"ET"
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(out)


def _pdf_string(line: str) -> bytes:
    return line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)").encode("latin-1")


def encrypted(pdf: bytes, user_password: str) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(BytesIO(pdf)))
    writer.encrypt(user_password, owner_password="owner", algorithm="AES-128")
    out = BytesIO()
    writer.write(out)
    return out.getvalue()


def page_of(words: int, tag: str) -> list[str]:
    """Lines holding ``words`` words (and tokens) in all, ten a line."""
    return [
        " ".join(f"{tag}{i}" for i in range(start, min(words, start + 10)))
        for start in range(0, words, 10)
    ]


def pages_and_lines(
    pdf: bytes, max_tokens: int = 100, overlap: int = 10
) -> list[tuple[int, int, int, int]]:
    """(pageStart, pageEnd, startLine, endLine) of each chunk, invariants checked."""
    text, chunks, warnings = chunk_pdf(pdf, "doc.pdf", max_tokens=max_tokens, overlap=overlap)
    assert warnings == []
    assert_chunk_invariants(text, chunks, max_tokens, unsplit_line_tokens=10)
    keys = ("pageStart", "pageEnd", "startLine", "endLine")
    return [tuple(c.metadata[key] for key in keys) for c in chunks]


def test_a_chunk_per_page_and_lines_into_the_stored_text() -> None:
    pdf = make_pdf([page_of(60, "a"), page_of(40, "b"), page_of(30, "c")])
    text, chunks, _ = chunk_pdf(pdf, "doc.pdf", max_tokens=100, overlap=10)
    assert text.count(PAGE_SEPARATOR) == 2
    assert pages_and_lines(pdf) == [(1, 1, 1, 6), (2, 2, 8, 11), (3, 3, 13, 15)]
    assert chunks[1].content == "\n".join(page_of(40, "b")) + "\n"
    assert chunks[0].metadata["sourceType"] == chunks[0].metadata["language"] == "pdf"


def test_small_pages_are_merged_while_they_fit() -> None:
    slides = [page_of(10, f"s{n}x") for n in range(6)]  # 10 tokens a slide, bound 100
    assert [pages[:2] for pages in pages_and_lines(make_pdf(slides))] == [(1, 3), (4, 6)]


def test_long_page_is_split_with_overlap() -> None:
    pdf = make_pdf([page_of(30, "a"), page_of(400, "b"), page_of(30, "c")])
    rows = pages_and_lines(pdf, max_tokens=100, overlap=20)
    long_page = [row for row in rows if row[:2] == (2, 2)]
    assert len(long_page) >= 5
    for before, after in pairwise(long_page):
        assert after[2] == before[3] - 1  # two 10-token lines fit an overlap of 20
    assert rows[0][:2] == (1, 1) and rows[-1][:2] == (3, 3)


def test_pages_without_text_are_skipped() -> None:
    pdf = make_pdf([[], page_of(50, "a"), [], [], page_of(50, "b")])
    assert [row[:2] for row in pages_and_lines(pdf)] == [(2, 2), (5, 5)]


def test_pdf_without_any_text_warns() -> None:
    result = chunk_bytes(make_pdf([[], []]), "scan.pdf")
    assert result.chunks == [] and result.error is None
    assert result.warnings == ["no extractable text in PDF (scanned images?)"]


def test_pdf_encrypted_only_against_editing_is_read() -> None:
    result = chunk_bytes(encrypted(make_pdf([page_of(20, "a")]), ""), "locked.pdf")
    assert result.error is None
    assert [c.metadata["pageStart"] for c in result.chunks] == [1]


@pytest.mark.parametrize(
    ("data", "error_start"),
    [
        (encrypted(make_pdf([["secret"]]), "password"), "encrypted PDF"),
        (b"", "unreadable PDF"),
        (b"%PDF-1.4\nnot really", "unreadable PDF"),
        (make_pdf([["half a file"]])[:200], "unreadable PDF"),
        (b"\x00\x01\x02 binary junk", "unreadable PDF"),
    ],
)
def test_unreadable_pdfs_give_an_error_not_an_exception(data: bytes, error_start: str) -> None:
    result = chunk_bytes(data, "bad.pdf")
    assert result.chunks == []
    assert result.error is not None and result.error.startswith(error_start), result.error


def test_chunk_bytes_routes_pdf() -> None:
    result = chunk_bytes(make_pdf([page_of(20, "a")]), "Docs/Report.PDF")
    assert result.error is None and result.warnings == []
    assert result.text == "\n".join(page_of(20, "a")) + "\n"
    assert result.chunks[0].metadata["path"] == "Docs/Report.PDF"
