/* model_options.h - `gnn-trainer options`: the model table (libcommon/
 * modelcfg.h) for people and tools: as JSON (every row, and the registered
 * models), or as the Helm chart's trainer flags (the generated
 * charts/gnn-dist/templates/_model.tpl, which tests/e2e/chart.sh compares
 * with this output). */
#ifndef TR_MODEL_OPTIONS_H
#define TR_MODEL_OPTIONS_H

/* argv[0] is "options". Output on stdout; exit status. */
int tr_options_main(int argc, char **argv);

#endif
