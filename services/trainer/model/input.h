/* input.h - layer 0's input rows: what every model reads first, the
 * per-type input encoder. One node's row is D floats, made from its
 * type's feature row (a type with features) or from its type's learned
 * vector (a type without). Two kinds (cfg encoder, model.h):
 *
 *   pad      (off; a one-type graph's default): the feature row
 *            zero-padded to D = in_dim, the widest type's width;
 *   project  (on; auto on a typed graph wider than hidden): a Linear per type with
 *            features, E_v = x_v W_t + b_t, D = hidden wide, as PyG's
 *            to_hetero examples, HGB's R-GCN and GraphStorm's input layer
 *            have it: every type lands in one space of one width, and a
 *            relation's weight no longer spans thousands of raw columns.
 *
 * In project mode a type whose rows are a learnable embedding alone, as
 * wide as D (cfg embed_only), is not projected: its rows enter as they
 * are (direct), and their gradient is dE_t itself.
 *
 * A type without features has a learned D-vector in both. In training,
 * project mode applies dropout to the rows (GraphStorm's input dropout).
 * The parameters are a slice of the model's one block (tr_input_bind),
 * laid out as
 *
 *   project: per type with features but the direct ones, in type
 *            order, W_t [feat_dim_t x D] row-major then b_t [D]; then
 *   both:    one D-float vector per type without features, in type order.
 *
 * Not thread-safe: one per model. */
#ifndef TR_INPUT_H
#define TR_INPUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "model.h"

struct tr_input {
	bool project;
	uint32_t T, D;                     /* node types; the rows' width */
	uint32_t feat_dim[GNN_MAX_TYPES];  /* the schema's */
	int32_t vec[GNN_MAX_TYPES];        /* a type's learned vector among them, -1: it has features */
	uint32_t nvec;
	size_t woff[GNN_MAX_TYPES];        /* project: W_t's first float in the slice */
	size_t vec_off, nparams;           /* the first type vector's; the slice's floats */
	uint64_t input_grad;               /* cfg input_grad: the types whose raw gradient is wanted */
	uint64_t direct;                   /* project: the types whose rows enter as they are */
	uint32_t keep_below;               /* dropout (project, training): kept when the draw < this */
	float keep_scale;
	float *params, *grads;             /* the bound slices, the model's */
	struct tr_ibuf rank;               /* each input node's row among its type's features */
	struct tr_fbuf h0;                 /* the rows, when assembled */
	struct tr_fbuf e, de, dm, dx, dt;  /* project: per-type rows, their gradient; vector rows' masked dH0;
					    * raw grad, and one type's of it */
	size_t toff[GNN_MAX_TYPES + 1];    /* project: each type's first row in e and de (e's rows of a
					    * direct type unused) */
	bool dropped;                      /* the last forward applied dropout with key */
	uint64_t key;
	const float *dh0;                  /* after a backward with input_grad: the rows' gradient, or NULL */
	size_t dh0_ld;
};

/* Sets in up for cfg (checked by tr_model_new; cfg->schema valid during
 * the call; the encoder resolved by tr_encoder_projects, model.h) and
 * counts its parameters into in->nparams; nothing is allocated yet. */
void tr_input_setup(struct tr_input *in, const struct tr_model_cfg *cfg);
/* Its parameter and gradient slices: in->nparams floats each, the model's. */
void tr_input_bind(struct tr_input *in, float *params, float *grads);
/* A model's two blocks, zeroed, with room for n parameters of its own
 * and then in's slice, bound (tr_input_bind): *params and *grads are the
 * model's (free), *nparams their floats. GNN_ENOMEM (nothing held). */
int tr_input_alloc(struct tr_input *in, size_t n, float **params, float **grads, size_t *nparams);
/* Initial values, parameter i of the slice drawn from (key, first + i):
 * W_t and b_t ~ U(-1/sqrt(feat_dim_t), +), nn.Linear's default; type
 * vectors ~ U(-1, 1). */
void tr_input_init(struct tr_input *in, uint64_t key, size_t first);
void tr_input_free(struct tr_input *in);

/* Layer 0's input rows of mb's input nodes into *h0 (num_src x D; the
 * minibatch's own features when they are the rows, else in's, valid
 * until the next call); with train, dropout (project) with key.
 * GNN_EINVAL when the input types disagree with type_rows. */
int tr_input_forward(struct tr_input *in, const struct gnn_minibatch *mb, bool train, uint64_t key,
		     struct tr_kstats *ks, const float **h0);
/* Whether tr_input_backward needs the gradient of the rows: it has
 * parameters that mb reaches, or cfg input_grad. */
bool tr_input_wants_grad(const struct tr_input *in, const struct gnn_minibatch *mb);
/* After tr_input_forward on mb: the slice's gradient from dh0, the
 * gradient of the rows (num_src x D, the caller's; NULL when
 * tr_input_wants_grad was false: the slice's gradient is zeroed); with
 * input_grad, also the gradient of the raw input rows (tr_input_grad). */
int tr_input_backward(struct tr_input *in, const struct gnn_minibatch *mb, const float *dh0,
		      struct tr_kstats *ks);
/* The gradient of the raw input rows, one per input node (num_src x *ld,
 * a node's first feat_dim_t floats meaningful for the types of cfg
 * input_grad, the other types' rows undefined; in's, valid until the next
 * backward), or NULL when there was none. */
const float *tr_input_grad(const struct tr_input *in, size_t *ld);

/* One node's row (D floats into out, the caller's) for type t from its
 * feature row feat (feat_dim_t floats; NULL exactly for a type without
 * features). feat may be out itself only in pad mode or for a direct
 * type. */
void tr_input_row(const struct tr_input *in, uint32_t t, const float *feat, float *out);

#endif
