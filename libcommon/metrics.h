/* metrics.h - a small Prometheus metrics registry.
 *
 * A registry holds metric families (counters, gauges, histograms). Each
 * family has a name, help text and 0..GNN_METRICS_MAX_LABELS label names
 * fixed at registration. A family without labels is a single series and the
 * handle returned at registration is that series. A family with labels is
 * a parent handle; its series are created on first use by label values:
 *
 *   static const char *const op[] = { "op" };
 *   struct gnn_counter *ops, *sample;
 *
 *   gnn_metrics_counter(reg, "gnn_ops_total", "Operations done.", op, 1, &ops);
 *   gnn_counter_labels(ops, (const char *const[]){ "sample" }, 1, &sample);
 *   gnn_counter_inc(sample);       // cache `sample`: the lookup takes a lock
 *
 * Updates (inc/add/set/observe) are lock-free atomics and may come from any
 * number of threads at once, also while the registry is being rendered.
 * Registration, label lookups and rendering are serialised by one mutex.
 * Series live as long as the registry; handles stay valid until
 * gnn_metrics_free().
 *
 * Names are checked at registration so that the rendered text passes
 * `promtool check metrics`: metric names match [a-zA-Z_:][a-zA-Z0-9_:]*,
 * counters end in "_total" and nothing else does, no family name ends in
 * "_bucket", "_count" or "_sum" (those belong to histogram samples); label
 * names match [a-zA-Z_][a-zA-Z0-9_]*, do not start with "__" and are not
 * "le" or "quantile". Help text and label values must be valid UTF-8.
 * Style lints that are a matter of taste (camelCase, "_ms") stay the
 * caller's business. */
#ifndef GNN_METRICS_H
#define GNN_METRICS_H

#include <stddef.h>

#define GNN_METRICS_MAX_LABELS 4
/* Series per labelled family; bounds the cost of a label-cardinality bug. */
#define GNN_METRICS_MAX_SERIES 4096
/* Bucket bounds per histogram (the implicit +Inf bucket not counted). */
#define GNN_METRICS_MAX_BUCKETS 64

struct gnn_metrics;
struct gnn_counter;
struct gnn_gauge;
struct gnn_histogram;

/* Creates an empty registry; *out is the caller's, released with
 * gnn_metrics_free(). Returns GNN_ENOMEM. */
int gnn_metrics_new(struct gnn_metrics **out);

/* Releases the registry, every family and series in it; all handles from it
 * become invalid. No thread may still update or render it. Safe on NULL. */
void gnn_metrics_free(struct gnn_metrics *reg);

/* Registers a family. name, help and the label names are copied.
 * label_names holds nlabels entries (NULL when nlabels is 0). On success
 * *out is the series (nlabels == 0) or the parent handle (nlabels > 0),
 * owned by the registry.
 * Returns GNN_EINVAL for a bad name, empty help, bad, repeated or too many
 * label names, GNN_EEXIST when a family of that name is already there,
 * GNN_ENOMEM. */
int gnn_metrics_counter(struct gnn_metrics *reg, const char *name, const char *help,
			const char *const *label_names, size_t nlabels, struct gnn_counter **out);
int gnn_metrics_gauge(struct gnn_metrics *reg, const char *name, const char *help,
		      const char *const *label_names, size_t nlabels, struct gnn_gauge **out);

/* Histograms also take their upper bucket bounds: nbounds (at most
 * GNN_METRICS_MAX_BUCKETS) finite values, strictly increasing; they are
 * copied and a +Inf bucket is always added. GNN_EINVAL for bad bounds. */
int gnn_metrics_histogram(struct gnn_metrics *reg, const char *name, const char *help,
			  const char *const *label_names, size_t nlabels,
			  const double *bounds, size_t nbounds, struct gnn_histogram **out);

/* Finds the family registered under name, e.g. to share one between two
 * users of a registry. *out is as registration returned it (owned by the
 * registry). Returns GNN_ENOENT when there is none, GNN_EINVAL when the
 * family is of another type. */
int gnn_metrics_find_counter(struct gnn_metrics *reg, const char *name, struct gnn_counter **out);
int gnn_metrics_find_gauge(struct gnn_metrics *reg, const char *name, struct gnn_gauge **out);
int gnn_metrics_find_histogram(struct gnn_metrics *reg, const char *name,
			       struct gnn_histogram **out);

/* Looks up the series of a labelled family with these label values (in the
 * order of the label names), creating it at 0 the first time; the same
 * values always give the same series. fam is the parent handle or any of
 * its series; values (copied) holds nvalues entries, which must equal the
 * family's label count. *out is owned by the registry.
 * Returns GNN_EINVAL for a wrong count or a NULL / non-UTF-8 value,
 * GNN_ERANGE when the family already has GNN_METRICS_MAX_SERIES series,
 * GNN_ENOMEM. */
int gnn_counter_labels(struct gnn_counter *fam, const char *const *values, size_t nvalues,
		       struct gnn_counter **out);
int gnn_gauge_labels(struct gnn_gauge *fam, const char *const *values, size_t nvalues,
		     struct gnn_gauge **out);
int gnn_histogram_labels(struct gnn_histogram *fam, const char *const *values, size_t nvalues,
			 struct gnn_histogram **out);

/* Updates. They cannot fail, so they return nothing; calling them on the
 * parent handle of a labelled family is a bug, logged once per family and
 * otherwise ignored. Counters only go up: a negative or NaN v is ignored. */
void gnn_counter_inc(struct gnn_counter *c);
void gnn_counter_add(struct gnn_counter *c, double v);
void gnn_gauge_set(struct gnn_gauge *g, double v);
void gnn_gauge_add(struct gnn_gauge *g, double v); /* negative v decreases */
/* Counts v in the first bucket whose bound is >= v (and in every later one
 * when rendered: buckets are cumulative) and adds it to the sum. NaN is
 * ignored. */
void gnn_histogram_observe(struct gnn_histogram *h, double v);

/* Current values, for tests and for code that reports them elsewhere. */
double gnn_counter_value(const struct gnn_counter *c);
double gnn_gauge_value(const struct gnn_gauge *g);

/* Fill out[0..n) with bucket bounds: start * factor^i (start > 0,
 * factor > 1) or start + width * i (width > 0). Returns GNN_EINVAL for
 * other arguments or n == 0 or n > GNN_METRICS_MAX_BUCKETS; out is written
 * only on success. */
int gnn_metrics_exp_buckets(double start, double factor, size_t n, double *out);
int gnn_metrics_linear_buckets(double start, double width, size_t n, double *out);

/* Registers the standard process metrics, refreshed at every render:
 *   process_cpu_seconds_total       user + system CPU time (getrusage)
 *   process_resident_memory_bytes   resident set size (/proc/self/statm)
 *   process_virtual_memory_bytes    virtual memory size (/proc/self/statm)
 *   process_start_time_seconds      start time, seconds since the epoch
 *   process_open_fds                open file descriptors (/proc/self/fd)
 *   process_max_fds                 RLIMIT_NOFILE soft limit
 * Returns GNN_EEXIST when called twice, GNN_ENOMEM. */
int gnn_metrics_add_process(struct gnn_metrics *reg);

/* Calls fn(ctx) at the start of every render, before anything is written,
 * with the registry's lock held: for gauges whose value is cheaper to read
 * when asked than to keep current (a file's time stamp). fn may set,
 * add and read metrics but must not register or look up families or
 * series (the lock is held). Up to GNN_METRICS_MAX_HOOKS hooks, called in
 * the order added; ctx must live as long as the registry. Returns
 * GNN_EINVAL for a NULL reg or fn, GNN_ERANGE when the hooks are full. */
#define GNN_METRICS_MAX_HOOKS 8
int gnn_metrics_on_render(struct gnn_metrics *reg, void (*fn)(void *ctx), void *ctx);

/* Renders every family, in registration order, in the Prometheus text
 * exposition format 0.0.4. *out is a NUL-terminated malloc'd buffer the
 * caller frees; *len (if len is not NULL) is its length without the NUL.
 * Both are written only on success. Returns GNN_ENOMEM. */
int gnn_metrics_render(struct gnn_metrics *reg, char **out, size_t *len);

#endif
