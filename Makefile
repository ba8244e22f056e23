# gnn-dist build. `make` builds every binary into build/bin/.
#   make deps   install missing Debian packages (no-op when all are there)
#   make test   deps + build + every test; last line "N passed, N failed"
#   make asan   the same tests on an AddressSanitizer + UBSan build (build-asan/),
#               less the chart's and the alerts' (helm, no C code), the fuzz targets
#               (sanitizer builds in either pass) and the chaos suite's seven timing
#               scenarios and seven repeats (ASAN_REPEATS), which only make test runs (GNN_SAN=1)
#   make demo   the whole system via gnn-local on the synthetic `small` graph: GraphSAGE
#               against a features-only baseline (docs/local.md)
#   make bench  partitioner time and peak memory at ogbn-products scale, the
#               trainer step, the epoch split, inference against sampled
#               evaluation (small, products), products and mag end to end,
#               products link prediction (its training bounded to 10 minutes),
#               distributed sampling throughput against in-process sampling,
#               and importing a 10M-node graph from NumPy against CSV (bench-import)
#   make bench-products  ogbn-products scale end to end: partition, one epoch,
#               validation, the test accuracy by inference; time and memory
#               (tests/bench_products.sh; GNN_BENCH_BUSY=2 beside a busy machine)
#   make bench-mag  the heterogeneous `mag` preset (ogbn-mag's size) end to end:
#               partition, R-GCN against the features-only baseline, the step
#               against gnn-trainer bench --sampler, inference (tests/bench_mag.sh)
#   make bench-mag-restart  a graph store killed mid-epoch at the same size, with
#               embeddings, with and without the stores' log: what it costs the run
#               against an undisturbed one (tests/bench_store_restart.py; about 7 minutes)
#   make bench-link  link prediction at ogbn-products scale: partition with an edge
#               split, GraphSAGE 15,10 on 2 stores, 2 samplers, 2 trainers, inference's
#               AUC/AP/MRR/Hits; time per stage and memory per process (tests/bench_link.sh;
#               a products epoch takes hours on 2 cores: GNN_BENCH_TRAIN_BUDGET_S=600 bounds it)
#   make bench-import  a random 10M-node graph in OGB's binary layout (NumPy: data.npz,
#               node_feat.npy) against its CSV layout: partition time, peak RSS, the
#               same bytes out; then 5.1 GB of .npy features partitioned in a memory
#               cgroup limited to a quarter of that (root, cgroup v1; else SKIP).
#               12 GB of scratch under $TMPDIR, 4 minutes (tests/bench_import.sh)
#   make test-cluster  the Helm chart on a real Kubernetes (tests/cluster/run.sh)
#   make test-net  network faults between emulated hosts (namespaces; root):
#               partitions, a lost node, packet loss (tests/net/netfaults.sh)
#   make bench-net  the papers100M cost model's check point: synthetic `medium` on
#               emulated hosts, predicted against measured epoch time under a
#               bandwidth cap (tests/net/costcheck.py; root; about 5 minutes)
BUILD ?= build
.DEFAULT_GOAL := all
# The builds that test, demo and bench targets start use every core, unless
# make was given -j itself (deferred: MAKEFLAGS has -j only in recipes).
JOBS = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(shell nproc))
CC ?= cc
OPENBLAS_PC := /usr/lib/x86_64-linux-gnu/openblas-pthread/pkgconfig

# Debian packages the build, the tests and the demo need (python3: the
# cluster test's helpers; universal-ctags: tests/e2e/layout.sh's function
# lengths; iproute2: `ip netns` in chart_run.sh, the
# cluster test and, with iptables, the network-fault scenarios (tests/net);
# openssl: tls.sh's certificates).
DEB_PKGS := build-essential pkg-config libnng-dev libmicrohttpd-dev libmetis-dev \
	libopenblas-dev libjansson-dev zlib1g-dev prometheus curl jq time libclang-rt-14-dev \
	python3 python3-numpy iproute2 iptables openssl libgnutls28-dev libzip-dev universal-ctags

PKG_CFLAGS = $(shell PKG_CONFIG_PATH=$(OPENBLAS_PC) pkg-config --cflags jansson libmicrohttpd gnutls zlib libzip openblas 2>/dev/null)
PKG_LIBS = $(shell PKG_CONFIG_PATH=$(OPENBLAS_PC) pkg-config --libs jansson libmicrohttpd gnutls zlib libzip openblas 2>/dev/null)

OPT ?= -O2 -g
CFLAGS += -std=c11 -D_GNU_SOURCE $(OPT) -Wall -Wextra -Wpointer-arith -Wshadow -Wstrict-prototypes \
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
# its .c files and those of its subfolders (services/trainer/model, ...);
# everything but main.c also goes into build/lib/libNAME.a, which the unit
# tests link (so non-static names must not collide across services: prefix
# them with the service's name). A service's sources see the headers of all
# its folders, so no two of its files may share a name (nor may two
# services': tests/e2e/layout.sh).
BIN_partitioner := gnn-partition
BIN_graphstore := gnn-graphstore
BIN_sampler := gnn-sampler
BIN_cli := gnn-cli
BIN_trainer := gnn-trainer
BIN_local := gnn-local
SERVICES := $(notdir $(patsubst %/,%,$(wildcard services/*/)))
BINS := $(foreach s,$(SERVICES),$(BUILD)/bin/$(BIN_$(s)))
SVC_LIBS := $(foreach s,$(SERVICES),$(BUILD)/lib/lib$(s).a)

svc_dirs = services/$(1) $(patsubst %/,%,$(wildcard services/$(1)/*/))
svc_includes = $(foreach d,$(call svc_dirs,$(1)),-I$(d))
define service_rules
$(1)_OBJ := $$(patsubst %.c,$$(BUILD)/obj/%.o,$$(filter-out services/$(1)/main.c,$$(foreach d,$$(call svc_dirs,$(1)),$$(wildcard $$(d)/*.c))))
$$(BUILD)/obj/services/$(1)/%.o: CFLAGS += $$(call svc_includes,$(1))
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

.PHONY: all deps test test-net asan demo bench bench-products bench-mag bench-mag-restart bench-link bench-import bench-net bench-replicas clean
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

# Each unit test sees libcommon and the headers of the service it tests
# only (test_NAME or test_NAME_*: services/NAME), so a same-named header of
# another service cannot be picked up by search order. test_graphstore also
# checks gnn-cli's parsers; test_synth is the partitioner's.
TEST_SVC_test_graphstore := graphstore cli
TEST_SVC_test_synth := partitioner
test_services = $(or $(TEST_SVC_$(1)),$(filter $(SERVICES),$(word 2,$(subst _, ,$(1)))))
$(BUILD)/obj/tests/unit/%.o: CFLAGS += $(foreach s,$(call test_services,$(notdir $*)),$(call svc_includes,$(s))) -Itests/unit

test: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/run.sh $(BUILD)

# The network-fault scenarios, once, on the plain build (tests/net).
test-net: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/net/netfaults.sh

asan: deps
	@$(MAKE) --no-print-directory $(JOBS) BUILD=build-asan SAN=1 OPT="-O1 -g" all
	@GNN_SAN=1 ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 UBSAN_OPTIONS=print_stacktrace=1 \
		tests/run.sh build-asan

demo: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/demo.sh $(BUILD)

bench: deps
	@missing=""; for p in python3-torch python3-numpy; do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "make bench: installing$$missing (the PyTorch side of tests/bench_trainer.sh)"; \
		SUDO=; [ "$$(id -u)" = 0 ] || SUDO=sudo; \
		{ $$SUDO apt-get update -qq && \
		  DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq --no-install-recommends $$missing >/dev/null; } || \
		echo "make bench: apt-get failed for:$$missing (the PyTorch comparison will be skipped)" >&2; \
	fi
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/bench.sh $(BUILD)
	@tests/bench_sampling.sh $(BUILD)
	@tests/bench_tls.sh $(BUILD)
	@tests/bench_import.sh $(BUILD)
	@GNN_BUILD=$(BUILD) timeout --kill-after=10 600 python3 tests/net/replica_bench.py

bench-products: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/bench_products.sh $(BUILD)

bench-mag: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/bench_mag.sh $(BUILD)

bench-mag-restart: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@timeout --kill-after=10 3000 python3 tests/bench_store_restart.py $(BUILD)

bench-link: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/bench_link.sh $(BUILD)

bench-import: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@tests/bench_import.sh $(BUILD)

# The cost model's check point (docs/scale.md, "ogbn-papers100M: a cost
# model"): not in make test (root, namespaces, about 5 minutes).
bench-net: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@GNN_BUILD=$(BUILD) timeout --kill-after=10 900 python3 tests/net/costcheck.py

# Graph store replicas for throughput (docs/reliability.md, "Graph store
# replicas"): R = 2 against R = 1 with each store's link capped; root,
# namespaces (a SKIP line without), about 1 minute. Part of make bench.
bench-replicas: deps
	@$(MAKE) --no-print-directory $(JOBS) all
	@GNN_BUILD=$(BUILD) timeout --kill-after=10 600 python3 tests/net/replica_bench.py

# ---- container image (docker/, charts/gnn-dist; docker/README.md) ----------
# make images       builds $(IMAGE):$(IMAGE_TAG) from docker/Dockerfile
#                   (docker/build-image.sh): with docker when its engine
#                   answers, else podman (installed with apt-get when missing,
#                   as root or with sudo), on $(IMAGE_BASE) when the engine has
#                   it or pulls it within $(IMAGE_PULL_TIMEOUT) s, else on a
#                   stand-in made by debootstrap; it logs both choices
# make test-images  builds it the way a machine without registry access can
#                   (tests/images.sh) and runs every binary's --help inside
IMAGE ?= gnn-dist
IMAGE_TAG ?= $(shell sed -n 's/^appVersion: *"*\([^"]*\)"*$$/\1/p' charts/gnn-dist/Chart.yaml)
IMAGE_ENGINE ?=
IMAGE_BASE ?= debian:bookworm-slim
IMAGE_PULL_TIMEOUT ?= 60
# podman as root on a host with lowered limits needs these; harmless elsewhere.
PODMAN_FLAGS ?= --network host --ulimit nofile=1024:1024 --ulimit nproc=1000:1000
IMAGE_FLAGS ?=
# IMAGE_DEBOOTSTRAP=1: always make $(IMAGE_BASE) from Debian's archive
# (docker/debian-base.sh); 0: never; auto: when it cannot be pulled.
IMAGE_DEBOOTSTRAP ?= auto

.PHONY: images test-images test-cluster
images:
	@BUILD='$(BUILD)' IMAGE='$(IMAGE)' IMAGE_TAG='$(IMAGE_TAG)' IMAGE_ENGINE='$(IMAGE_ENGINE)' \
		IMAGE_BASE='$(IMAGE_BASE)' IMAGE_PULL_TIMEOUT='$(IMAGE_PULL_TIMEOUT)' PODMAN_FLAGS='$(PODMAN_FLAGS)' \
		IMAGE_FLAGS='$(IMAGE_FLAGS)' IMAGE_DEBOOTSTRAP='$(IMAGE_DEBOOTSTRAP)' docker/build-image.sh

test-images:
	@tests/images.sh $(BUILD)

# make test-cluster  the chart with default values on a real Kubernetes: the
#                    cluster in $$KUBECONFIG, else ../shared/k8s (brought up
#                    and down again; root); day-2 operations, Prometheus
#                    (tests/cluster/run.sh, docs/kubernetes.md)
test-cluster: deps
	@tests/cluster/run.sh $(BUILD)

clean:
	rm -rf build build-asan

-include tests/fuzz.mk
-include $(shell find $(BUILD)/obj -name '*.d' 2>/dev/null)
