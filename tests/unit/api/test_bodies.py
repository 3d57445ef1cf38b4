"""Request bodies are read whole or refused: ``api.bodies`` with Content-Length and chunked."""
import io

import pytest
from flask import Flask
from werkzeug.wsgi import LimitedStream

from api.bodies import read_body, read_form, read_limited
from plugin.errors import ContentTooLarge, UnsupportedContentType


@pytest.mark.parametrize("size, chunk", [(0, 4), (9, 4), (10, 4), (10, 100)])
def test_read_limited_returns_a_body_within_the_limit_whole(size, chunk):
    class Trickle(io.RawIOBase):  # a stream that hands out at most `chunk` bytes per read
        def __init__(self, data: bytes) -> None:
            self.data = data

        def readable(self) -> bool:
            return True

        def read(self, n: int = -1) -> bytes:
            out, self.data = self.data[:min(n, chunk)], self.data[min(n, chunk):]
            return out

    assert read_limited(Trickle(b"x" * size), 10, "LIMIT") == b"x" * size


def test_read_limited_refuses_one_byte_over_and_names_the_limit():
    stream = io.BytesIO(b"x" * 11 + b"rest")
    with pytest.raises(ContentTooLarge, match=r"10 bytes \(LIMIT\)") as err:
        read_limited(stream, 10, "LIMIT")
    assert err.value.status == 413
    assert stream.tell() == 11  # never more than limit + 1 bytes read


def test_werkzeugs_max_stream_ends_quietly_at_the_cap_and_read_limited_sees_past_it():
    """The cause: a chunked body's stream is capped at max_content_length and readall() stops
    there without an error, so 20 bytes read as 11. One byte past our limit reveals it."""
    assert LimitedStream(io.BytesIO(b"x" * 20), 11, is_max=True).readall() == b"x" * 11
    with pytest.raises(ContentTooLarge):
        read_limited(LimitedStream(io.BytesIO(b"x" * 20), 11, is_max=True), 10, "LIMIT")


def _request(app: Flask, body: bytes, *, chunked: bool):
    if chunked:  # what gunicorn hands the app for Transfer-Encoding: chunked
        return app.test_request_context("/", method="POST", input_stream=io.BytesIO(body),
                                        headers={"Transfer-Encoding": "chunked"},
                                        environ_overrides={"wsgi.input_terminated": True})
    return app.test_request_context("/", method="POST", data=body)


@pytest.mark.parametrize("chunked", [False, True])
def test_read_body_whole_or_413_with_content_length_and_chunked(chunked):
    app = Flask(__name__)
    app.config["MAX_CONTENT_LENGTH"] = 1000  # the app-wide cap is larger: the route's limit decides
    for size in (0, 50, 100):
        with _request(app, b"y" * size, chunked=chunked):
            assert read_body(100, "FACTSIEVE_X") == b"y" * size
    with _request(app, b"y" * 101, chunked=chunked), pytest.raises(ContentTooLarge, match="FACTSIEVE_X"):
        read_body(100, "FACTSIEVE_X")
    with _request(app, b"y" * 5000, chunked=chunked), pytest.raises(ContentTooLarge):
        read_body(100, "FACTSIEVE_X")


def test_read_form_decodes_fields_within_the_limit():
    app = Flask(__name__)
    form = "application/x-www-form-urlencoded"
    with app.test_request_context("/", method="POST", data=b"a=1&b=&a=%3Cx%3E&c=%FF", content_type=form):
        got = read_form(100, "FACTSIEVE_X")
        assert got.getlist("a") == ["1", "<x>"] and got["b"] == "" and got["c"] == "\ufffd"
    with app.test_request_context("/", method="POST"):
        assert not read_form(100, "FACTSIEVE_X")
    with app.test_request_context("/", method="POST", data=b"a=" + b"y" * 200, content_type=form), \
            pytest.raises(ContentTooLarge, match="FACTSIEVE_X"):
        read_form(100, "FACTSIEVE_X")
    with app.test_request_context("/", method="POST", data=b"{}", content_type="application/json"), \
            pytest.raises(UnsupportedContentType, match="x-www-form-urlencoded"):
        read_form(100, "FACTSIEVE_X")


def test_no_other_module_reads_a_request_body():
    """The class of defect: a body read some other way skips the limit check. Only api/bodies.py
    may touch the request's body."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    readers = re.compile(r"request\.(get_data|stream|data|json|get_json|form|files|values|input_stream)\b"
                         r"|wsgi\.input\b")
    offenders = [f"{path.relative_to(root)}:{n}" for top in ("api", "plugin", "workers", "cli")
                 for path in sorted((root / top).rglob("*.py")) if path != root / "api" / "bodies.py"
                 for n, line in enumerate(path.read_text().splitlines(), 1) if readers.search(line)]
    assert offenders == []


# -- parse limits are client errors (issue 35, items 2 and 5) ---------------------------------
def test_more_form_fields_than_the_limit_is_a_413_not_a_bare_value_error():
    from api.bodies import MAX_FORM_FIELDS, parse_form

    assert len(parse_form(b"&".join([b"a=1"] * MAX_FORM_FIELDS))) == 1
    with pytest.raises(ContentTooLarge, match="10,000 fields") as err:
        parse_form(b"&".join([b"a=1"] * (MAX_FORM_FIELDS + 1)))
    assert err.value.status == 413


@pytest.mark.parametrize("raw", [
    b"[" * 5000 + b"]" * 5000,                     # RecursionError in json.loads
    b'{"post_id": "\\ud800", "action": "reject"}',  # a lone surrogate: UnicodeEncodeError later
    b'{"x": NaN}', b"[1,", b"\xff",
])
def test_hostile_json_is_a_400(raw):
    from api.bodies import parse_json
    from plugin.errors import BadInput

    with pytest.raises(BadInput, match="not valid JSON") as err:
        parse_json(raw)
    assert err.value.status == 400


def test_parse_json_reads_ordinary_json_and_paired_surrogates():
    from api.bodies import parse_json

    assert parse_json(b'[{"post_id": "\\ud83d\\ude00", "n": 1.5}]') == [{"post_id": "\U0001F600", "n": 1.5}]
