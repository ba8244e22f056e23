/* synth_mag.h - the heterogeneous synthetic presets (synth_mag.c; the
 * model is the "mag" section of docs/synthetic.md), which synth.c's
 * preset lookup, validation and generation hand a SYNTH_MAG graph to. */
#ifndef GNN_PART_SYNTH_MAG_H
#define GNN_PART_SYNTH_MAG_H

#include <stddef.h>

#include "graph.h"
#include "synth.h"

/* The presets mag, mag-small and mag-tiny (seed 0). */
extern const struct synth_params synth_mag_presets[];
extern const size_t synth_mag_num_presets;

/* synth_validate for a SYNTH_MAG p. */
int synth_mag_validate(const struct synth_params *p);

/* synth_generate for a SYNTH_MAG p, already validated. */
int synth_mag_generate(const struct synth_params *p, struct graph *g);

#endif
