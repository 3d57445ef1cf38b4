"""Request and response models of the HTTP API (pydantic v2); ``/openapi.json`` is built from them.

Request models are strict (a JSON string is not an integer) and forbid unknown fields, so a typo
in a field name is a 422 naming the field instead of a silently ignored option. Response models
allow extra fields: the matcher may add to a match without breaking clients or the spec.
"""
from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import (BaseModel, BeforeValidator, ConfigDict, Field, create_model, field_validator,
                      model_serializer, model_validator)

from plugin.errors import BadInput
from plugin.image.model import ImageAnalysis
from plugin.search.request import MatchRequest
from plugin.service.jobs import JobKind, JobStatus
from plugin.models import (LANG_CODE, MAX_K, MAX_TEXT_CHARS, MAX_WITHIN_DAYS, STORED_FIELDS, Mode,
                           no_control_chars)
from plugin.events import Event
from plugin.service.webhooks import DeliveryStatus
from plugin.review.model import Action, Origin, ReviewStatus

LangCode = Annotated[str, Field(pattern=LANG_CODE, description="ISO 639-1 code, e.g. 'en'")]
Domain = Annotated[str, Field(min_length=1, max_length=253)]


def _integral(v: object) -> object:
    """JSON Schema counts 26.0 as an integer; strict pydantic would not."""
    return int(v) if isinstance(v, float) and v.is_integer() else v


Int = Annotated[int, BeforeValidator(_integral)]

#: at least one character that is not white space, by Python's ``str.strip`` (which also strips
#: the separators U+001C..U+001F that Unicode's White_Space, and so ``\s``, leaves out)
NOT_BLANK = r"[^\s\x1c-\x1f]"
#: What ``no_control_chars`` enforces, as the schema says it: no C0/C1 control character or DEL,
#: and (for ids) at least one character that is not blank.
PRINTABLE = r"^[^\x00-\x1f\x7f-\x9f]*$"
PRINTABLE_ID = r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"
PRINTABLE_URL = r"^https?://[^\x00-\x1f\x7f-\x9f]*$"
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=NOT_BLANK)]
#: A post's image: base64 (standard or URL-safe, a data: URL too) up to FACTSIEVE_IMAGE_MAX_BYTES
#: decoded, or an http(s) URL fetched through the guarded outbound client (``plugin.image.inputs``)
ImageB64 = Annotated[str, Field(min_length=1, description=(
    "the image (JPEG, PNG, WebP, GIF or BMP) in base64, standard or URL-safe, optionally a "
    "data: URL; at most FACTSIEVE_IMAGE_MAX_BYTES decoded. Its text is read (OCR) and matched, "
    "and its perceptual hash is compared with fact-checks' images"))]
ImageUrl = Annotated[str, Field(max_length=2048, pattern=r"^https?://", json_schema_extra={
    "pattern": PRINTABLE_URL}, description=(
    "an http(s) URL of the image, fetched by FactSieve (public addresses only, no redirects, "
    "at most FACTSIEVE_IMAGE_MAX_BYTES); not with image"))]
#: ``text`` or ``image`` or ``image_url``, and not both images (``_image_rule``)
_TEXT_OR_IMAGE = {"anyOf": [{"required": ["text"]}, {"required": ["image"]}, {"required": ["image_url"]}],
                  "not": {"required": ["image", "image_url"]}}


class Request(BaseModel):
    model_config = ConfigDict(strict=True, extra="forbid")


class Response(BaseModel):
    model_config = ConfigDict(extra="allow")


def _not_blank(v: object) -> object:
    """Runs before the pattern check so a blank text gets a readable message."""
    if isinstance(v, str) and not v.strip():
        raise ValueError("must not be blank")
    return v


# -- problems ---------------------------------------------------------------------------------
class FieldError(Response):
    field: str
    message: str
    type: str


class Problem(Response):
    """RFC 9457 problem details; ``errors`` lists offending fields of an invalid request."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    errors: list[FieldError] | None = None


# -- health -------------------------------------------------------------------------------------
class Health(Response):
    status: str


class Ready(Response):
    status: str
    checks: dict[str, bool]


# -- matching -----------------------------------------------------------------------------------
def _text_or_image(text_field: str) -> Any:
    """A validator of ``text_field`` (declared after ``image`` and ``image_url``, with
    ``validate_default``): a post gives a text or an image, and an image once. The rules are
    ``MatchRequest``'s and ``plugin.image.inputs``'; here they are checked before the image is
    read, and reported on the text field."""
    def check(cls: Any, v: Any, info: Any) -> Any:
        from plugin.image.inputs import check_one, given

        try:
            check_one(info.data)
        except BadInput as exc:
            raise ValueError(exc.detail) from None
        if v is None and not given(info.data):
            raise ValueError(f"give {text_field}, image or image_url")
        return v
    return field_validator(text_field, mode="after")(check)


#: stands for an image not read yet, where only whether one was given counts
IMAGE_GIVEN = ImageAnalysis(sha256="", width=0, height=0, format="", pdq=None)


class MatchIn(Request):
    """A match request as JSON. The fields declare their own limits; the rules across fields
    (within_days needs a date, declared by ``if``/``then``; text or an image) are
    ``MatchRequest``'s, checked by ``MatchRequest.from_mapping`` like every other way in."""

    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"within_days": {"type": "integer"}}, "required": ["within_days"]},
        "then": {"properties": {"date": {"type": "string"}}, "required": ["date"]},
        **_TEXT_OR_IMAGE})

    image: ImageB64 | None = None
    image_url: ImageUrl | None = None
    # after the image fields: its validator reads them
    text: Text | None = Field(default=None, validate_default=True,
                              description="the post or claim (with an image: its caption)")
    lang: LangCode | None = Field(default=None, description="detected when omitted")
    date: dt.date | None = Field(default=None, description="only fact-checks published on or before it")
    # the bounds inside the Annotated: on ``Int | None`` pydantic wrote them as "ge"/"le", which
    # no JSON Schema reader knows (schemathesis sent -1 and 40000 as schema-valid)
    within_days: Annotated[int, Field(ge=0, le=MAX_WITHIN_DAYS), BeforeValidator(_integral)] | None = Field(
        default=None, description="with date: only fact-checks from this many days before")
    mode: Mode = Mode.AUTO
    k: Int = Field(default=10, ge=1, le=MAX_K)
    config: str | None = Field(default=None, min_length=1, max_length=100,
                               description="named retrieval configuration")
    rerank: bool = Field(default=False, description="rerank with the configuration's cross-encoder, "
                                                    "when one is configured")
    rerank_budget_ms: float | None = Field(default=None, gt=0, le=60000, allow_inf_nan=False, description=(
        "the cross-encoder's time budget (default FACTSIEVE_RERANK_BUDGET_MS, 150): only the "
        "pairs that fit are reranked, none when fewer than two fit; `notes` says which"))
    allow: list[Domain] = Field(default_factory=list, max_length=50)
    deny: list[Domain] = Field(default_factory=list, max_length=50)

    _text = field_validator("text", mode="before")(_not_blank)
    _image = _text_or_image("text")
    _printable = field_validator("image_url")(no_control_chars)

    @model_validator(mode="after")
    def _request(self) -> MatchIn:
        data = self.model_dump()
        try:
            MatchRequest.from_mapping(data, image=IMAGE_GIVEN if data["image"] or data["image_url"] else None)
        except BadInput as exc:
            raise ValueError(exc.detail) from None
        return self

    def post(self) -> dict[str, Any]:
        """The request as ``MatchRequest.from_mapping`` and the learning steps read it: without
        the image's bytes."""
        return self.model_dump(exclude={"image"})


#: A stored fact-check's fields (``plugin.models.STORED_FIELDS``), all optional strings.
FactCheckFields = create_model("FactCheckFields", __base__=Response,
                               **{name: (str | None, None) for name in STORED_FIELDS})


class MemoryOut(Response):
    """What put a match first: the earlier post whose desk decision did (``plugin.learn.memory``),
    or the claim the desk answered (``plugin.claims.answer``)."""

    post_id: str | None = None
    similarity: float | None = Field(default=None, description="cosine similarity of the two posts (1 for the same post)")
    decision_id: str | None = None
    claim_id: str | None = Field(default=None, description="`confirmed-for-claim`: the post's claim")


class MatchSignal(Response):
    signal: str = Field(description="`same-image`, `ocr` or `text`")
    distance: int | None = Field(default=None, description="same-image: the PDQ Hamming distance "
                                                           "(absent for the other signals)")

    @model_serializer(mode="wrap")
    def _without_null(self, handler: Any) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if not (k == "distance" and v is None)}


class OcrOut(Response):
    text: str
    lang: str | None = None
    model: str
    confidence: float
    # and "pass": which pass was kept (``image``, ``white``, ``bright``)
    text_share: float
    budget_spent: bool = Field(default=False, description=(
        "the reading stopped at its time budget (FACTSIEVE_OCR_API_BUDGET_S here, "
        "FACTSIEVE_OCR_BUDGET_S in jobs): `text` is what the passes that finished read, if any"))


class ImageOut(Response):
    """The post's image as read: its identity, its perceptual hash and the OCR text matched."""

    sha256: str
    width: int
    height: int
    format: str
    pdq: dict[str, Any] | None = None
    text_heavy: bool = False
    ocr: OcrOut | None = None
    timings_ms: dict[str, float] = Field(default_factory=dict)


class MatchItem(FactCheckFields):
    id: str
    score: float
    rank: int
    confidence: float | None = Field(default=None, description=(
        "calibrated probability that this fact-check addresses the post (the configuration's "
        "confidence model; null when it has none, or when OpenSearch fused the sub-queries)"))
    explain: dict[str, Any] = Field(default_factory=dict)
    reason: str | None = Field(default=None, description=(
        "why the match is where it is, when not only retrieval put it there: `confirmed-by-desk`, "
        "`confirmed-for-claim`"))
    memory: MemoryOut | None = None
    signals: list[MatchSignal] = Field(default_factory=list, description=(
        "what found this match, strongest first: `same-image` (the post's image within `distance` "
        "bits of the fact-check's), `ocr` (the text read from the post's image), `text` (the "
        "post's own text)"))


class MatchOut(Response):
    lang: str | None
    config: str
    took_ms: float
    reranked: bool = False
    notes: list[str] = Field(default_factory=list)
    matches: list[MatchItem]
    image: ImageOut | None = Field(default=None, description="the post's image as read, when it had one")


# -- fact-checks --------------------------------------------------------------------------------
class Reject(Response):
    record: str
    reason: str


class IngestReport(Response):
    indexed: int
    updated: int
    rejected: int
    rejects: list[Reject]


class FactCheckOut(FactCheckFields):
    id: str
    claim: str


class EvidenceReport(IngestReport):
    documents: int
    removed: int = 0


class FactCheckItem(BaseModel):
    """One fact-check as JSON: the canonical field names (the README lists the synonyms and the
    other formats); other fields are kept under ``extra``. Only documents the upload body."""

    model_config = ConfigDict(extra="allow")

    id: Annotated[str, Field(min_length=1, max_length=128, pattern=NOT_BLANK,
                             json_schema_extra={"pattern": PRINTABLE_ID})] | int | None = None
    claim: Text
    title: str | None = None
    url: Annotated[str, Field(pattern=r"^https?://[^/\s]", json_schema_extra={
        "pattern": r"^https?://[^/\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"})] | None = None
    publisher: str | None = None
    rating: str | None = None
    lang: Annotated[str, Field(pattern=r"^[A-Za-z]{2,3}([-_][A-Za-z0-9]{1,8})*$")] | None = None
    published_at: dt.date | None = None
    image_url: Annotated[str, Field(pattern=r"^https?://[^/\s]", description=(
        "the fact-check's image, fetched by the ingest job (a body with images is queued)"))] | None = None
    image_base64: Annotated[str, Field(description="the fact-check's image itself, base64")] | None = None


def _claimreview_type(schema: dict[str, Any]) -> None:
    schema["properties"]["@type"] = {"const": "ClaimReview"}
    schema["required"] = ["@type", *schema.get("required", [])]


class ClaimReviewIn(BaseModel):
    """A schema.org ClaimReview (JSON-LD); ``@graph`` documents and Google Fact Check Tools
    responses are read too."""

    model_config = ConfigDict(extra="allow", json_schema_extra=lambda schema: _claimreview_type(schema))

    claimReviewed: Text


# -- jobs -----------------------------------------------------------------------------------------
class JobAccepted(Response):
    job_id: str
    status: JobStatus
    status_url: str


class JobOut(Response):
    id: str
    kind: JobKind
    status: JobStatus
    created_at: str
    started_at: str | None = None
    finished_at: str | None = None
    attempts: int = 0
    ref: str | None = None
    result: dict[str, Any] | None = None
    error: Problem | None = None
    last_error: Problem | None = None
    retry_in_s: float | None = None


class PostOut(JobOut):
    decisions: list[Decision] = Field(default_factory=list,
                                      description="the review decisions on the post, oldest first")


class PostIn(Request):
    model_config = ConfigDict(json_schema_extra=_TEXT_OR_IMAGE)

    id: str = Field(min_length=1, max_length=512, pattern=NOT_BLANK,
                    json_schema_extra={"pattern": PRINTABLE_ID},
                    description="your id for the post; submissions are idempotent on it; "
                                "no control characters")
    image: ImageB64 | None = None
    image_url: ImageUrl | None = None
    # after the image fields: its validator reads them
    text: Text | None = Field(default=None, validate_default=True,
                              description="the post (with an image: its caption)")
    lang: LangCode | None = None
    date: dt.date | None = None
    url: Annotated[str, Field(max_length=2048, pattern=r"^https?://",
                              json_schema_extra={"pattern": PRINTABLE_URL})] | None = None
    source: str | None = Field(default=None, max_length=200)

    _text = field_validator("text", mode="before")(_not_blank)
    _image = _text_or_image("text")
    _id = field_validator("id", mode="before")(_not_blank)
    _printable = field_validator("id", "url", "image_url")(no_control_chars)


class PostAccepted(JobAccepted):
    post_id: str
    duplicate: bool


class VerifyIn(Request):
    model_config = ConfigDict(json_schema_extra={
        "anyOf": [{"required": ["claim"]}, {"required": ["image"]}, {"required": ["image_url"]}],
        "not": {"required": ["image", "image_url"]}})

    image: ImageB64 | None = None
    image_url: ImageUrl | None = None
    # after the image fields: its validator reads them
    claim: Text | None = Field(default=None, validate_default=True, description=(
        "the claim; with an image, the text read from it follows it (an image alone: its text is "
        "the claim)"))
    lang: LangCode | None = None
    date: dt.date | None = Field(default=None, description="the claim date: only evidence published "
                                 "before it is used, and it may not be in the future")
    config: str | None = Field(default=None, min_length=1, max_length=100,
                               description="named verification configuration: lookup, qa-loop, "
                                           "single-call, head or cited")
    exclude_urls: list[Annotated[str, Field(min_length=1, max_length=2048)]] = Field(
        default_factory=list, max_length=50, description="pages never used as evidence (e.g. the "
                                                         "claim's own fact-check article)")
    exclude_domains: list[Domain] = Field(default_factory=list, max_length=50)
    budget_s: float | None = Field(default=None, gt=0, le=3600,
                                   description="time budget of the evidence loop (configuration's when omitted)")

    _claim = field_validator("claim", mode="before")(_not_blank)
    _image = _text_or_image("claim")


class RerankIn(Request):
    text: Text
    lang: LangCode | None = None
    date: dt.date | None = None
    mode: Mode = Mode.AUTO
    k: Int = Field(default=10, ge=1, le=MAX_K)
    config: str | None = Field(default=None, min_length=1, max_length=100)

    _text = field_validator("text", mode="before")(_not_blank)


# -- webhooks ---------------------------------------------------------------------------------
class WebhookIn(Request):
    url: str = Field(min_length=1, max_length=2048, pattern=r"^https?://[^/?#\s]",
                     json_schema_extra={"pattern": r"^https?://[^/?#\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$"},
                     description="http(s); hosts resolving to non-public addresses are refused")
    secret: str | None = Field(default=None, min_length=16, max_length=256,
                               description="generated (and returned once) when omitted")
    events: list[Event] = Field(min_length=1, max_length=10)
    languages: list[LangCode] | None = Field(default=None, max_length=50)
    min_score: float | None = Field(default=None, ge=0, allow_inf_nan=False, description=(
        "deliver only when the best match's confidence (the calibrated probability that it "
        "addresses the post, 0-1) reaches this; under a configuration without a confidence "
        "model, its fused score"))

    @field_validator("url", mode="before")
    @classmethod
    def _http(cls, v: object) -> object:
        if isinstance(v, str) and not v.lower().startswith(("http://", "https://")):
            raise ValueError("must be an http or https URL")
        return no_control_chars(v)


class WebhookOut(Response):
    id: str
    url: str
    events: list[Event]
    languages: list[str] | None = None
    min_score: float | None = None
    created_at: str


class WebhookCreated(WebhookOut):
    secret: str = Field(description="HMAC-SHA256 signing secret; shown only now")


class WebhookList(Response):
    webhooks: list[WebhookOut]


class DeliveryAttempt(Response):
    n: int
    at: str
    status_code: int | None = None
    error: str | None = None
    duration_ms: float


class DeliveryOut(Response):
    id: str
    subscription_id: str
    event: Event
    ref: str
    url: str
    status: DeliveryStatus
    created_at: str
    updated_at: str | None = None
    next_attempt_in_s: float | None = None
    attempts: list[DeliveryAttempt]


class DeliveryList(Response):
    deliveries: list[DeliveryOut]


# -- review -------------------------------------------------------------------------------------
class DecisionIn(Request):
    """One decision (``POST /v1/review/decisions`` takes one or a list). Checked whole by
    ``plugin.review.desk.ReviewDesk.decide``; this model documents it."""

    post_id: str = Field(min_length=1, max_length=512)
    action: Action
    factcheck_id: str | None = Field(
        default=None, min_length=1, max_length=512,
        description="confirm: a candidate (default: the top one); reject: a candidate (default: "
                    "all); manual: any fact-check (required); the others take none")
    note: str | None = Field(default=None, description="at most FACTSIEVE_REVIEW_NOTE_MAX_CHARS "
                                                       "characters, stored verbatim (HTML is text)")
    version: str | None = Field(
        default=None, description="the item's version as read: a changed item is a 409 then; "
                                  "without it only a decided item is (undo excepted)")


class Signals(Response):
    bm25_rank: int | None = None
    knn_similarity: float | None = None
    reranked: bool = False
    rerank_score: float | None = None
    found_by: list[MatchSignal] = Field(default_factory=list, description=(
        "what found the candidate: the match's `signals` (`same-image`, `ocr`, `text`)"))


class Scored(Response):
    """A candidate's place in its match: rank (1-based), fused score, calibrated confidence."""

    rank: int | None = None
    score: float | None = None
    confidence: float | None = None


class Candidate(Scored):
    factcheck_id: str
    claim: str | None = None
    rating: str | None = None
    publisher: str | None = None
    date: str | None = None
    url: str | None = None
    lang: str | None = None
    signals: Signals


class Decision(Scored):
    id: str
    post_id: str
    action: Action
    actor: str
    at: str
    origin: Origin
    factcheck_id: str | None = None
    note: str | None = None
    supersedes: str | None = None
    from_status: ReviewStatus | None = None
    to_status: ReviewStatus | None = None
    config: str | None = None
    versions: dict[str, Any] = Field(default_factory=dict)
    signals: dict[str, Any] = Field(default_factory=dict)


class ReviewImage(Response):
    sha256: str
    width: int
    height: int
    ocr_text: str = Field(description="the text read from the image (empty when none was read)")
    thumbnail: dict[str, int] | None = Field(
        default=None, description="the size of the desk's thumbnail (a JPEG FactSieve re-encoded, "
                                  "shown on the desk's page of the item), or null")


class ReviewItem(Response):
    post_id: str
    text: str
    lang: str | None = None
    date: str | None = None
    source_url: str | None = None
    status: ReviewStatus
    confidence: float | None = None
    created_at: str
    decided_at: str | None = None
    decided_by: str | None = None
    config: str | None = None
    versions: dict[str, Any] = Field(default_factory=dict)
    candidates: list[Candidate]
    image: ReviewImage | None = Field(default=None, description="the post's image, for an image post")
    version: str = Field(description="send it back with a decision (optimistic concurrency)")
    decisions: list[Decision] | None = None


class ReviewQueue(Response):
    items: list[ReviewItem]
    next: str | None = Field(description="the cursor of the next page; null on the last")
    counts: dict[str, dict[str, int]] = Field(
        description="items per status, lang, confidence band and age band, each with the other "
                    "filters applied")


class NotRecorded(Response):
    post_id: str
    reason: str = Field(description="why it was not recorded: another request decided the item "
                                    "between this request's read and its write")
    decision: Decision | None = Field(default=None, description="the decision that won, if any")


class DecisionsOut(Response):
    """201: every decision recorded. 207: a race found while writing recorded only some of the
    batch (``partial: true``); ``not_recorded`` names each item that was not and why."""

    decisions: list[Decision] = Field(description="the decisions recorded (their webhooks sent)")
    partial: bool = Field(default=False, description="true (status 207) when some of the batch "
                                                     "was not recorded")
    not_recorded: list[NotRecorded] = Field(default_factory=list)
