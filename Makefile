# mcpgate build. Every source file is named here; nothing is found by wildcard.
#
#   make               mcpgate and toml-decode, with the warning wall as errors
#   make check         every unit test under ASan+UBSan, then toml-test; last line "N passed, N failed"
#   make test          the README's test command: check, then the runtime integration tests
#   make test-swarm    the swarm driver on a real three-node swarm in network namespaces (root)
#                      (they report skipped unless MCPGATE_CONTAINER_TESTS=1)
#   make lint          clang-format check and the banned-function check
#   make fuzz          fuzz targets (clang -fsanitize=fuzzer); make fuzz-run FUZZ_SECONDS=N;
#                      make fuzz-session FUZZ_SECONDS=N (a whole session, stdio and listener)
#   make demo          the demo session
#   make install PREFIX=/usr/local  (DESTDIR=... for a staged install)

CC ?= cc
PKG_CONFIG ?= pkg-config
CLANG ?= clang
CLANG_FORMAT ?= clang-format
PREFIX ?= /usr/local
DESTDIR ?=
SAN ?= 0
FUZZ_SECONDS ?= 600

WARN = -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wmissing-prototypes \
       -Wstrict-prototypes -Wswitch-enum
ifeq ($(SAN),1)
B = build/san
OPT = -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
BIN = build/san
else
B = build/rel
OPT = -O2 -g -D_FORTIFY_SOURCE=2
BIN = .
endif
ALL_CFLAGS = -std=gnu11 $(WARN) $(OPT) -I. -MMD -MP $(CFLAGS)
ALL_LDFLAGS = $(OPT) -Wl,--as-needed $(LDFLAGS)

YAJL_CFLAGS := $(shell $(PKG_CONFIG) --cflags yajl)
YAJL_LIBS := $(shell $(PKG_CONFIG) --libs yajl)
CURL_LIBS := $(shell $(PKG_CONFIG) --libs libcurl)
SODIUM_LIBS := $(shell $(PKG_CONFIG) --libs libsodium)
ARCHIVE_LIBS := $(shell $(PKG_CONFIG) --libs libarchive)
PSL_LIBS := $(shell $(PKG_CONFIG) --libs libpsl)
MHD_LIBS := $(shell $(PKG_CONFIG) --libs libmicrohttpd)

# ---- sources, one module a line -------------------------------------------
BASE_SRC = internal/base/err.c internal/base/xalloc.c internal/base/buf.c \
           internal/base/num.c internal/base/log.c internal/base/utf8.c \
           internal/base/strv.c internal/base/fs.c internal/base/suggest.c \
           internal/base/quote.c internal/base/tree.c
TESTING_SRC = internal/base/testing.c
TOML_SRC = internal/toml/toml.c internal/toml/toml_tree.c internal/toml/toml_encode.c \
           internal/toml/toml_change.c
JSON_SRC = internal/json/json.c internal/json/canonical.c internal/json/compare.c internal/json/shape.c
JSONRPC_SRC = internal/jsonrpc/frame.c internal/jsonrpc/message.c internal/jsonrpc/peer.c
# a package name, the base set, the hints: what config and the gateway need of internal/debian
DEB_NAMES_SRC = internal/debian/deb_name.c internal/debian/deb_hint.c
CONFIG_SRC = internal/config/config.c internal/config/config_check.c internal/config/edit.c $(DEB_NAMES_SRC) \
             internal/config/connect.c \
             internal/config/suffix.c egress/addr.c
PROC_SRC = internal/proc/spawn.c internal/proc/loop.c
CONTAINER_SRC = internal/container/container.c internal/container/ctr_cli.c internal/container/platform.c \
	internal/container/forward.c internal/container/mounts.c internal/container/owner.c internal/container/seccomp.c \
	internal/container/runargs.c internal/container/topology.c internal/container/cache.c internal/container/platform_key.c \
	internal/container/swarm.c internal/container/swarm_run.c
AUDIT_SRC = internal/audit/audit.c
REMOTE_SRC = internal/remote/bridge.c internal/remote/sse.c internal/remote/headers.c
PACK_SRC = internal/pack/pack.c internal/pack/tree.c internal/pack/layer.c internal/pack/elf.c
DEBIAN_SRC = internal/debian/deb_lock.c internal/debian/deb_file.c internal/debian/deb_apt.c \
             internal/debian/deb_fixups.c internal/debian/deb_layer.c
KEYCHAIN_SRC = internal/keychain/keychain.c internal/keychain/bindings.c
MCP_SRC = internal/mcp/mcp_client.c internal/mcp/manifest.c internal/mcp/shapes.c internal/mcp/revisions.c
CLIENTS_SRC = internal/clients/clients.c internal/clients/jsonc.c internal/clients/toml_edit.c \
              internal/clients/diff.c
GATEWAY_SRC = internal/gateway/launch.c internal/gateway/causes.c internal/gateway/binaries.c internal/gateway/egress.c internal/gateway/secrets.c internal/gateway/relist.c internal/gateway/session.c internal/gateway/server.c internal/gateway/startup.c internal/gateway/client.c internal/gateway/relay.c internal/gateway/remote_side.c \
              internal/gateway/confirm_state.c internal/gateway/era.c internal/gateway/instance.c internal/gateway/methods.c \
              internal/gateway/rounds.c internal/gateway/listens.c internal/gateway/asks.c internal/gateway/waiting.c internal/gateway/pressure.c \
              internal/gateway/watch.c \
              internal/gateway/connect.c
LISTEN_SRC = internal/listen/address.c internal/listen/token.c internal/listen/metrics.c \
             internal/listen/client.c internal/listen/conns.c internal/listen/http.c
CMD_SRC = cmd/mcpgate/main.c cmd/mcpgate/help.c cmd/mcpgate/opts.c cmd/mcpgate/setup.c \
          cmd/mcpgate/check.c cmd/mcpgate/list.c cmd/mcpgate/pull.c cmd/mcpgate/sweep.c cmd/mcpgate/review.c \
          cmd/mcpgate/serve.c cmd/mcpgate/secret.c cmd/mcpgate/pack.c cmd/mcpgate/add.c cmd/mcpgate/add_layers.c cmd/mcpgate/add_scripts.c cmd/mcpgate/add_step.c cmd/mcpgate/add_tarball.c cmd/mcpgate/add_pypi.c cmd/mcpgate/add_pypi_sdist.c cmd/mcpgate/client.c \
          cmd/mcpgate/store.c cmd/mcpgate/remove.c cmd/mcpgate/enable.c cmd/mcpgate/prune.c \
          cmd/mcpgate/progress.c cmd/mcpgate/add_build.c cmd/mcpgate/update.c cmd/mcpgate/update_pypi.c cmd/mcpgate/logs.c

MCPGATE_SRC = $(CMD_SRC) $(CLIENTS_SRC) $(LISTEN_SRC) $(GATEWAY_SRC) $(MCP_SRC) $(AUDIT_SRC) $(REMOTE_SRC) $(DEBIAN_SRC) $(PACK_SRC) $(KEYCHAIN_SRC) $(CONTAINER_SRC) $(PROC_SRC) \
              $(JSONRPC_SRC) $(CONFIG_SRC) $(JSON_SRC) $(TOML_SRC) $(BASE_SRC)
MCPGATE_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) $(ARCHIVE_LIBS) $(CURL_LIBS) $(PSL_LIBS) $(MHD_LIBS) -lpthread
TOML_DECODE_SRC = internal/toml/toml_decode.c $(TOML_SRC) $(BASE_SRC)

# unit tests: name, then its sources, then the libraries it links
UNIT_TESTS = base_test toml_test toml_encode_test json_test config_test config_edit_test proc_test container_test \
	     jsonrpc_test mcp_test \
	     keychain_test pack_test debian_test egress_test remote_test clients_test listen_test gateway_test \
	     confirm_state_test session_fuzz_replay
base_test_SRC = internal/base/base_test.c $(BASE_SRC) $(TESTING_SRC)
toml_test_SRC = internal/toml/toml_test.c $(TOML_SRC) $(BASE_SRC) $(TESTING_SRC)
toml_encode_test_SRC = internal/toml/toml_encode_test.c $(TOML_SRC) $(BASE_SRC) $(TESTING_SRC)
json_test_SRC = internal/json/json_test.c $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
json_test_LIBS = $(YAJL_LIBS)
jsonrpc_test_SRC = internal/jsonrpc/jsonrpc_test.c $(JSONRPC_SRC) $(PROC_SRC) $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
jsonrpc_test_LIBS = $(YAJL_LIBS) -lpthread
container_test_SRC = internal/container/container_test.c $(CONTAINER_SRC) $(CONFIG_SRC) $(TOML_SRC) \
	$(PROC_SRC) $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
container_test_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) $(PSL_LIBS) -lpthread
mcp_test_SRC = internal/mcp/mcp_test.c $(MCP_SRC) $(JSONRPC_SRC) $(PROC_SRC) $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
mcp_test_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) -lpthread
config_test_SRC = internal/config/config_test.c $(CONFIG_SRC) $(TOML_SRC) $(BASE_SRC) $(TESTING_SRC)
config_test_LIBS = $(PSL_LIBS)
config_edit_test_SRC = internal/config/edit_test.c $(CONFIG_SRC) $(TOML_SRC) $(BASE_SRC) $(TESTING_SRC)
config_edit_test_LIBS = $(PSL_LIBS)
proc_test_SRC = internal/proc/proc_test.c $(PROC_SRC) $(BASE_SRC) $(TESTING_SRC)
keychain_test_SRC = internal/keychain/keychain_test.c $(KEYCHAIN_SRC) $(CONFIG_SRC) $(TOML_SRC) \
	$(BASE_SRC) $(TESTING_SRC)
keychain_test_LIBS = $(SODIUM_LIBS) $(PSL_LIBS)
pack_test_SRC = internal/pack/pack_test.c $(PACK_SRC) $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
pack_test_LIBS = $(ARCHIVE_LIBS) $(SODIUM_LIBS) $(YAJL_LIBS)
debian_test_SRC = internal/debian/debian_test.c $(DEBIAN_SRC) $(DEB_NAMES_SRC) $(PACK_SRC) $(PROC_SRC) $(JSON_SRC) \
	$(BASE_SRC) $(TESTING_SRC)
debian_test_LIBS = $(ARCHIVE_LIBS) $(SODIUM_LIBS) $(YAJL_LIBS)
remote_test_SRC = internal/remote/remote_test.c internal/remote/sse.c internal/remote/headers.c \
	$(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
remote_test_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS)
clients_test_SRC = internal/clients/clients_test.c $(CLIENTS_SRC) $(TOML_SRC) $(JSON_SRC) $(BASE_SRC) \
	$(TESTING_SRC)
clients_test_LIBS = $(YAJL_LIBS)
listen_test_SRC = internal/listen/listen_test.c internal/listen/address.c internal/listen/token.c \
	internal/listen/metrics.c $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
listen_test_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) -lpthread

gateway_test_SRC = internal/gateway/gateway_test.c internal/gateway/gateway_fakes.c $(GATEWAY_SRC) $(MCP_SRC) $(AUDIT_SRC) $(REMOTE_SRC) \
	$(KEYCHAIN_SRC) $(CONTAINER_SRC) $(PROC_SRC) $(JSONRPC_SRC) $(CONFIG_SRC) $(JSON_SRC) $(TOML_SRC) \
	$(BASE_SRC) $(TESTING_SRC)
gateway_test_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) $(CURL_LIBS) $(PSL_LIBS) -lpthread
# the session fuzzer's seeds and reproducers, each run once: fuzz/replay_main.c
session_fuzz_replay_SRC = fuzz/replay_main.c $(SESSION_FUZZ_SRC)
session_fuzz_replay_LIBS = $(SESSION_FUZZ_LIBS)
confirm_state_test_SRC = internal/gateway/confirm_state_test.c internal/gateway/confirm_state.c \
	$(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
confirm_state_test_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS)

# fuzz targets: name, then sources (built with clang -fsanitize=fuzzer)
FUZZ_TARGETS = toml_fuzz jsonrpc_fuzz egress_parse_fuzz egress_addr_fuzz clients_fuzz toml_encode_fuzz session_fuzz
toml_fuzz_SRC = fuzz/toml_fuzz.c $(TOML_SRC) $(BASE_SRC)
toml_encode_fuzz_SRC = fuzz/toml_encode_fuzz.c $(TOML_SRC) $(BASE_SRC)
jsonrpc_fuzz_SRC = fuzz/jsonrpc_fuzz.c internal/jsonrpc/frame.c internal/jsonrpc/message.c $(JSON_SRC) $(BASE_SRC)
jsonrpc_fuzz_LIBS = $(YAJL_LIBS)
clients_fuzz_SRC = fuzz/clients_fuzz.c $(CLIENTS_SRC) $(TOML_SRC) $(JSON_SRC) $(BASE_SRC)
clients_fuzz_LIBS = $(YAJL_LIBS)
# a whole session, on stdio and through the listener's request path (with
# fake_mhd.c for libmicrohttpd): docs/2026-12-02-session-fuzzer.md
SESSION_FUZZ_SRC = fuzz/session_fuzz.c fuzz/session_fuzz_program.c fuzz/session_fuzz_listen.c \
	fuzz/fake_mhd.c \
	internal/gateway/gateway_fakes.c $(LISTEN_SRC) $(GATEWAY_SRC) $(MCP_SRC) $(AUDIT_SRC) \
	$(REMOTE_SRC) $(KEYCHAIN_SRC) $(CONTAINER_SRC) $(PROC_SRC) $(JSONRPC_SRC) $(CONFIG_SRC) \
	$(JSON_SRC) $(TOML_SRC) $(BASE_SRC)
SESSION_FUZZ_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) $(CURL_LIBS) $(PSL_LIBS) -lpthread
session_fuzz_SRC = $(SESSION_FUZZ_SRC) fuzz/session_fuzz_mutator.c
session_fuzz_LIBS = $(SESSION_FUZZ_LIBS)

# C files that make lint checks (everything we wrote)
LINT_SRC = $(sort $(MCPGATE_SRC) $(EGRESS_SRC) $(LAUNCH_SRC) $(TESTING_SRC) internal/toml/toml_decode.c $(FAKES_SRC) $(FAKES_HDR) $(MINRELAY_SRC) $(FLOOR_SRC) \
	   $(foreach t,$(UNIT_TESTS),$($(t)_SRC)) $(foreach f,$(FUZZ_TARGETS),$($(f)_SRC)))
LINT_HDR = $(LAUNCH_HDR) internal/base/err.h internal/jsonrpc/jsonrpc.h internal/base/xalloc.h internal/base/buf.h \
	   internal/base/num.h internal/base/log.h internal/base/utf8.h \
	   internal/base/cleanup.h internal/base/testing.h internal/base/strv.h internal/base/suggest.h internal/base/fs.h internal/base/quote.h internal/base/tree.h \
	   internal/toml/toml.h internal/toml/toml-internal.h internal/toml/toml_encode.h \
	   internal/toml/toml_change.h \
	   internal/json/json.h internal/json/shape.h internal/config/config.h internal/config/config-internal.h internal/config/edit.h cmd/mcpgate/commands.h \
	   internal/proc/proc.h internal/proc/loop.h \
	   cmd/mcpgate/opts.h cmd/mcpgate/add.h internal/container/container.h internal/container/swarm.h \
	   internal/container/container-internal.h internal/audit/audit.h \
	   internal/mcp/mcp.h internal/mcp/manifest.h internal/gateway/launch.h internal/gateway/gateway.h internal/gateway/gateway-internal.h internal/gateway/confirm_state.h \
	   internal/gateway/gateway_fakes.h fuzz/session_fuzz.h \
	   cmd/mcpgate/setup.h cmd/mcpgate/store.h cmd/mcpgate/progress.h cmd/mcpgate/review.h internal/keychain/keychain.h internal/keychain/keychain-internal.h internal/pack/pack.h internal/pack/pack-internal.h \
	   internal/debian/debian.h internal/debian/debian-internal.h \
	   internal/remote/remote.h internal/listen/listen.h internal/listen/listen-internal.h \
	   internal/clients/clients.h internal/clients/clients-internal.h \
	   $(EGRESS_HDR)

obj = $(patsubst %.c,$(B)/%.o,$(1))

# ---- fakes: mcpgate-probe (static, musl, libc only) and fake-runtime -------
MUSL_CC ?= musl-gcc
FAKES_CFLAGS = -std=gnu11 -O2 -Wall -Wextra -Werror -Wshadow -Wformat=2 \
	       -Wmissing-prototypes -Wstrict-prototypes
PROBE_SRC = fakes/probe.c fakes/probe_json.c
FAKE_RUNTIME_SRC = fakes/fake_runtime.c fakes/probe_json.c
FAKES_SRC = fakes/probe.c fakes/probe_json.c fakes/fake_runtime.c fakes/mcp_http.c
MCP_HTTP_SRC = fakes/mcp_http.c fakes/probe_json.c
FAKES_HDR = fakes/probe_json.h

# ---- bench: the minimal relay bench/contained.py measures mcpgate against ---
MINRELAY_SRC = bench/minrelay.c
# ---- bench: the least HTTP proxy, bench/egress.py's floor for mcpgate-egress ---
FLOOR_SRC = bench/floor.c

# ---- egress: mcpgate-egress, the static proxy (musl, libc only) ------------
# egress/ includes nothing from internal/: it links statically against musl alone
EGRESS_LIB_SRC = egress/addr.c egress/parse.c egress/tls.c egress/log.c egress/opts.c
EGRESS_SRC = egress/main.c egress/relay.c $(EGRESS_LIB_SRC)
EGRESS_HDR = egress/addr.h egress/parse.h egress/egress.h
EGRESS_CFLAGS = -std=gnu11 $(WARN) -D_FORTIFY_SOURCE=2 -O2 -I.
egress_test_SRC = egress/egress_test.c $(EGRESS_LIB_SRC) $(TESTING_SRC) internal/base/xalloc.c
egress_parse_fuzz_SRC = fuzz/egress_parse_fuzz.c egress/parse.c egress/addr.c egress/tls.c
egress_addr_fuzz_SRC = fuzz/egress_addr_fuzz.c egress/addr.c

# ---- launch: mcpgate-launch, a secret's way into a server (musl, libc only) --
LAUNCH_SRC = launch/main.c launch/util.c launch/listen.c launch/connect.c launch/check.c
LAUNCH_HDR = launch/launch.h launch/launch-internal.h

# ---- targets ---------------------------------------------------------------
.PHONY: all check test test-swarm unit-deps run-tests integration lint fuzz fuzz-run fuzz-session demo install clean bench \
	everything-image bench-egress bench-add bench-listen bench-slow bench-swarm

all: $(BIN)/mcpgate $(BIN)/toml-decode mcpgate-egress mcpgate-launch

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) $(YAJL_CFLAGS) -c -o $@ $<

$(BIN)/mcpgate: $(call obj,$(MCPGATE_SRC))
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $^ $(MCPGATE_LIBS)
$(BIN)/toml-decode: $(call obj,$(TOML_DECODE_SRC))
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $^

define unit_rule
$(B)/tests/$(1): $$(call obj,$$($(1)_SRC))
	@mkdir -p $$(dir $$@)
	@echo "  LD      $$@"
	@$$(CC) $$(ALL_LDFLAGS) -o $$@ $$^ $$($(1)_LIBS)
endef
$(foreach t,$(UNIT_TESTS),$(eval $(call unit_rule,$(t))))

UNIT_PROGRAMS = $(addprefix $(B)/tests/,$(UNIT_TESTS)) tests/toml-test.sh tests/cli_test.sh \
	fakes/fakes_test.sh tests/serve_test.py tests/startfail_test.py tests/secrets_test.py tests/relay_test.py tests/secret_cli_test.sh egress/cases_test.sh \
	tests/remote_test.py tests/platform_test.py tests/pull_test.py tests/stage_test.py tests/add_test.py tests/add_npmrc_test.py tests/client_test.sh \
	tests/listen_test.py tests/listen_conformance_test.py tests/hostile_test.py tests/confirm_test.py tests/suffix_list_test.sh tests/never_wait_test.py tests/pressure_test.py \
	tests/config_write_test.py tests/daily_test.py tests/store_test.py tests/add_pypi_test.py tests/update_test.py tests/archive_test.py tests/logs_test.py \
	tests/revisions_test.py tests/connect_test.py \
	tests/slow_clients_test.py \
	tests/launch_net_test.sh
# the session fuzzer runs for SESSION_FUZZ_SECONDS (120) in make test, not in make check
INTEGRATION_PROGRAMS = tests/integration/run.sh tests/conformance/run.sh tests/conformance/run-2026.sh \
	tests/session_fuzz_test.sh

unit-deps: $(BIN)/mcpgate $(BIN)/toml-decode $(addprefix $(B)/tests/,$(UNIT_TESTS)) fakes

# RUN names the test programs; the runner's last line totals them all
# TESTS=unit|integration|all picks the programs; they are named here, in the
# make that runs them, so $(B) is the sanitized build's. The unit programs
# need no network, and show it: the runner takes it away from them where it
# can (--no-network: as root, each in a network namespace with loopback
# alone); the integration programs need it
TESTS ?= unit
RUN = $(if $(filter unit all,$(TESTS)),--no-network $(UNIT_PROGRAMS)) \
      $(if $(filter integration all,$(TESTS)),--network $(INTEGRATION_PROGRAMS))
run-tests: unit-deps
	@MCPGATE=$(BIN)/mcpgate TOML_DECODE=$(BIN)/toml-decode FAKES=build/fakes \
	  PROBE=build/fakes/mcpgate-probe tests/run-unit $(RUN)

check:
	@$(MAKE) --no-print-directory SAN=1 run-tests

# the sidecar runs the static release proxy: a sanitized build cannot run in
# an image that holds nothing but it
integration:
	@$(MAKE) --no-print-directory SAN=0 mcpgate-egress build/fuzz/session_fuzz
	@MCPGATE_TESTS_NETWORK=1 $(MAKE) --no-print-directory SAN=1 run-tests TESTS=integration

# the swarm test alone (tests/integration/run.sh runs it too, once)
test-swarm: all
	@$(MAKE) --no-print-directory SAN=1 unit-deps
	@MCPGATE_CONTAINER_TESTS=1 MCPGATE=$(CURDIR)/build/san/mcpgate PROBE=$(CURDIR)/build/fakes/mcpgate-probe \
		LAUNCH=$(CURDIR)/mcpgate-launch python3 tests/integration/swarm/swarm_test.py

# the conformance suites come from the npm registry first (what a unit test,
# listen_conformance_test.py, then runs with no network); a failed install
# is the tests' to report, skipped or (MCPGATE_CONFORMANCE_REQUIRED=1) failed
test:
	@$(MAKE) --no-print-directory SAN=0 mcpgate-egress build/fuzz/session_fuzz
	-@tests/conformance/run.sh --install-only --era 2025-11-25 >/dev/null 2>&1
	-@tests/conformance/run.sh --install-only --era 2026-07-28 >/dev/null 2>&1
	@MCPGATE_TESTS_NETWORK=1 $(MAKE) --no-print-directory SAN=1 run-tests TESTS=all

build/fakes/mcpgate-probe: $(PROBE_SRC) $(FAKES_HDR)
	@mkdir -p $(dir $@)
	@echo "  MUSL    $@"
	@$(MUSL_CC) -static $(FAKES_CFLAGS) -o $@ $(PROBE_SRC)
build/fakes/fake-runtime: $(FAKE_RUNTIME_SRC) $(FAKES_HDR)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(FAKES_CFLAGS) -o $@ $(FAKE_RUNTIME_SRC)
build/fakes/mcp-http: $(MCP_HTTP_SRC) $(FAKES_HDR)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(FAKES_CFLAGS) -o $@ $(MCP_HTTP_SRC)
build/bench/minrelay: $(MINRELAY_SRC)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(FAKES_CFLAGS) -o $@ $(MINRELAY_SRC)
# built like mcpgate-egress (static, musl, the same flags), so that the two
# differ in what they do and not in how they were compiled
build/bench/floor: $(FLOOR_SRC)
	@mkdir -p $(dir $@)
	@echo "  MUSL    $@"
	@$(MUSL_CC) -static $(EGRESS_CFLAGS) -o $@ $(FLOOR_SRC)
.PHONY: fakes
fakes: build/fakes/mcpgate-probe build/fakes/fake-runtime build/fakes/mcp-http

# mcpgate-egress: the release is static against musl; the sanitized build
# (gcc, ASan+UBSan, make SAN=1) is what egress/cases_test.sh runs
mcpgate-egress: $(EGRESS_SRC) $(EGRESS_HDR)
	@echo "  MUSL    $@"
	@$(MUSL_CC) -static $(EGRESS_CFLAGS) -o $@ $(EGRESS_SRC) -lpthread
build/san/mcpgate-egress: $(patsubst %.c,build/san/%.o,$(EGRESS_SRC))
	@echo "  LD      $@"
	@$(CC) $(ALL_LDFLAGS) -o $@ $^ -lpthread
unit-deps: $(BIN)/mcpgate-egress

# mcpgate-launch runs inside containers (and under the fake runtime in make
# check): always the static release build
mcpgate-launch: $(LAUNCH_SRC) $(LAUNCH_HDR)
	@echo "  MUSL    $@"
	@$(MUSL_CC) -static $(EGRESS_CFLAGS) -o $@ $(LAUNCH_SRC)
unit-deps: mcpgate-launch

# the contained-server benchmarks (bench/README.md): the release build, then a
# table of medians and ratios; MCPGATE_BENCH_RUNTIME=podman|docker adds real containers
bench: fakes build/bench/minrelay
	@$(MAKE) --no-print-directory SAN=0 all
	@MCPGATE=./mcpgate FAKES=build/fakes MINRELAY=build/bench/minrelay python3 bench/contained.py

# runtime = "swarm" beside podman: session start and round trip (root)
bench-swarm: fakes
	@$(MAKE) --no-print-directory SAN=0 all
	@MCPGATE=./mcpgate PROBE=build/fakes/mcpgate-probe LAUNCH=./mcpgate-launch python3 bench/swarm.py

# serve --listen with 1, 10 and 50 HTTP clients of 200 calls each, beside one
# stdio client (bench/README.md): calls/s, p50/p99, memory per session, and
# every answer checked to be its own call's; the fake runtime only
bench-listen: fakes
	@$(MAKE) --no-print-directory SAN=0 all
	@MCPGATE=./mcpgate FAKES=build/fakes python3 bench/listen.py $(LISTEN_BENCH_ARGS)

# the token holder's /health p50/p99 under 1,000 slow connections without the
# token (bench/README.md); the fake runtime only
bench-slow: fakes
	@$(MAKE) --no-print-directory SAN=0 all
	@MCPGATE=./mcpgate FAKES=build/fakes python3 bench/slow_clients.py $(SLOW_BENCH_ARGS)

# the published server-everything as an image in the local registry on 127.0.0.1:5000
# (tests/e2e/build-everything-image.sh); prints localhost:5000/NAME@sha256:... to pin
everything-image: $(BIN)/mcpgate
	@MCPGATE=$(BIN)/mcpgate tests/e2e/build-everything-image.sh

# mcpgate add of three npm servers: add to first answer, and the store's growth
# (the shared node layer); needs npm and the registry; MCPGATE_BENCH_RUNTIME=docker for docker
bench-add: all
	@MCPGATE=./mcpgate python3 bench/add.py --runtime $${MCPGATE_BENCH_RUNTIME:-podman}

# the egress proxy beside tinyproxy and squid (bench/README.md): root, a network
# namespace of its own; 1 GiB downloads, CONNECT handshakes/s, RSS; a table and ratios
bench-egress: mcpgate-egress build/bench/floor
	@MCPGATE_EGRESS=./mcpgate-egress MCPGATE_FLOOR=build/bench/floor python3 bench/egress.py $(EGRESS_BENCH_ARGS)

lint:
	@tests/lint.sh $(LINT_SRC) $(LINT_HDR)

define fuzz_rule
build/fuzz/$(1): $$($(1)_SRC) $$(LINT_HDR)
	@mkdir -p build/fuzz
	$$(CLANG) -std=gnu11 -g -O1 -I. $$(YAJL_CFLAGS) -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $$@ $$($(1)_SRC) $$($(1)_LIBS)
endef
$(foreach f,$(FUZZ_TARGETS),$(eval $(call fuzz_rule,$(f))))

fuzz: $(addprefix build/fuzz/,$(FUZZ_TARGETS))

# one target at a time: make fuzz-run FUZZ=toml_fuzz FUZZ_SECONDS=600
FUZZ ?= toml_fuzz
fuzz-run: build/fuzz/$(FUZZ)
	@mkdir -p build/fuzz/corpus-$(FUZZ) testdata/fuzz/$(FUZZ)
	build/fuzz/$(FUZZ) -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=testdata/fuzz/$(FUZZ)/crash- \
	  build/fuzz/corpus-$(FUZZ) testdata/fuzz/$(FUZZ)

# the session fuzzer (docs/2026-12-02-session-fuzzer.md), its corpus kept in
# build/fuzz/corpus-session_fuzz; a finding is written to
# testdata/fuzz/session_fuzz/crash-*, where it stays as a reproducer
fuzz-session: build/fuzz/session_fuzz
	@mkdir -p build/fuzz/corpus-session_fuzz
	@tmp=$$(mktemp -d /dev/shm/fuzz-session.XXXXXX 2>/dev/null || mktemp -d); \
	TMPDIR=$$tmp nice -n 10 build/fuzz/session_fuzz -max_total_time=$(FUZZ_SECONDS) -timeout=60 \
	  -rss_limit_mb=4096 -close_fd_mask=2 -print_final_stats=1 \
	  -artifact_prefix=testdata/fuzz/session_fuzz/crash- build/fuzz/corpus-session_fuzz \
	  testdata/fuzz/session_fuzz; rc=$$?; rm -rf "$$tmp"; exit $$rc

demo: all
	@scripts/demo

# mcp.toml.example goes where mcpgate's "mcp.toml does not exist" points
# (cfg_example_path(): PREFIX/bin/../share/mcpgate), and mcpgate's public
# suffix list where it reads it (cfg_suffix_list_path(): the same folder)
install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5 \
	  $(DESTDIR)$(PREFIX)/share/mcpgate
	install -m 0755 mcpgate $(DESTDIR)$(PREFIX)/bin/mcpgate
	install -m 0755 mcpgate-egress $(DESTDIR)$(PREFIX)/bin/
	install -m 0755 mcpgate-launch $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/man/mcpgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/mcpgate.1
	install -m 0644 docs/man/mcp.toml.5 $(DESTDIR)$(PREFIX)/share/man/man5/mcp.toml.5
	install -m 0644 mcp.toml.example $(DESTDIR)$(PREFIX)/share/mcpgate/mcp.toml.example
	install -m 0644 third_party/publicsuffix/public_suffix_list.dat $(DESTDIR)$(PREFIX)/share/mcpgate/public_suffix_list.dat

clean:
	rm -rf build mcpgate toml-decode mcpgate-egress mcpgate-launch

-include $(shell find build -name '*.d' -type f 2>/dev/null)
