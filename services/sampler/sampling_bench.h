/* sampling_bench.h - `gnn-sampler bench`: the sampling benchmark's in-process
 * reference. It builds minibatches with the same core (core.h) the service
 * runs, over the partitions mapped into this process (local_backend.h) instead of
 * graph stores over the network, and prints their rate. tests/bench_sampling.sh
 * runs it next to the distributed run and prints the ratio. */
#ifndef SMP_BENCH_H
#define SMP_BENCH_H

#include <stdint.h>

#include "layout.h"

/* Parses a fanout text ("15,10,5", or per relation: fanouts.h) for the
 * graph of schema sc into *fanouts (malloc'd, the caller's: num_layers x
 * num_rels, layer-major) and *num_layers; each value -1, 0 or
 * 1..GNN_PROTO_MAX_FANOUT, no layer all 0. Returns GNN_EINVAL (logged)
 * otherwise. */
int smp_parse_fanouts(const char *text, const struct gnn_schema *sc, int32_t **fanouts, uint32_t *num_layers);

/* Runs the subcommand: argv[0] is "bench". Returns the exit status. */
int smp_bench_main(int argc, char **argv);

#endif
