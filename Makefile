# Thin wrapper over CMake. `make` builds build/gptmeg; see README for the rest.
BUILD      ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_RUNS ?= 5000
JOBS       ?= $(shell nproc)
REPORT_DIR ?= report
PYTHON     ?= python3
# The Megatron generators run transformers 4.47.1's converter (tools/ref/requirements-megatron.txt):
# a second environment, e.g. python3 -m venv venv447 && venv447/bin/pip install -r tools/ref/requirements-megatron.txt
PYTHON_MEGATRON ?= $(PYTHON)

.PHONY: all deps test test-fast test-asan fuzz fuzz-campaign fuzz-smoke report bench goldens peer clean

all: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	@cmake --build $(BUILD) -j $(JOBS)

deps:
	@scripts/deps.sh

# Every test: the release build, the unit tests again under ASan+UBSan, and a few seconds of each
# libFuzzer harness (skipped, with a SKIP line, where clang's libFuzzer is missing).
test: test-fast fuzz-smoke test-asan

test-fast: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGPTMEG_SANITIZE=ON >/dev/null
	@cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && GPTMEG_QUICK=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	  ctest --output-on-failure -j $(JOBS) -R '^test_'

# Coverage-guided fuzzing (docs/reliability.md): each harness FUZZ_SECONDS on a copy of its corpus
# (fails without clang's libFuzzer; fuzz-smoke, part of make test, skips instead).
fuzz: deps
	FUZZ_REQUIRE=1 FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) scripts/fuzz.sh $(FUZZ_SECONDS)

# The long campaign (docs/reliability.md): each harness FUZZ_UNTIL inputs, results in $(FUZZ_BUILD)/campaign.txt.
FUZZ_UNTIL ?= 10000000
fuzz-campaign: deps
	FUZZ_REQUIRE=1 FUZZ_UNTIL=$(FUZZ_UNTIL) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) scripts/fuzz.sh 0

fuzz-smoke: deps
	@FUZZ_RUNS=$(FUZZ_SMOKE_RUNS) FUZZ_BUILD=$(FUZZ_BUILD) JOBS=$(JOBS) scripts/fuzz.sh 0

report: all
	$(BUILD)/gptmeg report --out $(REPORT_DIR)

bench: all
	if [ -x $(BUILD)/bench_fp_pipes ]; then $(BUILD)/bench_fp_pipes; fi
	if [ -x $(BUILD)/bench_amx_peak ]; then $(BUILD)/bench_amx_peak; fi
	$(BUILD)/gptmeg bench act --rounds 3
	$(BUILD)/gptmeg bench model
	$(BUILD)/gptmeg bench train
	$(BUILD)/gptmeg bench gemm --drivers
	-$(PYTHON) bench/act_vs_torch.py --gptmeg $(BUILD)/gptmeg --rounds 3 --backward
	-$(PYTHON) bench/model_vs_torch.py --gptmeg $(BUILD)/gptmeg
	-$(PYTHON) bench/gemm_vs_torch.py --gptmeg $(BUILD)/gptmeg --drivers
	-$(PYTHON) bench/train_vs_torch.py --gptmeg $(BUILD)/gptmeg
	-bash bench/load_bin_vs_safetensors.sh $(BUILD)/gptmeg $(PYTHON)

# What this machine's CPU class can produce, each golden where its target's goldens live
# (tools/ref/make_goldens.py: zen4 in place; other hosts per target into tests/golden/targets/).
goldens: all
	$(PYTHON) tools/ref/check_versions.py
	PYTHON_MEGATRON="$(PYTHON_MEGATRON)" $(PYTHON) tools/ref/make_goldens.py --gptmeg $(BUILD)/gptmeg

peer: all
	@if $(PYTHON) -c 'import torch' 2>/dev/null; then $(PYTHON) tools/ref/peer_gelu.py --gptmeg $(BUILD)/gptmeg; \
	else echo "make peer: PyTorch is not installed; pip install -r tools/ref/requirements.txt"; fi

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
