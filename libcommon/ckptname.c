/* ckptname.c - see ckptname.h. */
#include "ckptname.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "err.h"

void gnn_ckpt_name(uint32_t epoch, uint32_t step, char *buf, size_t cap)
{
	if (step == 0)
		snprintf(buf, cap, "epoch-%06" PRIu32, epoch);
	else
		snprintf(buf, cap, "epoch-%06" PRIu32 "-step-%06" PRIu32, epoch, step);
}

int gnn_ckpt_tmp_path(const char *dir, uint32_t epoch, uint32_t step, int pid, char *buf, size_t cap)
{
	int n = snprintf(buf, cap, "%s/" GNN_CKPT_TMP_PREFIX "%06" PRIu32 "-%06" PRIu32 "-%d", dir, epoch, step, pid);

	return n < 0 || (size_t)n >= cap ? GNN_ERANGE : GNN_OK;
}

int gnn_ckpt_committed_path(const char *tmp, char *buf, size_t cap)
{
	const char *base = strrchr(tmp, '/');
	char name[40];
	unsigned ep, st;
	int pid, used = 0, n;

	if (base == NULL ||
	    sscanf(base + 1, GNN_CKPT_TMP_PREFIX "%6u-%6u-%d%n", &ep, &st, &pid, &used) != 3 ||
	    base[1 + used] != '\0')
		return GNN_EINVAL;
	gnn_ckpt_name(ep, st, name, sizeof(name));
	n = snprintf(buf, cap, "%.*s/%s", (int)(base - tmp), tmp, name);
	return n < 0 || (size_t)n >= cap ? GNN_ERANGE : GNN_OK;
}
