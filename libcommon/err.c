#include "err.h"

#include <stddef.h>

static const char *const messages[GNN_ERR_COUNT] = {
	[GNN_OK] = "success",
	[GNN_EINVAL] = "invalid argument",
	[GNN_ENOMEM] = "out of memory",
	[GNN_EIO] = "input/output error",
	[GNN_EFORMAT] = "malformed input",
	[GNN_ERANGE] = "value out of range",
	[GNN_EEXIST] = "already exists",
	[GNN_ENOENT] = "not found",
	[GNN_ECHECKSUM] = "checksum mismatch",
	[GNN_EVERSION] = "unsupported version",
	[GNN_ETIMEDOUT] = "timed out",
	[GNN_EPROTO] = "protocol error",
	[GNN_EUNAVAIL] = "peer unavailable",
	[GNN_ECLOSED] = "closed",
	[GNN_EHELP] = "help printed",
	[GNN_EINTERNAL] = "internal error",
	[GNN_EDONE] = "already finished",
	[GNN_ESTALE] = "state not the expected one (restarted or restored)",
};

const char *gnn_strerror(int err)
{
	if (err < 0 || err >= GNN_ERR_COUNT || messages[err] == NULL)
		return "unknown error";
	return messages[err];
}

static const char *const names[GNN_ERR_COUNT] = {
	[GNN_OK] = "ok",
	[GNN_EINVAL] = "einval",
	[GNN_ENOMEM] = "enomem",
	[GNN_EIO] = "eio",
	[GNN_EFORMAT] = "eformat",
	[GNN_ERANGE] = "erange",
	[GNN_EEXIST] = "eexist",
	[GNN_ENOENT] = "enoent",
	[GNN_ECHECKSUM] = "echecksum",
	[GNN_EVERSION] = "eversion",
	[GNN_ETIMEDOUT] = "etimedout",
	[GNN_EPROTO] = "eproto",
	[GNN_EUNAVAIL] = "eunavail",
	[GNN_ECLOSED] = "eclosed",
	[GNN_EHELP] = "ehelp",
	[GNN_EINTERNAL] = "einternal",
	[GNN_EDONE] = "edone",
	[GNN_ESTALE] = "estale",
};

const char *gnn_errname(int err)
{
	if (err < 0 || err >= GNN_ERR_COUNT || names[err] == NULL)
		return "unknown";
	return names[err];
}
