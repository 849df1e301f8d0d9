# Everything installs into .venv on first use; each target works on a fresh clone.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
DEMO   := .demo

.PHONY: install test demo bench lint format clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

# Bytecode caches stay on for the run, even where PYTHONDONTWRITEBYTECODE is set: each module is
# then compiled (and each test module's asserts rewritten) once, not in every worker and every
# CLI subprocess (a worker's collection: 3.4 s of CPU without the caches, 1.6 s with them).
test: $(STAMP)
	PYTHONDONTWRITEBYTECODE= $(BIN)/python -m pytest -q -n auto

demo: $(STAMP)
	@rm -rf $(DEMO) && mkdir -p $(DEMO)
	@echo "== flatten this repository (cloned through git, --kind auto) =="
	$(BIN)/docs-flatten flatten --repo . --kind auto -o $(DEMO)/corpus.jsonl --report $(DEMO)/report.json
	@echo
	@echo "== the first records (title, source, lines) =="
	@$(BIN)/python -c "import json,itertools; [print(f\"{r['id']:<42} {r['title'][:48]:<48} L{r.get('startLine')}-{r.get('endLine')}\") for r in map(json.loads, itertools.islice(open('$(DEMO)/corpus.jsonl'), 12))]"
	@echo
	@echo "== index it; the second run finds nothing to do =="
	$(BIN)/docs-flatten index $(DEMO)/corpus.jsonl --corpus docs-flatten --store $(DEMO)/index
	$(BIN)/docs-flatten index $(DEMO)/corpus.jsonl --corpus docs-flatten --store $(DEMO)/index
	@echo
	@echo "== search, with citations mapped by fixtures/demo/docs-flatten.yaml =="
	$(BIN)/docs-flatten search "how are secrets redacted" --store $(DEMO)/index --config fixtures/demo/docs-flatten.yaml -k 3
	@echo
	$(BIN)/docs-flatten search "aws_eks_cluster" --store $(DEMO)/index --config fixtures/demo/docs-flatten.yaml -k 2
	@echo
	$(BIN)/docs-flatten search "how do I install it with docker?" --store $(DEMO)/index -k 2
	@echo
	@echo "== every document holding both words =="
	$(BIN)/docs-flatten match rollout canary --store $(DEMO)/index
	@echo
	@echo "== the realistic docs tree in fixtures/, as LangChain documents =="
	$(BIN)/docs-flatten flatten --root fixtures/docs-tree --format langchain -o $(DEMO)/docs-tree.langchain.jsonl
	@head -c 400 $(DEMO)/docs-tree.langchain.jsonl; echo " ..."

bench: $(STAMP)
	$(BIN)/python tests/bench/run.py

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(STAMP)
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

clean:
	rm -rf $(VENV) $(DEMO) .bench .pytest_cache .ruff_cache .hypothesis
