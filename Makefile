# The two commands a newcomer needs (see README.md):
#   make demo   install dependencies if missing, build, run the coupled demo workflow
#   make test   install dependencies if missing, build, run the whole test suite (ctest)
BUILD    ?= build
GENERATOR ?= $(shell command -v ninja >/dev/null 2>&1 && echo Ninja || echo "Unix Makefiles")
CMAKE_ARGS ?=
CTEST_ARGS ?=
PREFIX   ?= /usr/local

.PHONY: all deps configure build test demo install bench clean

all: build

deps:
	@./scripts/install-deps.sh

$(BUILD)/CMakeCache.txt:
	@$(MAKE) --no-print-directory deps
	cmake -S . -B $(BUILD) -G "$(GENERATOR)" -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

configure: $(BUILD)/CMakeCache.txt

build: deps configure
	cmake --build $(BUILD) --parallel

test: build
	ctest --test-dir $(BUILD) --output-on-failure --timeout 300 $(CTEST_ARGS)

demo: build
	./examples/demo.sh $(BUILD)

bench: build
	./bench/run.sh $(BUILD)

install: build
	cmake --install $(BUILD)

clean:
	rm -rf $(BUILD)
