/* csv.h - a gzip (or plain) CSV file read line by line and validated: the
 * reader under every input file of the partitioner (OGB's raw layouts,
 * ogb.c, import.c, import_hetero.c; the edge split's CSV files,
 * edgesplit.c). Errors name the file and the line. */
#ifndef GNN_PART_CSV_H
#define GNN_PART_CSV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <zlib.h>

/* A gzip (or plain) CSV file read line by line. */
struct pt_csv {
	gzFile gz;
	char path[4096];
	int64_t line;
	char *buf;
	size_t cap;
};

/* Opens DIR/NAME.gz, else DIR/NAME without .gz. GNN_ENOENT (logged) when
 * neither exists. pt_csv_close releases it. */
int pt_csv_open(struct pt_csv *c, const char *dir, const char *name);
/* Opens exactly path (gzip or plain, as zlib finds it). */
int pt_csv_open_path(struct pt_csv *c, const char *path);
void pt_csv_close(struct pt_csv *c);

/* Logs why (the error's detail) against the file and its current line;
 * returns GNN_EFORMAT. */
int pt_csv_fail(const struct pt_csv *c, const char *why);

/* Reads the next line into *line (c's buffer, without its newline).
 * Returns 1 for a line, 0 at a clean end of file, or a negative GNN error
 * (truncated or corrupt gzip, logged). */
int pt_csv_next(struct pt_csv *c, char **line);

/* Parses one integer field ending at ',' or the end of the line and
 * advances *p past the comma. */
bool pt_csv_field_i64(char **p, int64_t *out);

/* Whether DIR/NAME.gz or DIR/NAME exists. */
bool pt_csv_exists(const char *dir, const char *name);

#endif
