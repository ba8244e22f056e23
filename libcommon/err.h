/* err.h - error codes shared by every gnn-dist component.
 *
 * Functions that act return 0 (GNN_OK) or one of these codes; the detail
 * (which file, which line, which peer) is logged where the error is found,
 * so callers only propagate the code. */
#ifndef GNN_ERR_H
#define GNN_ERR_H

enum gnn_err {
	GNN_OK = 0,
	GNN_EINVAL,      /* invalid argument or configuration */
	GNN_ENOMEM,      /* out of memory */
	GNN_EIO,         /* read/write/open failed (errno logged) */
	GNN_EFORMAT,     /* malformed input file or message */
	GNN_ERANGE,      /* value out of its allowed range */
	GNN_EEXIST,      /* output already exists */
	GNN_ENOENT,      /* file or object not found */
	GNN_ECHECKSUM,   /* stored checksum does not match the data */
	GNN_EVERSION,    /* unsupported format or protocol version */
	GNN_ETIMEDOUT,   /* a wait ran past its timeout */
	GNN_EPROTO,      /* peer violated the protocol */
	GNN_EUNAVAIL,    /* peer unreachable */
	GNN_ECLOSED,     /* object closed or shutdown requested */
	GNN_EHELP,       /* --help was printed: exit 0 without doing anything */
	GNN_EINTERNAL,   /* a bug: invariant violated */
	GNN_EDONE,       /* nothing to do: the work is finished (a peer has the result) */
	GNN_ESTALE,      /* a peer's state is not the one expected (it restarted or was restored) */
	GNN_ERR_COUNT
};

/* Returns a static, human-readable description of err ("unknown error" for
 * codes outside the enum). Never NULL. */
const char *gnn_strerror(int err);

/* Returns the code's short name ("erange", "eunavail", ...) for metric labels
 * and machine-readable fields; "unknown" outside the enum. */
const char *gnn_errname(int err);

#endif
