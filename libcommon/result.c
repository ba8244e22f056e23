#include "result.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "err.h"
#include "json.h"
#include "log.h"

#define FORMAT 2          /* 2: with the crc32 key */
#define FORMAT_UNCHECKED 1

int gnn_result_save(const char *dir, const struct gnn_result *r)
{
	char file[PATH_MAX], hash[17], crc[9];
	json_t *j;
	int rc;

	if ((size_t)snprintf(file, sizeof(file), "%s/" GNN_RESULT_FILE, dir) >= sizeof(file))
		return GNN_ERANGE;
	snprintf(hash, sizeof(hash), "%016" PRIx64, r->model_hash);
	snprintf(crc, sizeof(crc), "%08" PRIx32, r->params_crc);
	j = json_pack("{s:i, s:b, s:I, s:s, s:f, s:I, s:f, s:I, s:s, s:f}", "format", FORMAT, "finished", 1,
		      "epochs", (json_int_t)r->epochs, "model_hash", hash, "test_acc", r->test_acc, "test_nodes",
		      (json_int_t)r->test_nodes, "best_val_acc", r->best_val_acc, "best_epoch",
		      (json_int_t)r->best_epoch, "params_crc", crc, "train_s", r->train_s);
	if (j == NULL)
		return GNN_ENOMEM;
	if (r->has_config && json_object_set_new(j, "config", gnn_mcfg_to_json(&r->config, GNN_MCFG_ALL)) != 0) {
		json_decref(j);
		return GNN_ENOMEM;
	}
	if (r->task[0] != '\0') {
		json_t *lp = json_pack("{s:s, s:s, s:f, s:f, s:f}", "task", r->task, "decoder", r->decoder,
				       "best_val_auc", r->best_val_acc, "test_auc", r->test_acc, "test_ap", r->test_ap);

		rc = lp == NULL || json_object_update(j, lp) != 0 ? GNN_ENOMEM : GNN_OK;
		json_decref(lp);
		if (rc != GNN_OK) {
			json_decref(j);
			return rc;
		}
	}
	rc = gnn_json_save_checked(file, j);
	json_decref(j);
	return rc;
}

/* A number key in [0, max]: accuracies and seconds. */
static int get_number(const json_t *j, const char *file, const char *key, double max, double *out)
{
	json_t *v = json_object_get(j, key);

	if (!json_is_number(v) || !(json_number_value(v) >= 0 && json_number_value(v) <= max)) {
		GNN_ERROR("bad_result", "file=%s key=%s reason=\"missing, not a number or outside 0..%g\"", file, key,
			  max);
		return GNN_EFORMAT;
	}
	*out = json_number_value(v);
	return GNN_OK;
}

int gnn_result_read(const char *dir, struct gnn_result *r, bool *found)
{
	char file[PATH_MAX];
	json_t *j = NULL;
	uint64_t crc;
	int64_t epochs, best, test_nodes = 0;
	int rc;

	*found = false;
	if ((size_t)snprintf(file, sizeof(file), "%s/" GNN_RESULT_FILE, dir) >= sizeof(file))
		return GNN_ERANGE;
	if (access(file, F_OK) != 0)
		return GNN_OK;
	if ((rc = gnn_json_load_format(file, FORMAT_UNCHECKED, FORMAT, &j)) != GNN_OK)
		return rc;
	if ((rc = gnn_json_get_int(j, file, "epochs", 0, UINT32_MAX, &epochs)) != GNN_OK ||
	    (rc = gnn_json_get_int(j, file, "best_epoch", -1, UINT32_MAX, &best)) != GNN_OK ||
	    (rc = gnn_json_get_u64(j, file, "model_hash", true, &r->model_hash)) != GNN_OK ||
	    (rc = gnn_json_get_u64(j, file, "params_crc", true, &crc)) != GNN_OK ||
	    (rc = get_number(j, file, "test_acc", 1, &r->test_acc)) != GNN_OK ||
	    (rc = get_number(j, file, "best_val_acc", 1, &r->best_val_acc)) != GNN_OK ||
	    (rc = get_number(j, file, "train_s", 1e12, &r->train_s)) != GNN_OK ||
	    (json_object_get(j, "test_nodes") != NULL &&   /* absent in results written before it */
	     (rc = gnn_json_get_int(j, file, "test_nodes", 0, INT64_MAX, &test_nodes)) != GNN_OK))
		goto out;
	if (crc > UINT32_MAX) {
		GNN_ERROR("bad_result", "file=%s key=params_crc reason=\"more than 32 bits\"", file);
		rc = GNN_EFORMAT;
		goto out;
	}
	r->epochs = (uint32_t)epochs;
	r->best_epoch = (int32_t)best;
	r->params_crc = (uint32_t)crc;
	r->test_nodes = (uint64_t)test_nodes;
	r->task[0] = r->decoder[0] = '\0';
	r->test_ap = 0;
	if (json_is_string(json_object_get(j, "task"))) {   /* a link prediction result */
		snprintf(r->task, sizeof(r->task), "%s", json_string_value(json_object_get(j, "task")));
		snprintf(r->decoder, sizeof(r->decoder), "%s",
			 json_is_string(json_object_get(j, "decoder")) ? json_string_value(json_object_get(j, "decoder")) : "");
		r->test_ap = json_number_value(json_object_get(j, "test_ap"));
	}
	r->has_config = json_object_get(j, "config") != NULL;
	if (r->has_config && (rc = gnn_mcfg_from_json(json_object_get(j, "config"), file, &r->config)) != GNN_OK)
		goto out;
	*found = true;
out:
	json_decref(j);
	return rc;
}
