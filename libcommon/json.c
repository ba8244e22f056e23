#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "log.h"

int gnn_json_load(const char *path, json_t **out)
{
	json_error_t e;
	json_t *j;

	if (access(path, R_OK) != 0) {
		GNN_ERROR("open_failed", "file=%s error=\"%s\"", path, strerror(errno));
		return errno == ENOENT ? GNN_ENOENT : GNN_EIO;
	}
	j = json_load_file(path, JSON_REJECT_DUPLICATES, &e);
	if (j == NULL) {
		GNN_ERROR("bad_json", "file=%s line=%d column=%d reason=\"%s\"", path, e.line, e.column, e.text);
		return GNN_EFORMAT;
	}
	*out = j;
	return GNN_OK;
}

int gnn_json_save_atomic(const char *path, const json_t *j)
{
	char *tmp = NULL;
	FILE *f;
	int rc = GNN_EIO;

	if (asprintf(&tmp, "%s.tmp", path) < 0)
		return GNN_ENOMEM;
	f = fopen(tmp, "w");
	if (f == NULL)
		goto out_log;
	if (json_dumpf(j, f, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0 || fputc('\n', f) == EOF ||
	    fflush(f) != 0 || fsync(fileno(f)) != 0) {
		fclose(f);
		goto out_unlink;
	}
	if (fclose(f) != 0 || rename(tmp, path) != 0)
		goto out_unlink;
	free(tmp);
	return GNN_OK;

out_unlink:
	unlink(tmp);
out_log:
	GNN_ERROR("write_failed", "file=%s error=\"%s\"", path, strerror(errno));
	free(tmp);
	return rc;
}

static json_t *field(const json_t *obj, const char *what, const char *key)
{
	json_t *v = json_is_object(obj) ? json_object_get(obj, key) : NULL;

	if (v == NULL)
		GNN_ERROR("bad_metadata", "in=%s key=%s reason=\"missing\"", what, key);
	return v;
}

int gnn_json_get_int(const json_t *obj, const char *what, const char *key, int64_t min,
		     int64_t max, int64_t *out)
{
	json_t *v = field(obj, what, key);
	json_int_t x;

	if (v == NULL)
		return GNN_EFORMAT;
	if (!json_is_integer(v)) {
		GNN_ERROR("bad_metadata", "in=%s key=%s reason=\"not an integer\"", what, key);
		return GNN_EFORMAT;
	}
	x = json_integer_value(v);
	if (x < min || x > max) {
		GNN_ERROR("bad_metadata", "in=%s key=%s value=%lld reason=\"out of range [%lld, %lld]\"",
			  what, key, (long long)x, (long long)min, (long long)max);
		return GNN_ERANGE;
	}
	*out = x;
	return GNN_OK;
}

int gnn_json_get_str(const json_t *obj, const char *what, const char *key, const char **out)
{
	json_t *v = field(obj, what, key);

	if (v == NULL)
		return GNN_EFORMAT;
	if (!json_is_string(v)) {
		GNN_ERROR("bad_metadata", "in=%s key=%s reason=\"not a string\"", what, key);
		return GNN_EFORMAT;
	}
	*out = json_string_value(v);
	return GNN_OK;
}

int gnn_json_get_array(const json_t *obj, const char *what, const char *key, json_t **out)
{
	json_t *v = field(obj, what, key);

	if (v == NULL)
		return GNN_EFORMAT;
	if (!json_is_array(v)) {
		GNN_ERROR("bad_metadata", "in=%s key=%s reason=\"not an array\"", what, key);
		return GNN_EFORMAT;
	}
	*out = v;
	return GNN_OK;
}
