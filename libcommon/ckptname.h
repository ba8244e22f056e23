/* ckptname.h - the names of a training checkpoint's folders, in one place:
 * the trainer writes them (services/trainer/checkpoint.c), a graph store
 * checks the folder a SAVE names and finds its committed snapshot by them
 * (services/graphstore/emb_table.c, emb_wal.c).
 *
 *   epoch-EEEEEE               committed, at the start of epoch E (step 0)
 *   epoch-EEEEEE-step-SSSSSS   committed, at step S > 0 of epoch E
 *   .tmp-epoch-EEEEEE-SSSSSS-P being written by process P; renamed to one
 *                              of the above once complete */
#ifndef GNN_CKPTNAME_H
#define GNN_CKPTNAME_H

#include <stddef.h>
#include <stdint.h>

#define GNN_CKPT_TMP_PREFIX ".tmp-epoch-"

/* The committed folder name of (epoch, step) into buf (40 bytes suffice). */
void gnn_ckpt_name(uint32_t epoch, uint32_t step, char *buf, size_t cap);
/* dir/ the folder (epoch, step) is written in by process pid, into buf.
 * GNN_ERANGE when it does not fit. */
int gnn_ckpt_tmp_path(const char *dir, uint32_t epoch, uint32_t step, int pid, char *buf, size_t cap);
/* The committed path of tmp, a path whose last part is a folder being
 * written (as gnn_ckpt_tmp_path makes it), into buf. GNN_EINVAL when its
 * last part is not such a name, GNN_ERANGE when buf is too small. */
int gnn_ckpt_committed_path(const char *tmp, char *buf, size_t cap);

#endif
