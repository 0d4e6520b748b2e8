# Thin wrapper over CMake: `make`, `make test`, `make run`, `make test-asan`, `make format-check`.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PKGS := jansson libwebsockets cmocka

.PHONY: all deps configure test test-asan run demo format format-check clean

all: configure
	cmake --build $(BUILD) -j $(JOBS)

# Installs the Debian packages when pkg-config cannot find them and we are root.
deps:
	@pkg-config --exists $(PKGS) 2>/dev/null && command -v cmake >/dev/null || \
	  { if [ "$$(id -u)" = 0 ]; then ./scripts/install-deps.sh; \
	    else echo "missing build dependencies: run sudo ./scripts/install-deps.sh" >&2; exit 1; fi; }

configure: deps
	@test -f $(BUILD)/CMakeCache.txt || cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

test: all
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@test -f $(ASAN_BUILD)/CMakeCache.txt || cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGM_SANITIZE=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

run: all
	./$(BUILD)/gpumon query

FORMAT_FILES = $(shell git ls-files '*.c' '*.h')
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
