/* synth_mag.h - the heterogeneous synthetic presets (synth_mag.c; the
 * model is the "mag" section of docs/synthetic.md), which synth.c's
 * preset lookup, validation and generation hand a PT_SYNTH_MAG graph to. */
#ifndef GNN_PART_SYNTH_MAG_H
#define GNN_PART_SYNTH_MAG_H

#include <stddef.h>

#include "graph.h"
#include "synth.h"

/* The presets mag, mag-small and mag-tiny (seed 0). */
extern const struct pt_synth_params pt_synth_mag_presets[];
extern const size_t pt_synth_mag_num_presets;

/* pt_synth_validate for a PT_SYNTH_MAG p. */
int pt_synth_mag_validate(const struct pt_synth_params *p);

/* pt_synth_generate for a PT_SYNTH_MAG p, already validated. */
int pt_synth_mag_generate(const struct pt_synth_params *p, struct pt_graph *g);

#endif
