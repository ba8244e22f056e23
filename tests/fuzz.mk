# fuzz.mk - libFuzzer targets of the wire-protocol decoders (tests/fuzz/),
# included by the top-level Makefile. Needs clang with the libFuzzer runtime
# (Debian: clang, libclang-rt-14-dev).
#   make fuzz         build, then run every target for FUZZ_SECONDS (60),
#                     FUZZ_JOBS (the number of CPUs) at a time; prints one
#                     line "fuzz_NAME: N runs, 0 crashes" per target and exits
#                     non-zero when one crashed
#   make fuzz-build   build only (tests/e2e/fuzz.sh uses it)
#   make fuzz-list    print the target names
# Everything is written under $(BUILD)/fuzz: the binaries, the working corpus
# corpus/NAME/ (generated seeds, tests/fuzz/corpus/NAME/ if any, and what the
# fuzzer found), crash inputs crashes/fuzz_NAME-*, logs logs/fuzz_NAME.log.

FUZZ_CC ?= clang
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= $(shell nproc 2>/dev/null || echo 1)
FUZZ_SAN := -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -g -O1 -std=c11 -D_GNU_SOURCE -Wall -Wextra -fno-omit-frame-pointer -Ilibcommon -MMD -MP
# libFuzzer flags of every run; the corpus folder and the time are added.
FUZZ_FLAGS ?= -timeout=10 -rss_limit_mb=2048 -print_final_stats=1

# One target per payload decoder of proto.h, and "proto" running them all.
FUZZ_TARGETS := proto error info_resp ids_req lookup_req sample_req sample_resp feat_resp label_resp \
	split_resp nodes_req nodes_resp minibatch_req minibatch_resp predict_resp emb_req emb_resp link_req \
	link_resp
FUZZ_BINS := $(FUZZ_TARGETS:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_RUNS := $(FUZZ_TARGETS:%=fuzz-run-%)
FUZZ_LIB_OBJ := $(patsubst %,$(FUZZ_DIR)/obj/libcommon/%.o,proto layout buf sample err dtype)

.PHONY: fuzz fuzz-build fuzz-run fuzz-list $(FUZZ_RUNS)

fuzz: fuzz-build
	@$(MAKE) --no-print-directory -k -j$(FUZZ_JOBS) fuzz-run

fuzz-build: $(FUZZ_BINS) $(FUZZ_DIR)/corpus.stamp

fuzz-run: $(FUZZ_RUNS)

fuzz-list:
	@echo $(FUZZ_TARGETS)

$(FUZZ_DIR)/obj/libcommon/%.o: libcommon/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_SAN) $(FUZZ_CFLAGS) -c -o $@ $<

$(FUZZ_DIR)/obj/fuzz_%.o: tests/fuzz/fuzz_proto.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_SAN) $(FUZZ_CFLAGS) -DFUZZ_DECODER='"$*"' -c -o $@ $<

$(FUZZ_DIR)/fuzz_%: $(FUZZ_DIR)/obj/fuzz_%.o $(FUZZ_LIB_OBJ)
	$(FUZZ_CC) $(FUZZ_SAN) -o $@ $^

# The seed generator links the plain sources (no fuzzer instrumentation).
$(FUZZ_DIR)/make_corpus: tests/fuzz/make_corpus.c libcommon/proto.c libcommon/layout.c libcommon/buf.c libcommon/err.c \
		libcommon/dtype.c libcommon/proto.h libcommon/layout.h libcommon/buf.h libcommon/err.h libcommon/hash.h \
		libcommon/dtype.h
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -fsanitize=address,undefined -fno-sanitize-recover=all $(filter-out -MMD -MP,$(FUZZ_CFLAGS)) \
		-o $@ $(filter %.c,$^)

$(FUZZ_DIR)/corpus.stamp: $(FUZZ_DIR)/make_corpus $(wildcard tests/fuzz/corpus/*/*)
	$(FUZZ_DIR)/make_corpus $(FUZZ_DIR)/corpus
	@for d in tests/fuzz/corpus/*/; do \
		[ -d "$$d" ] || continue; \
		mkdir -p $(FUZZ_DIR)/corpus/$$(basename $$d) && cp $$d* $(FUZZ_DIR)/corpus/$$(basename $$d)/ || exit 1; \
	done
	@touch $@

# One run: the summary line from libFuzzer's log ("Done N runs" when time
# ran out; the last "#N" status line when it stopped on a crash).
$(FUZZ_RUNS): fuzz-run-%: $(FUZZ_DIR)/fuzz_% $(FUZZ_DIR)/corpus.stamp
	@mkdir -p $(FUZZ_DIR)/crashes $(FUZZ_DIR)/logs $(FUZZ_DIR)/corpus/$*
	@log=$(FUZZ_DIR)/logs/fuzz_$*.log; \
	$(FUZZ_DIR)/fuzz_$* $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
		-artifact_prefix=$(FUZZ_DIR)/crashes/fuzz_$*- $(FUZZ_DIR)/corpus/$* >$$log 2>&1; \
	rc=$$?; \
	runs=$$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' $$log | tail -n 1); \
	[ -n "$$runs" ] || runs=$$(sed -n 's/^#\([0-9]*\).*/\1/p' $$log | tail -n 1); \
	if [ $$rc -eq 0 ]; then \
		echo "fuzz_$*: $${runs:-0} runs, 0 crashes"; \
	else \
		art=$$(sed -n 's/.*Test unit written to \(.*\)$$/\1/p' $$log | tail -n 1); \
		echo "fuzz_$*: $${runs:-0} runs, 1 crash (exit $$rc): input $${art:-none saved}, log $$log"; \
		exit 1; \
	fi

# Dependency files are only ever included, never built.
$(FUZZ_DIR)/obj/%.d: ;
-include $(wildcard $(FUZZ_DIR)/obj/*.d $(FUZZ_DIR)/obj/libcommon/*.d)
