# Short names for the CMake build. `make` builds, `make check` runs every test
# tier (host, sanitizers, multi-node VM), `make bench` runs the headline
# benchmark comparison.
BUILD    ?= build
JOBS     ?= $(shell nproc)
PREFIX   ?= /usr/local
CMAKE_ARGS ?=

all: $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) $(CMAKE_ARGS)

# Every test tier; see tests/README.md.
check: all
	tests/run-all.sh $(BUILD)

# Host tests only (no sanitizer builds, no VM).
check-host: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# Headline benchmark (quick mode, < 5 minutes on 2 cores).
bench: all
	bench/run.py --quick --build $(BUILD)

bench-full: all
	bench/run.py --full --build $(BUILD)

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-fuzz

.PHONY: all check check-host bench bench-full install clean
