# The commands the README names. Each sets up what it needs on a fresh clone.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: demo test bench lint install install-dev browser worker serve clean screenshots

$(VENV)/.installed: requirements.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip
	$(PIP) install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed
	$(PIP) install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

# Debian's Chromium for the Playwright browser tests (Playwright cannot download browsers here).
browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser tests"; \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	  || echo "could not install chromium (not root?): browser tests will fail"; }

# Set up everything, load the demo campaign and serve it on http://$(HOST):$(PORT).
demo: $(VENV)/.installed
	$(PY) manage.py migrate --noinput
	$(PY) manage.py load_demo --url http://$(HOST):$(PORT)/
	$(PY) manage.py runserver $(HOST):$(PORT)

# Set up everything and run every check and test (the 25 slowest tests listed last: the suite must keep
# .ci/run under 45 minutes on the two-core machine).
test: $(VENV)/.installed-dev browser
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy pooling judgements evaluation online labeling demo tests
	$(PY) -m pytest -q --durations=25

# Screenshots of every manager page at 1366x768 and 390x844 in var/screenshots/ (not committed): the
# browser journey test (tests/test_journey_browser.py) takes them as it walks a whole campaign.
screenshots: $(VENV)/.installed-dev browser
	rm -rf var/screenshots
	SCREENSHOTS=var/screenshots $(PY) -m pytest -q -p no:cacheprovider -s tests/test_journey_browser.py
	@ls var/screenshots | wc -l | xargs echo "screenshots in var/screenshots/:"

bench: $(VENV)/.installed-dev
	for b in benchmarks/*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

lint: $(VENV)/.installed-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy pooling judgements evaluation online labeling demo tests

worker: $(VENV)/.installed
	$(VENV)/bin/celery -A labeling worker --beat --loglevel=info

clean:
	rm -rf $(VENV) var staticfiles
