/* peers.h - where a service finds its peers: URL lists and patterns from
 * options (on Kubernetes, the DNS names of a StatefulSet's pods), and the
 * pod's own ordinal from its host name ("trainer-2" is rank 2). */
#ifndef GNN_PEERS_H
#define GNN_PEERS_H

#include <stddef.h>
#include <stdint.h>

/* The URLs of n peers named by exactly one of list ("tcp://a:1,tcp://b:2";
 * blanks around each item dropped, empty items refused) or pattern (a URL
 * with exactly one "%d", expanded for 0..count-1; not a printf format:
 * nothing else in it is interpreted). what names the options in error logs:
 * "graphstore" for --graphstores and --graphstore-pattern. At most max_n URLs. On success *urls (n strings) is the
 * caller's: gnn_peers_free. On error logs why and returns GNN_EINVAL or
 * GNN_ENOMEM with *urls NULL. */
int gnn_peers_parse(const char *what, const char *list, const char *pattern, int64_t count,
		    size_t max_n, char ***urls, size_t *n);
void gnn_peers_free(char **urls, size_t n);

/* The number after the last '-' of host ("graphstore-3" gives 3; at most
 * 65535). GNN_EINVAL when host does not end in -<digits>. */
int gnn_host_ordinal(const char *host, int64_t *out);

/* This pod's ordinal: the host name from $HOSTNAME, else gethostname(),
 * through gnn_host_ordinal. On failure logs a bad_config line telling the
 * user to pass --FLAG (e.g. "rank" or "part") and returns GNN_EINVAL. */
int gnn_own_ordinal(const char *flag, int64_t *out);

#endif
