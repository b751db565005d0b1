# rackplan quick start: `make run` and `make test` on a fresh Debian 12 machine.
# Both install the missing Debian packages first (when run as root), then configure and build.

BUILD ?= build
ASAN_BUILD ?= build-asan
PACKAGES = meson ninja-build pkg-config gcc libglpk-dev libigraph-dev libxml2-dev libyaml-dev \
           zlib1g-dev python3
# Only the tests need these: Chromium renders the HTML reports, groff checks the man page,
# strace watches that hostile input files make rackplan open nothing else; python3-yaml parses the
# emitted engine YAML with libyaml (PyYAML's CLoader).
TEST_PACKAGES = chromium groff-base man-db strace python3-yaml
SUDO = $(if $(filter 0,$(shell id -u)),,sudo)

.PHONY: all deps build run test test-asan test-valgrind install clean

all: build

deps:
	@missing=$$(for p in $(PACKAGES) $(EXTRA_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing >/dev/null; \
	fi

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

run: build
	./$(BUILD)/rackplan plan models/deepseek-v3.yaml topologies/gb200-nvl72.xml --loads loads/dsv3_load.csv

test: EXTRA_PACKAGES = $(TEST_PACKAGES)
test: build
	@meson test -C $(BUILD) --print-errorlogs >/dev/null || true
	@python3 tests/summarize.py $(BUILD)/meson-logs/testlog.json

# The same suite built with AddressSanitizer and UndefinedBehaviorSanitizer, aborting on the
# first report; twice the timeouts (calibration's fit takes about 10 minutes there, 4 plain).
test-asan: EXTRA_PACKAGES = $(TEST_PACKAGES)
test-asan: deps
	@[ -f $(ASAN_BUILD)/build.ninja ] || meson setup $(ASAN_BUILD) -Db_sanitize=address,undefined \
	  -Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all >/dev/null
	ninja -C $(ASAN_BUILD)
	@meson test -C $(ASAN_BUILD) --timeout-multiplier 2 --print-errorlogs >/dev/null || true
	@python3 tests/summarize.py $(ASAN_BUILD)/meson-logs/testlog.json

# The TAP suites that run rackplan, with every run under Valgrind's memcheck (tests/tap.sh's
# RACKPLAN_WRAPPER): an error or a definite or indirect leak fails the case, whose outputs are
# still compared. 99 is an exit code rackplan never uses. About 10 minutes on 2 cores.
VALGRIND = valgrind -q --tool=memcheck --leak-check=full --show-leak-kinds=definite,indirect \
           --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
           --log-file=%q{RACKPLAN_WRAPPER_LOG}.%p
VALGRIND_TESTS = cli atomic time_limit shard

test-valgrind: EXTRA_PACKAGES = valgrind
test-valgrind: build
	@RACKPLAN_WRAPPER='$(VALGRIND)' meson test -C $(BUILD) --num-processes 1 --timeout-multiplier 4 \
	  --logbase valgrind --print-errorlogs $(VALGRIND_TESTS) >/dev/null || true
	@python3 tests/summarize.py $(BUILD)/meson-logs/valgrind.json

# The binary, the man page rackplan.1 and the bash completion, under PREFIX (default /usr/local).
install: build
	meson install -C $(BUILD) $(if $(DESTDIR),--destdir $(DESTDIR))

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
