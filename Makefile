# gnn-dist build. `make` builds every binary into build/bin/.
#   make deps   install missing Debian packages (no-op when all are there)
#   make test   deps + build + every test; last line "N passed, N failed"
#   make asan   the same tests on an AddressSanitizer + UBSan build (build-asan/)
#   make demo   partition the synthetic `small` graph and print its statistics
#   make bench  partitioner time and peak memory at ogbn-products scale, and
#               distributed sampling throughput against in-process sampling
BUILD ?= build
.DEFAULT_GOAL := all
CC ?= cc
OPENBLAS_PC := /usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig

# Debian packages the build, the tests and the demo need.
DEB_PKGS := build-essential pkg-config libnng-dev libmicrohttpd-dev libmetis-dev \
	libopenblas-dev libjansson-dev zlib1g-dev prometheus curl jq time libclang-rt-14-dev

PKG_CFLAGS = $(shell PKG_CONFIG_PATH=$(OPENBLAS_PC) pkg-config --cflags jansson libmicrohttpd zlib openblas 2>/dev/null)
PKG_LIBS = $(shell PKG_CONFIG_PATH=$(OPENBLAS_PC) pkg-config --libs jansson libmicrohttpd zlib openblas 2>/dev/null)

OPT ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Wshadow -Wstrict-prototypes \
	-Wno-missing-field-initializers -pthread -MMD -MP -Ilibcommon $(PKG_CFLAGS)
LDLIBS += $(PKG_LIBS) -lnng -lmetis -lm -pthread
ifeq ($(SAN),1)
CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
LDFLAGS += -fsanitize=address,undefined
endif

COMMON_SRC := $(wildcard libcommon/*.c)
COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/obj/%.o)
COMMON_LIB := $(BUILD)/lib/libgnncommon.a

# Every folder services/NAME builds one binary, build/bin/$(BIN_NAME), from
# its .c files; everything but main.c also goes into build/lib/libNAME.a,
# which the unit tests link (so non-static names must not collide across
# services: prefix them with the service's name).
BIN_partitioner := gnn-partition
BIN_graphstore := gnn-graphstore
BIN_sampler := gnn-sampler
BIN_cli := gnn-cli
BIN_trainer := gnn-trainer
SERVICES := $(notdir $(patsubst %/,%,$(wildcard services/*/)))
BINS := $(foreach s,$(SERVICES),$(BUILD)/bin/$(BIN_$(s)))
SVC_LIBS := $(foreach s,$(SERVICES),$(BUILD)/lib/lib$(s).a)

define service_rules
$(1)_OBJ := $$(patsubst %.c,$$(BUILD)/obj/%.o,$$(filter-out services/$(1)/main.c,$$(wildcard services/$(1)/*.c)))
$$(BUILD)/lib/lib$(1).a: $$($(1)_OBJ)
	@mkdir -p $$(dir $$@)
	$$(AR) rcs $$@ $$^
$$(BUILD)/bin/$$(BIN_$(1)): $$(BUILD)/obj/services/$(1)/main.o $$(BUILD)/lib/lib$(1).a $$(COMMON_LIB)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(LDFLAGS) -o $$@ $$^ $$(LDLIBS)
endef
$(foreach s,$(SERVICES),$(eval $(call service_rules,$(s))))

UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tests/%)

.PHONY: all deps test asan demo bench clean
.SECONDARY:
all: $(BINS) $(UNIT_BINS) $(TOOL_BINS)

deps:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make deps: installing$$missing"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		$$SUDO apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null || \
		{ echo "make deps: apt-get failed for:$$missing" >&2; exit 1; }; \
	fi

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

$(COMMON_LIB): $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(BUILD)/tests/test_%: $(BUILD)/obj/tests/unit/test_%.o $(SVC_LIBS) $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/obj/tests/tools/%.o $(COMMON_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/obj/tests/unit/%.o: CFLAGS += $(foreach s,$(SERVICES),-Iservices/$(s)) -Itests/unit

test: deps
	@$(MAKE) --no-print-directory all
	@tests/run.sh $(BUILD)

asan: deps
	@$(MAKE) --no-print-directory BUILD=build-asan SAN=1 OPT="-O1 -g" all
	@ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		tests/run.sh build-asan

demo: deps
	@$(MAKE) --no-print-directory all
	@tests/demo.sh $(BUILD)

bench: deps
	@$(MAKE) --no-print-directory all
	@tests/bench.sh $(BUILD)
	@tests/bench_sampling.sh $(BUILD)

clean:
	rm -rf build build-asan

-include tests/fuzz.mk
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
