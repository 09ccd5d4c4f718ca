# Everyday commands. The build itself is CMake's; this file only names the
# steps: `make demo` sets everything up and runs the main job, `make test`
# runs the test suite (what it leaves out for time, with the reason, is
# said at each step: test-pjrt-modes).

BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
VENV       ?= .venv
PYTHON     ?= python3

.PHONY: all build asan setup demo demo-c test test-quick test-layers test-release test-asan \
        test-python test-python-parallel test-python-modes test-opinfo-dtypes test-opencl test-pjrt test-pjrt-modes fuzz valgrind \
        bench clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null
	cmake --build $(BUILD) -j $(JOBS)

asan:
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPORTA_SANITIZE=ON >/dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The virtual environment holds the Python side and the `porta` command.
setup: build
	scripts/setup.sh $(VENV) $(BUILD)

# The main job: a CNN trained on "porta" beside the same run on PyTorch's CPU.
demo: setup
	$(VENV)/bin/python examples/train_digits_cnn.py

# The C API's own demo: an MLP trained with libporta's ops, no Python.
demo-c: $(NEEDS_SETUP)
	$(VENV)/bin/train_digits $(BUILD)/digits.csv

# First the layer check (cheap), then the C tests in a release build, the
# same tests under AddressSanitizer + UBSan (with LeakSanitizer's exit-time
# leak check), then the Python package's tests against PyTorch's CPU; the C
# demo runs before them as a smoke test.
# Then the OpInfo conformance test again in fused eager mode and through
# torch.compile(backend="porta"). Then the Python tests on the first
# OpenCL device (the C tests already run every primitive on every device).
# Last, the PJRT backend (XLA's CPU plugin): OpInfo, the training-parity
# models and the demo on it, and libtpu / JAX's CUDA plugin reported as
# unavailable with their own reasons.
# Each step runs in a make of its own, timed: a table of the steps' wall
# times ends the output, also when a step fails (it names that step).
# The kernel cache the Python steps share starts empty, as in a fresh clone.
TEST_STEPS = test-layers test-release test-asan fuzz demo-c test-python test-python-modes test-opencl test-pjrt
test:
	rm -rf $(TEST_KERNEL_CACHE)
	@MAKE="$(MAKE)" TEST_SETUP_DONE=1 scripts/timed_steps.sh setup $(TEST_STEPS)

# The inner loop (a few minutes): the C tests in release and the Python
# suite on the CPU but for its serial tests (MPI ranks, the whole demo on
# two devices, ...), without the OpInfo modes, the sanitizers, the fuzzers
# and OpenCL.
test-quick:
	@MAKE="$(MAKE)" TEST_SETUP_DONE=1 scripts/timed_steps.sh setup test-release test-python-parallel

# The steps `make test` runs after its own set-up skip it.
NEEDS_SETUP = $(if $(TEST_SETUP_DONE),,setup)

# pytest in PYTEST_WORKERS processes (pytest-xdist; 0: in this process):
# the tests marked serial run after the rest, alone. The processes share one
# kernel cache, kept between the Python steps, so a kernel one compiled is
# loaded, not compiled again, by the others and the steps after it on the
# same device (the compile-mode OpInfo run finds about half of its C
# kernels built by the fused run; the PoCL steps share their OpenCL
# binaries likewise). The tests that need a cold cache make their own.
PYTEST_WORKERS    ?= $(if $(filter 1,$(shell nproc)),0,2)
TEST_KERNEL_CACHE ?= $(abspath $(BUILD))/test-kernel-cache
PYTEST            = PORTA_CACHE_DIR=$(TEST_KERNEL_CACHE) $(VENV)/bin/python -m pytest -q --durations=10
PYTEST_PARALLEL   = $(PYTEST) -n $(PYTEST_WORKERS)
# $(call pytest_suite,ENVIRONMENT,PYTEST OPTIONS): python/tests with ENVIRONMENT set
pytest_suite = $(1) $(PYTEST_PARALLEL) -m "not serial" $(2) python/tests && \
               $(1) $(PYTEST) -m serial $(2) python/tests

# The layer order of src/layers.txt, checked on the includes and on the
# symbols each object of libporta uses from the others, then the checker's
# own test; and the public boundary: only what include/ declares carries
# the porta_ prefix (checked on the built libraries).
test-layers: build
	$(PYTHON) scripts/check_layers.py --objects $(BUILD)/CMakeFiles/porta_objects.dir/src
	$(PYTHON) scripts/check_layers.py --self-test
	$(PYTHON) scripts/check_symbols.py $(BUILD)

# NVRTC from the nvidia-cuda-nvrtc-cu12 wheel scripts/setup.sh puts in the
# venv: the CUDA tests compile every kernel with it (no GPU needed). Looked
# up when a recipe runs, after `setup`.
NVRTC_LIBRARY = $(firstword $(wildcard $(VENV)/lib/python3*/site-packages/nvidia/cuda_nvrtc/lib/libnvrtc.so.12))
WITH_NVRTC = $(if $(NVRTC_LIBRARY),PORTA_NVRTC_LIBRARY=$(abspath $(NVRTC_LIBRARY)) PORTA_REQUIRE_NVRTC=1)

test-release: build $(NEEDS_SETUP)
	$(WITH_NVRTC) $(BUILD)/porta_tests

# PoCL (the OpenCL driver) keeps a few bytes of its own for good when it
# first builds its kernel cache, and XLA's CPU plugin some of its
# compiler's: tests/lsan.supp names those two libraries. The
# conformance suite runs its compiler cases only here (all of them in the
# release run). Then `porta serve` built with the sanitizers faces the
# HTTP tests' clients (hostile ones included: stalled, dropped, 1,000
# idle); a leak at its exit fails the graceful-stop test's exit status.
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
                LSAN_OPTIONS=suppressions=$(abspath tests/lsan.supp)
test-asan: asan $(NEEDS_SETUP)
	$(SANITIZER_ENV) PORTA_CONFORMANCE=quick $(WITH_NVRTC) $(ASAN_BUILD)/porta_tests
	$(SANITIZER_ENV) PORTA_CLI=$(abspath $(ASAN_BUILD))/porta $(PYTEST) python/tests/test_serve.py

# Each file parser's fuzz target (libFuzzer, ASan + UBSan) for 10 seconds
# from its seed corpus; fails on any finding. `fuzz/run.sh 600` for a
# longer campaign.
fuzz:
	fuzz/run.sh 10

test-python: $(NEEDS_SETUP)
	$(call pytest_suite,)

test-python-parallel: $(NEEDS_SETUP)
	$(PYTEST_PARALLEL) -m "not serial" python/tests

# Fused mode takes one sample per OpInfo (all of them took 7.7 of the
# step's 9 minutes, mostly building kernels for each sample's shapes); the
# C conformance suite sends every primitive's layouts through the compiler.
# Then OpInfo eagerly with the samples of the other dtypes, one per OpInfo
# (each dtype's whole run, a minute or two, holds it to its own list:
# `make test-opinfo-dtypes OPINFO_DTYPE_SAMPLES=0` runs every sample).
OPINFO_DTYPES       = float64 bfloat16 complex64
OPINFO_DTYPE_SAMPLES ?= 1
test-python-modes: $(NEEDS_SETUP)
	PORTA_TEST_MODE=fused PORTA_OPINFO_SAMPLES=1 $(PYTEST_PARALLEL) python/tests/test_opinfo.py
	PORTA_TEST_MODE=compile $(PYTEST_PARALLEL) python/tests/test_opinfo.py
	$(MAKE) --no-print-directory test-opinfo-dtypes TEST_SETUP_DONE=1

test-opinfo-dtypes: $(NEEDS_SETUP)
	set -e; for dtype in $(OPINFO_DTYPES); do \
	  PORTA_OPINFO_DTYPE=$$dtype PORTA_OPINFO_SAMPLES=$(OPINFO_DTYPE_SAMPLES) \
	    $(PYTEST_PARALLEL) python/tests/test_opinfo.py; done

# PORTA_VISIBLE_DEVICES=opencl makes the first OpenCL device (PoCL in CI)
# porta:0, the device "porta" means: the unchanged suite runs there, but for
# the files whose programs choose their devices themselves (the comparison
# names cpu,opencl; placement opencl,cpu; the progress line cpu; porta train
# its devices), which run the same there as in test-python, and those whose
# subject is not the device (the server and its generation loop, the GPU
# script's refusals), which test-python covers. OpInfo in fused mode runs one sample
# per OpInfo there: that renders every op's kernels to OpenCL C; every
# sample runs fused on the CPU, and the C conformance suite runs each
# primitive's layouts fused on OpenCL. OpInfo through torch.compile runs on
# the CPU only (test-python-modes): what it adds to fused mode, the graph
# captured by Dynamo and lowered to a plan, does not depend on the device,
# and test_compile.py runs compiled models on PoCL in the suite. Last, the
# conformance suite with PoCL acting as a device without float64, whose
# float64 primitives are placed on the CPU, and the special functions and
# factorisations computed there in float (the accuracy the README states).
OPENCL_FIRST = PORTA_VISIBLE_DEVICES=opencl
OPENCL_SAME_AS_CPU = test_compare.py test_placement.py test_progress.py test_train_supervisor.py \
                     test_serve.py test_generate.py test_pjrt_gpu_check.py
# The PJRT device first, the CPU backend beside it for what the plugin
# cannot run: OpInfo eagerly, one sample per OpInfo (XLA compiles a module
# per op and shape: all samples took 9 minutes; the C conformance suite runs
# every primitive's cases there), the fused and compile modes in
# test-pjrt-modes. DDP with tensors on the PJRT device
# runs in test-python (test_distributed.py sets the devices itself). Not
# yet the whole Python suite: on XLA's CPU plugin a GradScaler at 2^127
# meets flushed denormals, and a new batch size compiles new modules where
# test_compile expects kernels reused.
PJRT_FIRST = PORTA_VISIBLE_DEVICES=pjrt,cpu
test-pjrt: $(NEEDS_SETUP)
	@$(PJRT_FIRST) $(VENV)/bin/porta devices | grep -q '^porta:0  pjrt' || \
	  { echo "test-pjrt: no PJRT device (make setup installs XLA's CPU plugin):"; \
	    $(VENV)/bin/porta devices; exit 1; }
	$(PJRT_FIRST) PORTA_OPINFO_SAMPLES=1 $(PYTEST_PARALLEL) python/tests/test_opinfo.py \
	  python/tests/test_parity.py python/tests/test_pjrt.py python/tests/test_pjrt_device.py
	PORTA_VISIBLE_DEVICES=pjrt $(VENV)/bin/python examples/train_digits_cnn.py
	scripts/pjrt_plugins_check.sh $(VENV)/bin/porta

# OpInfo on the PJRT device in fused mode (one sample per OpInfo) and
# through torch.compile: about ten minutes on a 2-core machine (each op's
# modules compiled by XLA), more than `make test`'s time allows today, so a
# step of its own until whole graphs compile as one module.
test-pjrt-modes: $(NEEDS_SETUP)
	$(PJRT_FIRST) PORTA_TEST_MODE=fused PORTA_OPINFO_SAMPLES=1 $(PYTEST_PARALLEL) \
	  python/tests/test_opinfo.py
	$(PJRT_FIRST) PORTA_TEST_MODE=compile $(PYTEST_PARALLEL) python/tests/test_opinfo.py

test-opencl: $(NEEDS_SETUP)
	@$(OPENCL_FIRST) $(VENV)/bin/porta devices | grep -q '^porta:0  opencl' || \
	  { echo "test-opencl: no OpenCL device (install pocl-opencl-icd):"; \
	    $(VENV)/bin/porta devices; exit 1; }
	$(call pytest_suite,$(OPENCL_FIRST),$(addprefix --ignore=python/tests/,$(OPENCL_SAME_AS_CPU)))
	$(OPENCL_FIRST) PORTA_TEST_MODE=fused PORTA_OPINFO_SAMPLES=1 $(PYTEST_PARALLEL) \
	  python/tests/test_opinfo.py
	PORTA_OPENCL_FP64=0 PORTA_CONFORMANCE=quick $(BUILD)/porta_tests conformance
	PORTA_OPENCL_FP64=0 $(BUILD)/porta_tests opencl_special_functions
	PORTA_OPENCL_FP64=0 $(BUILD)/porta_tests factor_opencl

# Porta's own memory: the PJRT backend is off, so XLA's plugin (whose
# own code valgrind reports on) is not loaded.
valgrind: build
	PORTA_PJRT=0 valgrind --leak-check=full --error-exitcode=1 --errors-for-leak-kinds=definite,indirect \
	  $(BUILD)/porta_tests test_core

# Benchmarks compare against references measured in the same run. OpenBLAS
# reads OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE, which slow it on this machine, so
# they are unset for that one command only.
bench: build
	cmake --build $(BUILD) -j $(JOBS) --target benches
	env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE $(BUILD)/bench_sgemm
	$(BUILD)/bench_elementwise
	$(BUILD)/bench_fusion
	$(BUILD)/bench_opencl
	.venv/bin/python bench/bench_torch.py
	.venv/bin/python bench/bench_compile.py
	.venv/bin/python bench/bench_devices.py
	.venv/bin/python bench/bench_onnxruntime.py --porta $(BUILD)/porta --threads 1 --rounds 5
	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
	  mpirun -np 2 --oversubscribe .venv/bin/python bench/bench_allreduce.py

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
