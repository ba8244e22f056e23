/* json.h - jansson helpers for configuration and metadata files: loading
 * with a located error message, atomic saving, and typed, range-checked
 * field access that names the missing or bad key. */
#ifndef GNN_JSON_H
#define GNN_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

/* Loads path into *out (a new reference the caller must json_decref).
 * Errors (file missing, syntax with line:column) are logged. */
int gnn_json_load(const char *path, json_t **out);

/* Writes j to "<path>.tmp", fsyncs, renames to path. Does not steal j. */
int gnn_json_save_atomic(const char *path, const json_t *j);

/* Checksummed files (checkpoints, results): j, an object, is saved with
 * one more key, "crc32": the CRC-32 (hex) of j's compact dump with sorted
 * keys, so that any change to a value (a flipped bit that still parses)
 * is caught. load checks and removes that key; a missing or wrong
 * checksum is logged ("bad_checksum") and returns GNN_EFORMAT. */
int gnn_json_save_checked(const char *path, const json_t *j);
int gnn_json_load_checked(const char *path, json_t **out);

/* A versioned, checksummed file: its "format" must be current and its
 * checksum right, except that a file of format legacy without a checksum
 * (written before checksums existed; legacy 0: none such) loads unchecked.
 * Errors are logged; GNN_EFORMAT or GNN_ERANGE for a file that is not
 * what it should be. */
int gnn_json_load_format(const char *path, int64_t legacy, int64_t current, json_t **out);

/* Typed getters: *out is written only on success; a missing key, a wrong
 * type or a value outside [min, max] is logged with what (e.g. the file
 * name) and key, and returns GNN_EFORMAT or GNN_ERANGE. The string and
 * object results are borrowed from obj. */
int gnn_json_get_int(const json_t *obj, const char *what, const char *key, int64_t min,
		     int64_t max, int64_t *out);
int gnn_json_get_str(const json_t *obj, const char *what, const char *key, const char **out);
int gnn_json_get_array(const json_t *obj, const char *what, const char *key, json_t **out);
/* A 64-bit number stored as a string (JSON numbers are doubles): decimal,
 * or hexadecimal without "0x" when hex is set. */
int gnn_json_get_u64(const json_t *obj, const char *what, const char *key, bool hex, uint64_t *out);

#endif
