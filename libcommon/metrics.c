#include "metrics.h"
#include "buf.h"
#include "err.h"
#include "log.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

enum kind { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM };

static const char *const kind_names[] = { "counter", "gauge", "histogram" };

struct family;

/* One time series. The public handle types wrap it so that the compiler
 * keeps counters, gauges and histograms apart. */
struct series {
	struct family *fam;
	struct series *next;       /* next series of fam, creation order */
	char **values;             /* fam->nlabels label values; NULL for the root */
	bool parent;               /* root of a labelled family: never rendered */
	_Atomic double value;      /* counter or gauge value; histogram sum */
	_Atomic uint64_t *buckets; /* histogram: nbounds + 1 per-bucket counts */
};

struct gnn_counter {
	struct series s;
};
struct gnn_gauge {
	struct series s;
};
struct gnn_histogram {
	struct series s;
};

/* Every series is allocated as this union, so converting a struct series *
 * to the handle type of its family is always valid. */
union any_series {
	struct series s;
	struct gnn_counter c;
	struct gnn_gauge g;
	struct gnn_histogram h;
};

struct family {
	struct family *next; /* registration order */
	struct gnn_metrics *reg;
	enum kind kind;
	char *name;
	char *help;
	size_t nlabels;
	char *labels[GNN_METRICS_MAX_LABELS];
	size_t nbounds;
	double *bounds;         /* histograms: upper bounds without +Inf */
	union any_series root;  /* the series (no labels) or the parent handle */
	struct series *children;
	struct series **tail;
	size_t nchildren;
	atomic_bool warned;     /* parent-update bug already logged */
};

struct gnn_metrics {
	pthread_mutex_t lock; /* family list, series lists, rendering */
	struct family *head;
	struct family **tail;
	/* Built-in process metrics; NULL until gnn_metrics_add_process(). */
	struct gnn_counter *proc_cpu;
	struct gnn_gauge *proc_rss;
	struct gnn_gauge *proc_vms;
	struct gnn_gauge *proc_start;
	struct gnn_gauge *proc_fds;
	struct gnn_gauge *proc_max_fds;
	/* gnn_metrics_on_render's hooks */
	struct {
		void (*fn)(void *ctx);
		void *ctx;
	} hooks[GNN_METRICS_MAX_HOOKS];
	size_t nhooks;
};

/* --- validation --------------------------------------------------------- */

/* Copies s into dst for a log line: cut to fit, non-printable bytes as '?',
 * so a hostile name cannot break the one-line-per-event format. */
static const char *log_str(char *dst, size_t n, const char *s)
{
	size_t i;

	if (s == NULL)
		return "(null)";
	for (i = 0; i + 1 < n && s[i] != '\0'; i++)
		dst[i] = (s[i] > 0x20 && s[i] < 0x7f) ? s[i] : '?';
	dst[i] = '\0';
	return dst;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool is_alpha_(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* [a-zA-Z_:][a-zA-Z0-9_:]* */
static bool valid_metric_name(const char *s)
{
	if (!is_alpha_(s[0]) && s[0] != ':')
		return false;
	for (s++; *s != '\0'; s++)
		if (!is_alpha_(*s) && !is_digit(*s) && *s != ':')
			return false;
	return true;
}

/* [a-zA-Z_][a-zA-Z0-9_]*, not reserved ("__" prefix), and not a label that
 * histograms or summaries own. */
static bool valid_label_name(const char *s)
{
	if (!is_alpha_(s[0]))
		return false;
	for (const char *p = s + 1; *p != '\0'; p++)
		if (!is_alpha_(*p) && !is_digit(*p))
			return false;
	return strncmp(s, "__", 2) != 0 && strcmp(s, "le") != 0 && strcmp(s, "quantile") != 0;
}

/* The text format is UTF-8 and promtool rejects anything else: accepts the
 * shortest forms of U+0000..U+10FFFF minus the surrogates. */
static bool valid_utf8(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s != '\0') {
		uint32_t cp;
		int n;

		if (*s < 0x80) {
			s++;
			continue;
		} else if ((*s & 0xe0) == 0xc0) {
			cp = *s & 0x1f;
			n = 1;
		} else if ((*s & 0xf0) == 0xe0) {
			cp = *s & 0x0f;
			n = 2;
		} else if ((*s & 0xf8) == 0xf0) {
			cp = *s & 0x07;
			n = 3;
		} else {
			return false;
		}
		for (int i = 1; i <= n; i++) {
			if ((s[i] & 0xc0) != 0x80)
				return false;
			cp = (cp << 6) | (s[i] & 0x3f);
		}
		if ((n == 1 && cp < 0x80) || (n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) ||
		    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		s += n + 1;
	}
	return true;
}

static int check_name(enum kind kind, const char *name)
{
	char buf[80];
	const char *why = NULL;

	if (!valid_metric_name(name))
		why = "syntax";
	else if (kind == KIND_COUNTER && !ends_with(name, "_total"))
		why = "counter_without_total_suffix";
	else if (kind != KIND_COUNTER && ends_with(name, "_total"))
		why = "total_suffix_on_non_counter";
	else if (ends_with(name, "_bucket") || ends_with(name, "_count") || ends_with(name, "_sum"))
		why = "reserved_suffix";
	if (why == NULL)
		return GNN_OK;
	GNN_WARN("metric_bad_name", "name=%s type=%s reason=%s", log_str(buf, sizeof(buf), name),
		 kind_names[kind], why);
	return GNN_EINVAL;
}

static int check_labels(const char *name, const char *const *labels, size_t n)
{
	char b1[80], b2[80];

	if (n > GNN_METRICS_MAX_LABELS || (n > 0 && labels == NULL)) {
		GNN_WARN("metric_bad_labels", "name=%s nlabels=%zu max=%d",
			 log_str(b1, sizeof(b1), name), n, GNN_METRICS_MAX_LABELS);
		return GNN_EINVAL;
	}
	for (size_t i = 0; i < n; i++) {
		bool dup = false;

		for (size_t j = 0; labels[i] != NULL && j < i; j++)
			dup = dup || strcmp(labels[i], labels[j]) == 0;
		if (labels[i] == NULL || !valid_label_name(labels[i]) || dup) {
			GNN_WARN("metric_bad_label", "name=%s label=%s reason=%s",
				 log_str(b1, sizeof(b1), name), log_str(b2, sizeof(b2), labels[i]),
				 dup ? "repeated" : "syntax_or_reserved");
			return GNN_EINVAL;
		}
	}
	return GNN_OK;
}

static int check_bounds(const char *name, const double *bounds, size_t n)
{
	char buf[80];

	if (n > GNN_METRICS_MAX_BUCKETS || (n > 0 && bounds == NULL))
		goto bad;
	for (size_t i = 0; i < n; i++)
		if (!isfinite(bounds[i]) || (i > 0 && !(bounds[i] > bounds[i - 1])))
			goto bad;
	return GNN_OK;
bad:
	GNN_WARN("metric_bad_buckets", "name=%s nbounds=%zu need=finite_strictly_increasing max=%d",
		 log_str(buf, sizeof(buf), name), n, GNN_METRICS_MAX_BUCKETS);
	return GNN_EINVAL;
}

/* --- families and series ------------------------------------------------ */

static void series_release(struct series *s, size_t nvalues)
{
	if (s->values != NULL)
		for (size_t i = 0; i < nvalues; i++)
			free(s->values[i]);
	free(s->values);
	free(s->buckets);
}

/* Sets up *s (already zeroed) as a series of f; values is NULL for the
 * root. On failure *s holds nothing to free. */
static int series_init(struct series *s, struct family *f, const char *const *values)
{
	s->fam = f;
	s->parent = values == NULL && f->nlabels > 0;
	atomic_init(&s->value, 0.0);
	if (f->kind == KIND_HISTOGRAM) {
		s->buckets = calloc(f->nbounds + 1, sizeof(*s->buckets));
		if (s->buckets == NULL)
			goto out_nomem;
		for (size_t i = 0; i <= f->nbounds; i++)
			atomic_init(&s->buckets[i], 0);
	}
	if (values != NULL) {
		s->values = calloc(f->nlabels, sizeof(*s->values));
		if (s->values == NULL)
			goto out_nomem;
		for (size_t i = 0; i < f->nlabels; i++)
			if ((s->values[i] = strdup(values[i])) == NULL)
				goto out_nomem;
	}
	return GNN_OK;

out_nomem:
	series_release(s, f->nlabels);
	s->values = NULL;
	s->buckets = NULL;
	return GNN_ENOMEM;
}

static void family_free(struct family *f)
{
	struct series *s, *next;

	if (f == NULL)
		return;
	for (s = f->children; s != NULL; s = next) {
		next = s->next;
		series_release(s, f->nlabels);
		free(s);
	}
	series_release(&f->root.s, f->nlabels);
	for (size_t i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	free(f->bounds);
	free(f->help);
	free(f->name);
	free(f);
}

/* Validates and builds an unlinked family; *out is the caller's. */
static int family_new(enum kind kind, const char *name, const char *help,
		      const char *const *labels, size_t nlabels, const double *bounds,
		      size_t nbounds, struct family **out)
{
	char buf[80];
	struct family *f;
	int err;

	if (name == NULL || out == NULL)
		return GNN_EINVAL;
	if ((err = check_name(kind, name)) != GNN_OK)
		return err;
	if (help == NULL || help[0] == '\0' || !valid_utf8(help)) {
		GNN_WARN("metric_bad_help", "name=%s need=non_empty_utf8", log_str(buf, sizeof(buf), name));
		return GNN_EINVAL;
	}
	if ((err = check_labels(name, labels, nlabels)) != GNN_OK)
		return err;
	if (kind == KIND_HISTOGRAM && (err = check_bounds(name, bounds, nbounds)) != GNN_OK)
		return err;

	if ((f = calloc(1, sizeof(*f))) == NULL)
		return GNN_ENOMEM;
	f->kind = kind;
	f->tail = &f->children;
	atomic_init(&f->warned, false);
	if ((f->name = strdup(name)) == NULL || (f->help = strdup(help)) == NULL)
		goto out_nomem;
	for (; f->nlabels < nlabels; f->nlabels++)
		if ((f->labels[f->nlabels] = strdup(labels[f->nlabels])) == NULL)
			goto out_nomem;
	if (kind == KIND_HISTOGRAM && nbounds > 0) {
		if ((f->bounds = malloc(nbounds * sizeof(*f->bounds))) == NULL)
			goto out_nomem;
		memcpy(f->bounds, bounds, nbounds * sizeof(*f->bounds));
		f->nbounds = nbounds;
	}
	if (series_init(&f->root.s, f, NULL) != GNN_OK)
		goto out_nomem;
	*out = f;
	return GNN_OK;

out_nomem:
	family_free(f);
	return GNN_ENOMEM;
}

static struct family *find_locked(struct gnn_metrics *reg, const char *name)
{
	for (struct family *f = reg->head; f != NULL; f = f->next)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

/* Links all n families or none: GNN_EEXIST when any name is taken (also
 * within fams). The registry owns them on success. */
static int link_families(struct gnn_metrics *reg, struct family **fams, size_t n)
{
	char buf[80];

	pthread_mutex_lock(&reg->lock);
	for (size_t i = 0; i < n; i++) {
		bool dup = find_locked(reg, fams[i]->name) != NULL;

		for (size_t j = 0; j < i; j++)
			dup = dup || strcmp(fams[i]->name, fams[j]->name) == 0;
		if (dup) {
			pthread_mutex_unlock(&reg->lock);
			GNN_WARN("metric_exists", "name=%s", log_str(buf, sizeof(buf), fams[i]->name));
			return GNN_EEXIST;
		}
	}
	for (size_t i = 0; i < n; i++) {
		fams[i]->reg = reg;
		*reg->tail = fams[i];
		reg->tail = &fams[i]->next;
	}
	pthread_mutex_unlock(&reg->lock);
	return GNN_OK;
}

static int family_register(struct gnn_metrics *reg, enum kind kind, const char *name,
			   const char *help, const char *const *labels, size_t nlabels,
			   const double *bounds, size_t nbounds, struct series **out)
{
	struct family *f;
	int err;

	if (reg == NULL || out == NULL)
		return GNN_EINVAL;
	if ((err = family_new(kind, name, help, labels, nlabels, bounds, nbounds, &f)) != GNN_OK)
		return err;
	if ((err = link_families(reg, &f, 1)) != GNN_OK) {
		family_free(f);
		return err;
	}
	*out = &f->root.s;
	return GNN_OK;
}

static int family_find(struct gnn_metrics *reg, enum kind kind, const char *name,
		       struct series **out)
{
	struct family *f;
	int err = GNN_OK;

	if (reg == NULL || name == NULL || out == NULL)
		return GNN_EINVAL;
	pthread_mutex_lock(&reg->lock);
	f = find_locked(reg, name);
	if (f == NULL)
		err = GNN_ENOENT;
	else if (f->kind != kind)
		err = GNN_EINVAL;
	pthread_mutex_unlock(&reg->lock);
	if (err == GNN_OK)
		*out = &f->root.s;
	return err;
}

static bool values_equal(char *const *a, const char *const *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(a[i], b[i]) != 0)
			return false;
	return true;
}

static int series_labels(struct series *s, enum kind kind, const char *const *values, size_t n,
			 struct series **out)
{
	char buf[80];
	struct family *f;
	struct series *c;
	union any_series *u;
	int err;

	if (s == NULL || out == NULL || s->fam->kind != kind)
		return GNN_EINVAL;
	f = s->fam;
	if (n == 0 || n != f->nlabels || values == NULL)
		goto out_inval;
	for (size_t i = 0; i < n; i++)
		if (values[i] == NULL || !valid_utf8(values[i]))
			goto out_inval;

	pthread_mutex_lock(&f->reg->lock);
	for (c = f->children; c != NULL; c = c->next) {
		if (values_equal(c->values, values, n)) {
			pthread_mutex_unlock(&f->reg->lock);
			*out = c;
			return GNN_OK;
		}
	}
	if (f->nchildren >= GNN_METRICS_MAX_SERIES) {
		pthread_mutex_unlock(&f->reg->lock);
		GNN_WARN("metric_too_many_series", "name=%s max=%d", f->name, GNN_METRICS_MAX_SERIES);
		return GNN_ERANGE;
	}
	if ((u = calloc(1, sizeof(*u))) == NULL) {
		pthread_mutex_unlock(&f->reg->lock);
		return GNN_ENOMEM;
	}
	if ((err = series_init(&u->s, f, values)) != GNN_OK) {
		pthread_mutex_unlock(&f->reg->lock);
		free(u);
		return err;
	}
	*f->tail = &u->s;
	f->tail = &u->s.next;
	f->nchildren++;
	pthread_mutex_unlock(&f->reg->lock);
	*out = &u->s;
	return GNN_OK;

out_inval:
	GNN_WARN("metric_bad_label_values", "name=%s nvalues=%zu nlabels=%zu need=utf8_non_null",
		 log_str(buf, sizeof(buf), f->name), n, f->nlabels);
	return GNN_EINVAL;
}

/* --- public: registry --------------------------------------------------- */

int gnn_metrics_new(struct gnn_metrics **out)
{
	struct gnn_metrics *reg;

	if (out == NULL)
		return GNN_EINVAL;
	if ((reg = calloc(1, sizeof(*reg))) == NULL)
		return GNN_ENOMEM;
	if (pthread_mutex_init(&reg->lock, NULL) != 0) {
		free(reg);
		return GNN_ENOMEM;
	}
	reg->tail = &reg->head;
	*out = reg;
	return GNN_OK;
}

void gnn_metrics_free(struct gnn_metrics *reg)
{
	struct family *f, *next;

	if (reg == NULL)
		return;
	for (f = reg->head; f != NULL; f = next) {
		next = f->next;
		family_free(f);
	}
	pthread_mutex_destroy(&reg->lock);
	free(reg);
}

int gnn_metrics_counter(struct gnn_metrics *reg, const char *name, const char *help,
			const char *const *label_names, size_t nlabels, struct gnn_counter **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	err = family_register(reg, KIND_COUNTER, name, help, label_names, nlabels, NULL, 0, &s);
	if (err == GNN_OK)
		*out = (struct gnn_counter *)s;
	return err;
}

int gnn_metrics_gauge(struct gnn_metrics *reg, const char *name, const char *help,
		      const char *const *label_names, size_t nlabels, struct gnn_gauge **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	err = family_register(reg, KIND_GAUGE, name, help, label_names, nlabels, NULL, 0, &s);
	if (err == GNN_OK)
		*out = (struct gnn_gauge *)s;
	return err;
}

int gnn_metrics_histogram(struct gnn_metrics *reg, const char *name, const char *help,
			  const char *const *label_names, size_t nlabels,
			  const double *bounds, size_t nbounds, struct gnn_histogram **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	err = family_register(reg, KIND_HISTOGRAM, name, help, label_names, nlabels, bounds,
			      nbounds, &s);
	if (err == GNN_OK)
		*out = (struct gnn_histogram *)s;
	return err;
}

int gnn_metrics_find_counter(struct gnn_metrics *reg, const char *name, struct gnn_counter **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	if ((err = family_find(reg, KIND_COUNTER, name, &s)) == GNN_OK)
		*out = (struct gnn_counter *)s;
	return err;
}

int gnn_metrics_find_gauge(struct gnn_metrics *reg, const char *name, struct gnn_gauge **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	if ((err = family_find(reg, KIND_GAUGE, name, &s)) == GNN_OK)
		*out = (struct gnn_gauge *)s;
	return err;
}

int gnn_metrics_find_histogram(struct gnn_metrics *reg, const char *name,
			       struct gnn_histogram **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	if ((err = family_find(reg, KIND_HISTOGRAM, name, &s)) == GNN_OK)
		*out = (struct gnn_histogram *)s;
	return err;
}

int gnn_counter_labels(struct gnn_counter *fam, const char *const *values, size_t nvalues,
		       struct gnn_counter **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	err = series_labels(fam ? &fam->s : NULL, KIND_COUNTER, values, nvalues, &s);
	if (err == GNN_OK)
		*out = (struct gnn_counter *)s;
	return err;
}

int gnn_gauge_labels(struct gnn_gauge *fam, const char *const *values, size_t nvalues,
		     struct gnn_gauge **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	err = series_labels(fam ? &fam->s : NULL, KIND_GAUGE, values, nvalues, &s);
	if (err == GNN_OK)
		*out = (struct gnn_gauge *)s;
	return err;
}

int gnn_histogram_labels(struct gnn_histogram *fam, const char *const *values, size_t nvalues,
			 struct gnn_histogram **out)
{
	struct series *s;
	int err;

	if (out == NULL)
		return GNN_EINVAL;
	err = series_labels(fam ? &fam->s : NULL, KIND_HISTOGRAM, values, nvalues, &s);
	if (err == GNN_OK)
		*out = (struct gnn_histogram *)s;
	return err;
}

/* --- public: updates ---------------------------------------------------- */

/* False for the parent handle of a labelled family: it has no value of its
 * own, and updating it means a call site forgot gnn_*_labels(). */
static bool updatable(struct series *s)
{
	if (!s->parent)
		return true;
	if (!atomic_exchange(&s->fam->warned, true))
		GNN_WARN("metric_parent_update", "name=%s hint=update_a_series_from_gnn_%s_labels",
			 s->fam->name, kind_names[s->fam->kind]);
	return false;
}

/* C11 has no fetch_add for floating types: compare-and-swap until no other
 * thread got in between. */
static void atomic_add_double(_Atomic double *p, double v)
{
	double old = atomic_load_explicit(p, memory_order_relaxed);

	while (!atomic_compare_exchange_weak_explicit(p, &old, old + v, memory_order_relaxed,
						      memory_order_relaxed))
		;
}

void gnn_counter_inc(struct gnn_counter *c)
{
	gnn_counter_add(c, 1.0);
}

void gnn_counter_add(struct gnn_counter *c, double v)
{
	if (!(v >= 0.0) || !updatable(&c->s)) /* also drops NaN */
		return;
	atomic_add_double(&c->s.value, v);
}

void gnn_gauge_set(struct gnn_gauge *g, double v)
{
	if (updatable(&g->s))
		atomic_store_explicit(&g->s.value, v, memory_order_relaxed);
}

void gnn_gauge_add(struct gnn_gauge *g, double v)
{
	if (updatable(&g->s))
		atomic_add_double(&g->s.value, v);
}

void gnn_histogram_observe(struct gnn_histogram *h, double v)
{
	const struct family *f = h->s.fam;
	size_t lo = 0, hi = f->nbounds;

	if (isnan(v) || !updatable(&h->s))
		return;
	/* First bound >= v; nbounds is the +Inf bucket. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v <= f->bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	atomic_fetch_add_explicit(&h->s.buckets[lo], 1, memory_order_relaxed);
	atomic_add_double(&h->s.value, v);
}

double gnn_counter_value(const struct gnn_counter *c)
{
	return atomic_load_explicit(&((struct gnn_counter *)c)->s.value, memory_order_relaxed);
}

double gnn_gauge_value(const struct gnn_gauge *g)
{
	return atomic_load_explicit(&((struct gnn_gauge *)g)->s.value, memory_order_relaxed);
}

int gnn_metrics_exp_buckets(double start, double factor, size_t n, double *out)
{
	double v = start;

	if (out == NULL || n == 0 || n > GNN_METRICS_MAX_BUCKETS || !isfinite(start) ||
	    !(start > 0.0) || !isfinite(factor) || !(factor > 1.0))
		return GNN_EINVAL;
	for (size_t i = 0; i < n; i++, v *= factor)
		if (!isfinite(v))
			return GNN_EINVAL;
	v = start;
	for (size_t i = 0; i < n; i++, v *= factor)
		out[i] = v;
	return GNN_OK;
}

int gnn_metrics_linear_buckets(double start, double width, size_t n, double *out)
{
	if (out == NULL || n == 0 || n > GNN_METRICS_MAX_BUCKETS || !isfinite(start) ||
	    !isfinite(width) || !(width > 0.0) || !isfinite(start + width * (double)(n - 1)))
		return GNN_EINVAL;
	for (size_t i = 0; i < n; i++)
		out[i] = start + width * (double)i;
	return GNN_OK;
}

/* --- process metrics ---------------------------------------------------- */

/* Start time as Prometheus' Go client computes it: the boot time from
 * /proc/stat plus field 22 of /proc/self/stat (clock ticks since boot).
 * Falls back to the current time, which is close when called at start-up. */
static double process_start_time(void)
{
	char buf[1024], *p;
	double btime = -1.0, ticks = -1.0;
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec now;
	FILE *fp;
	size_t n;

	if ((fp = fopen("/proc/stat", "re")) != NULL) {
		while (fgets(buf, sizeof(buf), fp) != NULL)
			if (sscanf(buf, "btime %lf", &btime) == 1)
				break;
		fclose(fp);
	}
	if ((fp = fopen("/proc/self/stat", "re")) != NULL) {
		n = fread(buf, 1, sizeof(buf) - 1, fp);
		buf[n] = '\0';
		fclose(fp);
		/* The command name may hold spaces and ')': fields restart after the last ')'. */
		if ((p = strrchr(buf, ')')) != NULL) {
			p++;
			for (int field = 3; field < 22 && p != NULL; field++)
				p = strchr(p + 1, ' ');
			if (p != NULL)
				ticks = strtod(p, NULL);
		}
	}
	if (btime > 0.0 && ticks >= 0.0 && hz > 0)
		return btime + ticks / (double)hz;
	clock_gettime(CLOCK_REALTIME, &now);
	return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

static void process_refresh(struct gnn_metrics *reg)
{
	unsigned long long vms_pages, rss_pages;
	long page = sysconf(_SC_PAGESIZE);
	struct rusage ru;
	struct rlimit rl;
	struct dirent *de;
	DIR *dir;
	FILE *fp;

	/* A source that cannot be read keeps the last value: a scrape should
	 * not fail because one number is missing. */
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		atomic_store(&reg->proc_cpu->s.value,
			     (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
			     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6);
	if ((fp = fopen("/proc/self/statm", "re")) != NULL) {
		if (fscanf(fp, "%llu %llu", &vms_pages, &rss_pages) == 2 && page > 0) {
			gnn_gauge_set(reg->proc_vms, (double)vms_pages * (double)page);
			gnn_gauge_set(reg->proc_rss, (double)rss_pages * (double)page);
		}
		fclose(fp);
	}
	if ((dir = opendir("/proc/self/fd")) != NULL) {
		double n = 0;
		int self = dirfd(dir);

		while ((de = readdir(dir)) != NULL)
			if (de->d_name[0] != '.' && atoi(de->d_name) != self)
				n++;
		closedir(dir);
		gnn_gauge_set(reg->proc_fds, n);
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		gnn_gauge_set(reg->proc_max_fds,
			      rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);
}

int gnn_metrics_add_process(struct gnn_metrics *reg)
{
	static const struct {
		enum kind kind;
		const char *name;
		const char *help;
	} defs[] = {
		{ KIND_COUNTER, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds." },
		{ KIND_GAUGE, "process_resident_memory_bytes", "Resident memory size in bytes." },
		{ KIND_GAUGE, "process_virtual_memory_bytes", "Virtual memory size in bytes." },
		{ KIND_GAUGE, "process_start_time_seconds", "Start time of the process since unix epoch in seconds." },
		{ KIND_GAUGE, "process_open_fds", "Number of open file descriptors." },
		{ KIND_GAUGE, "process_max_fds", "Maximum number of open file descriptors." },
	};
	enum { N = sizeof(defs) / sizeof(defs[0]) };
	struct family *fams[N] = { NULL };
	size_t i;
	int err;

	if (reg == NULL)
		return GNN_EINVAL;
	for (i = 0; i < N; i++)
		if ((err = family_new(defs[i].kind, defs[i].name, defs[i].help, NULL, 0, NULL, 0,
				      &fams[i])) != GNN_OK)
			goto out_free;
	atomic_init(&fams[3]->root.s.value, process_start_time());
	/* All six or none, so a second call fails cleanly with GNN_EEXIST. */
	if ((err = link_families(reg, fams, N)) != GNN_OK)
		goto out_free;
	pthread_mutex_lock(&reg->lock);
	reg->proc_cpu = &fams[0]->root.c;
	reg->proc_rss = &fams[1]->root.g;
	reg->proc_vms = &fams[2]->root.g;
	reg->proc_start = &fams[3]->root.g;
	reg->proc_fds = &fams[4]->root.g;
	reg->proc_max_fds = &fams[5]->root.g;
	pthread_mutex_unlock(&reg->lock);
	return GNN_OK;

out_free:
	for (i = 0; i < N; i++)
		family_free(fams[i]);
	return err;
}

/* --- rendering ---------------------------------------------------------- */

int gnn_metrics_on_render(struct gnn_metrics *reg, void (*fn)(void *ctx), void *ctx)
{
	int rc = GNN_ERANGE;

	if (reg == NULL || fn == NULL)
		return GNN_EINVAL;
	pthread_mutex_lock(&reg->lock);
	if (reg->nhooks < GNN_METRICS_MAX_HOOKS) {
		reg->hooks[reg->nhooks].fn = fn;
		reg->hooks[reg->nhooks++].ctx = ctx;
		rc = GNN_OK;
	}
	pthread_mutex_unlock(&reg->lock);
	return rc;
}

/* The page is built in a gnn_wbuf: an allocation failure sticks
 * (w->failed) and is reported once at the end, which keeps the render code
 * free of error checks. */
static void sb_puts(struct gnn_wbuf *sb, const char *s)
{
	gnn_wbuf_put(sb, s, strlen(s));
}

/* Writes s with the escapes the format defines: backslash and newline
 * always, double quote inside label values only. */
static void sb_escaped(struct gnn_wbuf *sb, const char *s, bool quote)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			sb_puts(sb, "\\\\");
		else if (*s == '\n')
			sb_puts(sb, "\\n");
		else if (*s == '"' && quote)
			sb_puts(sb, "\\\"");
		else
			gnn_wbuf_put(sb, s, 1);
	}
}

/* %.15g, or %.17g when that does not read back as v; the specials as
 * Prometheus (Go's ParseFloat) spells them. */
static const char *fmt_double(char *buf, size_t n, double v)
{
	if (isnan(v))
		return "NaN";
	if (isinf(v))
		return v > 0 ? "+Inf" : "-Inf";
	snprintf(buf, n, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, n, "%.17g", v);
	return buf;
}

/* name{l1="v1",...,le="x"} - the braces only when there is a label. */
static void sb_sample_name(struct gnn_wbuf *sb, const struct family *f, const struct series *s,
			   const char *suffix, const char *le)
{
	size_t n = s->values != NULL ? f->nlabels : 0;

	sb_puts(sb, f->name);
	sb_puts(sb, suffix);
	if (n == 0 && le == NULL)
		return;
	sb_puts(sb, "{");
	for (size_t i = 0; i < n; i++) {
		if (i > 0)
			sb_puts(sb, ",");
		sb_puts(sb, f->labels[i]);
		sb_puts(sb, "=\"");
		sb_escaped(sb, s->values[i], true);
		sb_puts(sb, "\"");
	}
	if (le != NULL) {
		sb_puts(sb, n ? ",le=\"" : "le=\"");
		sb_puts(sb, le);
		sb_puts(sb, "\"");
	}
	sb_puts(sb, "}");
}

static void sb_sample(struct gnn_wbuf *sb, const struct family *f, const struct series *s,
		      const char *suffix, const char *le, double v)
{
	char num[40];

	sb_sample_name(sb, f, s, suffix, le);
	sb_puts(sb, " ");
	sb_puts(sb, fmt_double(num, sizeof(num), v));
	sb_puts(sb, "\n");
}

static void render_series(struct gnn_wbuf *sb, const struct family *f, struct series *s)
{
	char le[40];
	uint64_t total = 0;

	if (f->kind != KIND_HISTOGRAM) {
		sb_sample(sb, f, s, "", NULL, atomic_load(&s->value));
		return;
	}
	/* _count is the sum of the buckets read here, so it always equals the
	 * +Inf bucket even while observations race with the render. */
	for (size_t i = 0; i <= f->nbounds; i++) {
		total += atomic_load(&s->buckets[i]);
		sb_sample(sb, f, s, "_bucket",
			  i < f->nbounds ? fmt_double(le, sizeof(le), f->bounds[i]) : "+Inf",
			  (double)total);
	}
	sb_sample(sb, f, s, "_sum", NULL, atomic_load(&s->value));
	sb_sample(sb, f, s, "_count", NULL, (double)total);
}

static void render_family(struct gnn_wbuf *sb, struct family *f)
{
	sb_puts(sb, "# HELP ");
	sb_puts(sb, f->name);
	sb_puts(sb, " ");
	sb_escaped(sb, f->help, false);
	sb_puts(sb, "\n# TYPE ");
	sb_puts(sb, f->name);
	sb_puts(sb, " ");
	sb_puts(sb, kind_names[f->kind]);
	sb_puts(sb, "\n");
	if (f->nlabels == 0)
		render_series(sb, f, &f->root.s);
	for (struct series *s = f->children; s != NULL; s = s->next)
		render_series(sb, f, s);
}

int gnn_metrics_render(struct gnn_metrics *reg, char **out, size_t *len)
{
	struct gnn_wbuf sb;

	if (reg == NULL || out == NULL)
		return GNN_EINVAL;
	gnn_wbuf_init(&sb);
	pthread_mutex_lock(&reg->lock);
	if (reg->proc_cpu != NULL)
		process_refresh(reg);
	for (size_t i = 0; i < reg->nhooks; i++)
		reg->hooks[i].fn(reg->hooks[i].ctx);
	for (struct family *f = reg->head; f != NULL; f = f->next)
		render_family(&sb, f);
	pthread_mutex_unlock(&reg->lock);
	gnn_wbuf_put(&sb, "", 1); /* the NUL; an empty registry still gives "" */
	if (sb.failed) {
		gnn_wbuf_free(&sb);
		return GNN_ENOMEM;
	}
	*out = (char *)sb.buf;
	if (len != NULL)
		*len = sb.len - 1;
	return GNN_OK;
}
