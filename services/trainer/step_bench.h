/* step_bench.h - `gnn-trainer bench`: the training step's speed on synthetic
 * blocks against OpenBLAS's sgemm peak measured in the same run (and, from
 * tests/bench_trainer.sh, against PyTorch on the same blocks). */
#ifndef TR_BENCH_H
#define TR_BENCH_H

/* Parses its own options (argv[0] is "bench"), runs, prints its report to
 * stdout; returns the process exit status (0, or 2 on a usage error). */
int tr_bench_main(int argc, char **argv);

#endif
