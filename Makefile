# Thin wrapper over CMake: `make`, `make run`, `make test`, `make install`, `make deb`...
# Each target installs (as root) the Debian packages it needs and no others: see
# scripts/install-deps.sh. Building needs no Node.js: the dashboard is committed in web/bundle.
BUILD ?= build
ASAN_BUILD ?= build-asan
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
DESTDIR ?=
# Which package set `deps` installs; targets below that need more set their own.
DEPS = build

.PHONY: all deps configure test test-asan run demo install man web web-check deb container \
	format format-check clean

all: configure
	cmake --build $(BUILD) -j $(JOBS)

# As root, installs whatever Debian packages are missing (a quick dpkg check when none are);
# otherwise only checks, and says what to install.
deps:
	@if [ "$$(id -u)" = 0 ]; then ./scripts/install-deps.sh $(DEPS); \
	else ./scripts/install-deps.sh --check $(DEPS); fi

# Configures once; later runs only refresh (well under a second), so that libraries installed
# since (cmocka for `make test` after `make run`) are found.
configure: deps
	@if [ -f $(BUILD)/CMakeCache.txt ]; then cmake -S . -B $(BUILD) >/dev/null; \
	else cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo; fi

# Strict: with every tool installed, a suite that skips for a missing one fails.
test: DEPS = test
test: all
	cmake -S . -B $(BUILD) -DGM_TEST_STRICT=ON >/dev/null
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The C code under the sanitizers; the dashboard's JavaScript is tested by `make test` only.
test-asan: DEPS = test
test-asan: deps
	@test -f $(ASAN_BUILD)/CMakeCache.txt || cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGM_SANITIZE=ON -DGM_WEB_TESTS=OFF -DGM_TEST_STRICT=ON
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ctest --output-on-failure -j $(JOBS)

# Where `make run` and `make demo` listen: `make demo PORT=8080` (on 127.0.0.1), or the whole
# address with LISTEN (`LISTEN=0.0.0.0:9401` serves every interface). Neither given: gpumon
# serve's own default, 127.0.0.1:9401 or GPU_MONITOR_LISTEN.
PORT ?=
LISTEN ?= $(if $(PORT),127.0.0.1:$(PORT))
SERVE_LISTEN = $(if $(LISTEN),--listen $(LISTEN))

# The daemon and its dashboard on http://127.0.0.1:9401 (real GPUs: NVML, then nvidia-smi).
run: all
	./$(BUILD)/gpumon serve $(SERVE_LISTEN)

# The same with four simulated GPUs (badged "sim"), for a first look without a GPU.
demo: all
	./$(BUILD)/gpumon serve --simulate 4 $(SERVE_LISTEN)

# bin/gpumon, the systemd unit (disabled), gpumon(1) and the bash completion under
# $(DESTDIR)$(PREFIX). The unit names the installed binary, so PREFIX is configured in.
install: all
	cmake -S . -B $(BUILD) -DCMAKE_INSTALL_PREFIX=$(PREFIX) >/dev/null
	DESTDIR=$(DESTDIR) cmake --install $(BUILD)

# What the help texts and option tables generate: docs/gpumon.1, the bash completion,
# docs/CLI.md's option tables and docs/API.md's settings table (test_manpage.py and
# test_opt_tables.py fail when one is stale).
man: all
	./scripts/gen-man.py $(BUILD)/gpumon docs/gpumon.1
	$(BUILD)/gpumon help --dump bash > deploy/gpumon.bash
	$(BUILD)/gpumon help --dump markdown | ./scripts/paste-generated.py docs/CLI.md options markdown
	$(BUILD)/gpumon help --dump settings | ./scripts/paste-generated.py docs/API.md settings settings

# The dashboard bundle (web/bundle, committed) from web/ sources: needs Node.js >= 18.19 and npm.
web:
	./scripts/web.sh build

# Fails unless web/bundle equals a fresh build of web/ (also a ctest: web/bundle).
web-check:
	./scripts/web.sh check

# dist/gpumon_VERSION-1_ARCH.deb, built by dpkg-buildpackage in a copy of the tree.
deb: DEPS = deb
deb: deps
	./scripts/build-deb.sh

# The container image localhost/gpumon:VERSION from dist/'s package (`make deb` first).
container: DEPS = container
container: deps
	./scripts/container-build.sh

FORMAT_FILES = $(shell git ls-files '*.c' '*.h')
format:
	clang-format -i $(FORMAT_FILES)

format-check:
	clang-format --dry-run --Werror $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
