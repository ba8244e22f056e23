/* csv.c - the validated CSV(.gz) reader every input file goes through
 * (csv.h). */
#include "csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "err.h"
#include "log.h"

int pt_csv_open(struct pt_csv *c, const char *dir, const char *name)
{
	char path[sizeof(c->path)];
	struct stat st;

	/* NAME.gz, else NAME when it exists (neither: the error names NAME.gz) */
	snprintf(path, sizeof(path), "%s/%s.gz", dir, name);
	if (stat(path, &st) != 0) {
		char plain[sizeof(c->path)];

		snprintf(plain, sizeof(plain), "%s/%s", dir, name);
		if (stat(plain, &st) == 0)
			memcpy(path, plain, sizeof(path));
	}
	return pt_csv_open_path(c, path);
}

int pt_csv_open_path(struct pt_csv *c, const char *path)
{
	memset(c, 0, sizeof(*c));
	snprintf(c->path, sizeof(c->path), "%s", path);
	c->gz = gzopen(c->path, "rb");
	if (c->gz == NULL) {
		GNN_ERROR("open_failed", "file=%s error=\"%s\"", c->path, strerror(errno ? errno : ENOENT));
		return errno == ENOENT ? GNN_ENOENT : GNN_EIO;
	}
	gzbuffer(c->gz, 1 << 18);
	c->cap = 1 << 16;
	c->buf = malloc(c->cap);
	if (c->buf == NULL) {
		gzclose(c->gz);
		return GNN_ENOMEM;
	}
	return GNN_OK;
}

void pt_csv_close(struct pt_csv *c)
{
	if (c->gz != NULL)
		gzclose(c->gz);
	free(c->buf);
	c->gz = NULL;
	c->buf = NULL;
}

int pt_csv_fail(const struct pt_csv *c, const char *why)
{
	GNN_ERROR("bad_input", "file=%s line=%lld reason=\"%s\"", c->path, (long long)c->line, why);
	return GNN_EFORMAT;
}

/* zlib reports a damaged stream as soon as it inflates ahead, so the error
 * is only consulted where the data ends: at a line without a newline. */
int pt_csv_next(struct pt_csv *c, char **line)
{
	size_t len = 0;
	int errnum;

	for (;;) {
		if (gzgets(c->gz, c->buf + len, (int)(c->cap - len)) == NULL)
			break;
		len += strlen(c->buf + len);
		if (len > 0 && c->buf[len - 1] == '\n')
			break;
		if (len + 1 < c->cap)
			continue;  /* stopped early at the end of the data: confirm */
		char *grown = realloc(c->buf, c->cap * 2);

		if (grown == NULL)
			return -GNN_ENOMEM;
		c->buf = grown;
		c->cap *= 2;
	}
	if (len == 0 || c->buf[len - 1] != '\n') {
		gzerror(c->gz, &errnum);
		if (errnum != Z_OK) {
			c->line++;
			pt_csv_fail(c, errnum == Z_BUF_ERROR ? "truncated gzip file" : "corrupt gzip data");
			return -GNN_EFORMAT;
		}
	}
	if (len == 0)
		return 0;
	c->line++;
	while (len > 0 && (c->buf[len - 1] == '\n' || c->buf[len - 1] == '\r'))
		c->buf[--len] = '\0';
	*line = c->buf;
	return 1;
}

bool pt_csv_field_i64(char **p, int64_t *out)
{
	char *end;
	long long v;

	if (**p == '\0' || **p == ',')
		return false;
	errno = 0;
	v = strtoll(*p, &end, 10);
	if (errno != 0 || end == *p || (*end != ',' && *end != '\0'))
		return false;
	*out = v;
	*p = *end == ',' ? end + 1 : end;
	return true;
}

bool pt_csv_exists(const char *dir, const char *name)
{
	char path[4200];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s.gz", dir, name);
	if (stat(path, &st) == 0)
		return true;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return stat(path, &st) == 0;
}
