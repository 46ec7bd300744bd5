# The two commands a newcomer needs (see README.md):
#   make demo   install dependencies if missing, build, run the coupled demo workflow
#   make test   install dependencies if missing, build, run the whole test suite (ctest)
BUILD    ?= build
GENERATOR ?= $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")
CMAKE_ARGS ?=
CTEST_ARGS ?=
# Targets to build (empty: all); CI's ThreadSanitizer run builds only what its tests run.
BUILD_TARGETS ?=
# Tests run at once: most of a test's time is MPI startup and waiting (together about a third of a core
# per test on the 2-core machine CI uses), so one more than the cores; TEST_JOBS=1 runs one at a time.
TEST_JOBS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 1) + 1 )))
FUZZ_SECONDS ?= 60
PREFIX   ?= /usr/local

.PHONY: all deps configure build test demo install bench fuzz clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) --parallel $(if $(BUILD_TARGETS),--target $(BUILD_TARGETS))

test: build
	ctest --test-dir $(BUILD) --output-on-failure --timeout 300 -j $(TEST_JOBS) $(CTEST_ARGS)

demo: build
	./examples/demo.sh $(BUILD)

bench: build
	./bench/run.sh $(BUILD)

# libFuzzer targets (clang, ASan + UBSan) for the config parser and the wire decoders, FUZZ_SECONDS each;
# e.g. `make fuzz FUZZ_SECONDS=3600` for a long run. New inputs are kept in build-fuzz/fuzz/corpus-*.
fuzz: deps
	cmake -S . -B build-fuzz -G "$(GENERATOR)" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
	  -DDTF_FUZZ=ON -DDTF_SANITIZE=address,undefined -DDTF_FUZZ_SECONDS=$(FUZZ_SECONDS)
	cmake --build build-fuzz --parallel --target fuzz_config fuzz_wire
	ctest --test-dir build-fuzz -L fuzz --output-on-failure

# The library and its tools alone, into PREFIX (no root needed when the prefix is yours and the
# runtime dependencies are there): its own build directory, without tests, benchmarks or fuzzing.
install:
	@./scripts/install-deps.sh --runtime
	cmake -S . -B $(BUILD)-install -G "$(GENERATOR)" -DCMAKE_BUILD_TYPE=Release -DDTF_BUILD_TESTS=OFF \
	  -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)
	cmake --build $(BUILD)-install --parallel
	cmake --install $(BUILD)-install

clean:
	rm -rf $(BUILD) $(BUILD)-install build-fuzz
