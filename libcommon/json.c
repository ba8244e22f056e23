#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

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

#define CRC_KEY "crc32"

/* CRC-32 of j's canonical text: compact, keys sorted, reals with 17
 * digits (jansson's default), so a loaded and re-dumped object gives the
 * text it was written from. */
static int canonical_crc(const json_t *j, uint32_t *crc)
{
	char *text = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);

	if (text == NULL)
		return GNN_ENOMEM;
	*crc = (uint32_t)crc32(crc32(0, Z_NULL, 0), (const Bytef *)text, (uInt)strlen(text));
	free(text);
	return GNN_OK;
}

int gnn_json_save_checked(const char *path, const json_t *j)
{
	json_t *copy = json_is_object(j) ? json_copy((json_t *)j) : NULL;
	char hex[9];
	uint32_t crc;
	int rc = GNN_ENOMEM;

	if (copy == NULL)
		return json_is_object(j) ? GNN_ENOMEM : GNN_EINVAL;
	json_object_del(copy, CRC_KEY);
	if ((rc = canonical_crc(copy, &crc)) != GNN_OK)
		goto out;
	snprintf(hex, sizeof(hex), "%08x", (unsigned)crc);
	rc = json_object_set_new(copy, CRC_KEY, json_string(hex)) == 0 ? gnn_json_save_atomic(path, copy) : GNN_ENOMEM;
out:
	json_decref(copy);
	return rc;
}

int gnn_json_load_checked(const char *path, json_t **out)
{
	json_t *j = NULL;
	char got[16], hex[9];
	uint32_t crc;
	int rc;

	if ((rc = gnn_json_load(path, &j)) != GNN_OK)
		return rc;
	if (!json_is_object(j) || !json_is_string(json_object_get(j, CRC_KEY))) {
		GNN_ERROR("bad_checksum", "file=%s reason=\"no " CRC_KEY " key\"", path);
		rc = GNN_EFORMAT;
		goto fail;
	}
	/* copied: the key goes before the comparison */
	snprintf(got, sizeof(got), "%s", json_string_value(json_object_get(j, CRC_KEY)));
	json_object_del(j, CRC_KEY);
	if ((rc = canonical_crc(j, &crc)) != GNN_OK)
		goto fail;
	snprintf(hex, sizeof(hex), "%08x", (unsigned)crc);
	if (strcmp(got, hex) != 0) {
		GNN_ERROR("bad_checksum", "file=%s stored=%s computed=%s reason=\"the file was changed or "
			  "damaged after it was written\"", path, got, hex);
		rc = GNN_EFORMAT;
		goto fail;
	}
	*out = j;
	return GNN_OK;
fail:
	json_decref(j);
	return rc;
}

int gnn_json_load_format(const char *path, int64_t legacy, int64_t current, json_t **out)
{
	json_t *j = NULL;
	int rc;

	if ((rc = gnn_json_load(path, &j)) != GNN_OK)
		return rc;
	if (legacy > 0 && json_integer_value(json_object_get(j, "format")) == legacy &&
	    json_object_get(j, CRC_KEY) == NULL) {
		*out = j;
		return GNN_OK;
	}
	json_decref(j);
	if ((rc = gnn_json_load_checked(path, &j)) != GNN_OK)
		return rc;
	if ((rc = gnn_json_get_int(j, path, "format", current, current, &(int64_t){ 0 })) != GNN_OK) {
		json_decref(j);
		return rc;
	}
	*out = j;
	return GNN_OK;
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

int gnn_json_get_u64(const json_t *obj, const char *what, const char *key, bool hex, uint64_t *out)
{
	const char *s;
	char *end;
	uint64_t v;

	if (gnn_json_get_str(obj, what, key, &s) != GNN_OK)
		return GNN_EFORMAT;
	errno = 0;
	v = strtoull(s, &end, hex ? 16 : 10);
	if (errno != 0 || *end != '\0' || end == s || s[0] == '-' || s[0] == '+' || s[0] == ' ') {
		GNN_ERROR("bad_metadata", "in=%s key=%s value=\"%s\" reason=\"not a 64-bit %s number\"", what, key, s,
			  hex ? "hexadecimal" : "decimal");
		return GNN_EFORMAT;
	}
	*out = v;
	return GNN_OK;
}
