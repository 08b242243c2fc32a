# Short names for the CMake build. `make` builds what `make install` installs
# (the libraries, nodal-run, nodal-verify, the man pages); `make check` builds
# the tests and runs every test tier (host, sanitizers, multi-node VM);
# `make bench` builds the benchmarks and runs the headline comparison.
BUILD    ?= build
JOBS     ?= $(shell nproc)
PREFIX   ?= /usr/local
CMAKE_ARGS ?=

all: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

# Every test program (the default build makes none).
tests: all
	cmake --build $(BUILD) -j $(JOBS) --target nd_tests

# Every test tier; see tests/README.md.
check: tests
	tests/run-all.sh $(BUILD)

# Host tests only (no sanitizer builds, no VM).
check-host: tests
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Headline benchmark (quick mode, < 5 minutes on 2 cores); bench/run.py
# builds the benchmark programs first.
bench: all
	bench/run.py --quick --build $(BUILD)

bench-full: all
	bench/run.py --full --build $(BUILD)

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

# Removes what the last `make install` from $(BUILD) installed (its
# install_manifest.txt).
uninstall:
	cmake -DMANIFEST=$(abspath $(BUILD))/install_manifest.txt -P cmake/uninstall.cmake

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz

.PHONY: all tests check check-host bench bench-full install uninstall clean
