# mcpgate build. Every source file is named here; nothing is found by wildcard.
#
#   make               mcpgate and toml-decode, with the warning wall as errors
#   make check         every unit test under ASan+UBSan, then toml-test; last line "N passed, N failed"
#   make test          the README's test command: check, then the runtime integration tests
#                      (they report skipped unless MCPGATE_CONTAINER_TESTS=1)
#   make lint          clang-format check and the banned-function check
#   make fuzz          fuzz targets (clang -fsanitize=fuzzer); make fuzz-run FUZZ_SECONDS=N
#   make demo          the demo session
#   make install PREFIX=/usr/local

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

# ---- sources, one module a line -------------------------------------------
BASE_SRC = internal/base/err.c internal/base/xalloc.c internal/base/buf.c \
           internal/base/num.c internal/base/log.c internal/base/utf8.c \
           internal/base/strv.c
TESTING_SRC = internal/base/testing.c
TOML_SRC = internal/toml/toml.c
JSON_SRC = internal/json/json.c internal/json/canonical.c
JSONRPC_SRC = internal/jsonrpc/frame.c internal/jsonrpc/message.c internal/jsonrpc/peer.c
CONFIG_SRC = internal/config/config.c internal/config/config_check.c
PROC_SRC = internal/proc/spawn.c internal/proc/loop.c
CONTAINER_SRC = internal/container/container.c internal/container/ctr_cli.c
AUDIT_SRC = internal/audit/audit.c
MCP_SRC = internal/mcp/mcp_client.c
GATEWAY_SRC = internal/gateway/session.c internal/gateway/server.c internal/gateway/client.c
CMD_SRC = cmd/mcpgate/main.c cmd/mcpgate/help.c cmd/mcpgate/opts.c cmd/mcpgate/setup.c \
          cmd/mcpgate/check.c cmd/mcpgate/list.c cmd/mcpgate/pull.c cmd/mcpgate/sweep.c \
          cmd/mcpgate/serve.c

MCPGATE_SRC = $(CMD_SRC) $(GATEWAY_SRC) $(MCP_SRC) $(AUDIT_SRC) $(CONTAINER_SRC) $(PROC_SRC) \
              $(JSONRPC_SRC) $(CONFIG_SRC) $(JSON_SRC) $(TOML_SRC) $(BASE_SRC)
MCPGATE_LIBS = $(YAJL_LIBS) $(SODIUM_LIBS) -lpthread
TOML_DECODE_SRC = internal/toml/toml_decode.c $(TOML_SRC) $(BASE_SRC)

# unit tests: name, then its sources, then the libraries it links
UNIT_TESTS = base_test toml_test json_test config_test proc_test container_test jsonrpc_test
base_test_SRC = internal/base/base_test.c $(BASE_SRC) $(TESTING_SRC)
toml_test_SRC = internal/toml/toml_test.c $(TOML_SRC) $(BASE_SRC) $(TESTING_SRC)
json_test_SRC = internal/json/json_test.c $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
json_test_LIBS = $(YAJL_LIBS)
jsonrpc_test_SRC = internal/jsonrpc/jsonrpc_test.c $(JSONRPC_SRC) $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
jsonrpc_test_LIBS = $(YAJL_LIBS)
container_test_SRC = internal/container/container_test.c $(CONTAINER_SRC) $(CONFIG_SRC) $(TOML_SRC) \
	$(PROC_SRC) $(JSON_SRC) $(BASE_SRC) $(TESTING_SRC)
container_test_LIBS = $(YAJL_LIBS)
config_test_SRC = internal/config/config_test.c $(CONFIG_SRC) $(TOML_SRC) $(BASE_SRC) $(TESTING_SRC)
proc_test_SRC = internal/proc/proc_test.c $(PROC_SRC) $(BASE_SRC) $(TESTING_SRC)

# fuzz targets: name, then sources (built with clang -fsanitize=fuzzer)
FUZZ_TARGETS = toml_fuzz jsonrpc_fuzz
toml_fuzz_SRC = fuzz/toml_fuzz.c $(TOML_SRC) $(BASE_SRC)
jsonrpc_fuzz_SRC = fuzz/jsonrpc_fuzz.c internal/jsonrpc/frame.c internal/jsonrpc/message.c $(JSON_SRC) $(BASE_SRC)
jsonrpc_fuzz_LIBS = $(YAJL_LIBS)

# C files that make lint checks (everything we wrote)
LINT_SRC = $(sort $(MCPGATE_SRC) $(TESTING_SRC) internal/toml/toml_decode.c $(FAKES_SRC) $(FAKES_HDR) \
	   $(foreach t,$(UNIT_TESTS),$($(t)_SRC)) $(foreach f,$(FUZZ_TARGETS),$($(f)_SRC)))
LINT_HDR = internal/base/err.h internal/jsonrpc/jsonrpc.h internal/base/xalloc.h internal/base/buf.h \
	   internal/base/num.h internal/base/log.h internal/base/utf8.h \
	   internal/base/cleanup.h internal/base/testing.h internal/base/strv.h internal/toml/toml.h \
	   internal/json/json.h internal/config/config.h cmd/mcpgate/commands.h \
	   internal/proc/proc.h internal/proc/loop.h \
	   cmd/mcpgate/opts.h internal/container/container.h \
	   internal/container/container-internal.h internal/audit/audit.h \
	   internal/mcp/mcp.h internal/gateway/gateway.h internal/gateway/gateway-internal.h \
	   cmd/mcpgate/setup.h

obj = $(patsubst %.c,$(B)/%.o,$(1))

# ---- fakes: mcpgate-probe (static, musl, libc only) and fake-runtime -------
MUSL_CC ?= musl-gcc
FAKES_CFLAGS = -std=gnu11 -O2 -Wall -Wextra -Werror -Wshadow -Wformat=2 \
	       -Wmissing-prototypes -Wstrict-prototypes
PROBE_SRC = fakes/probe.c fakes/probe_json.c
FAKE_RUNTIME_SRC = fakes/fake_runtime.c fakes/probe_json.c
FAKES_SRC = fakes/probe.c fakes/probe_json.c fakes/fake_runtime.c
FAKES_HDR = fakes/probe_json.h

# ---- targets ---------------------------------------------------------------
.PHONY: all check test unit-deps run-tests integration lint fuzz fuzz-run demo install clean

all: $(BIN)/mcpgate $(BIN)/toml-decode

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
	fakes/fakes_test.sh tests/serve_test.py
INTEGRATION_PROGRAMS = tests/integration/run.sh

unit-deps: $(BIN)/mcpgate $(BIN)/toml-decode $(addprefix $(B)/tests/,$(UNIT_TESTS)) fakes

# RUN names the test programs; the runner's last line totals them all
RUN = $(UNIT_PROGRAMS)
run-tests: unit-deps
	@MCPGATE=$(BIN)/mcpgate TOML_DECODE=$(BIN)/toml-decode FAKES=build/fakes \
	  PROBE=build/fakes/mcpgate-probe tests/run-unit $(RUN)

check:
	@$(MAKE) --no-print-directory SAN=1 run-tests

integration:
	@$(MAKE) --no-print-directory SAN=1 run-tests RUN="$(INTEGRATION_PROGRAMS)"

test:
	@$(MAKE) --no-print-directory SAN=1 run-tests RUN="$(UNIT_PROGRAMS) $(INTEGRATION_PROGRAMS)"

build/fakes/mcpgate-probe: $(PROBE_SRC) $(FAKES_HDR)
	@mkdir -p $(dir $@)
	@echo "  MUSL    $@"
	@$(MUSL_CC) -static $(FAKES_CFLAGS) -o $@ $(PROBE_SRC)
build/fakes/fake-runtime: $(FAKE_RUNTIME_SRC) $(FAKES_HDR)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $(FAKES_CFLAGS) -o $@ $(FAKE_RUNTIME_SRC)
.PHONY: fakes
fakes: build/fakes/mcpgate-probe build/fakes/fake-runtime

lint:
	@tests/lint.sh $(LINT_SRC) $(LINT_HDR)

define fuzz_rule
build/fuzz/$(1): $$($(1)_SRC) $$(LINT_HDR)
	@mkdir -p build/fuzz
	$$(CLANG) -std=gnu11 -g -O1 -I. -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all -o $$@ $$($(1)_SRC) $$($(1)_LIBS)
endef
$(foreach f,$(FUZZ_TARGETS),$(eval $(call fuzz_rule,$(f))))

fuzz: $(addprefix build/fuzz/,$(FUZZ_TARGETS))

# one target at a time: make fuzz-run FUZZ=toml_fuzz FUZZ_SECONDS=600
FUZZ ?= toml_fuzz
fuzz-run: build/fuzz/$(FUZZ)
	@mkdir -p build/fuzz/corpus-$(FUZZ) testdata/fuzz/$(FUZZ)
	build/fuzz/$(FUZZ) -max_total_time=$(FUZZ_SECONDS) -artifact_prefix=testdata/fuzz/$(FUZZ)/crash- \
	  build/fuzz/corpus-$(FUZZ) testdata/fuzz/$(FUZZ)

demo: all
	@scripts/demo

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man5
	install -m 0755 mcpgate $(DESTDIR)$(PREFIX)/bin/mcpgate
	install -m 0644 docs/man/mcpgate.1 $(DESTDIR)$(PREFIX)/share/man/man1/mcpgate.1
	install -m 0644 docs/man/mcp.toml.5 $(DESTDIR)$(PREFIX)/share/man/man5/mcp.toml.5

clean:
	rm -rf build mcpgate toml-decode

-include $(shell find build -name '*.d' 2>/dev/null)
