/* decoder.h - link prediction's pieces that do not depend on the loop
 * (docs/training.md, "Link prediction"): the decoders that score a pair
 * of node embeddings (the score is libcommon/linkpred.h's, the one the
 * stores serve with; here what training adds: initial parameters and the
 * gradients), binary cross-entropy over a minibatch's pairs, and
 * the evaluation metrics (AUC and AP as GAE reports them, MRR and Hits@K
 * as OGB's link evaluator computes them).
 *
 * Decoders (d: the embedding width, h: --decoder-hidden):
 *   dot: score = h_u . h_v, no parameters;
 *   mlp: score = w2 . relu(W1 (h_u * h_v) + b1) + b2, parameters in one
 *        block laid out W1 [h x d] row-major, b1 [h], w2 [h], b2 [1]: the
 *        layout of `gnn-trainer infer`'s decoder.arr (docs/inference.md). */
#ifndef TR_DECODER_H
#define TR_DECODER_H

#include <stddef.h>
#include <stdint.h>

enum tr_decoder_kind { TR_DEC_DOT = 0, TR_DEC_MLP = 1 };

struct tr_decoder {
	enum tr_decoder_kind kind;
	uint32_t dim;      /* d */
	uint32_t hidden;   /* h (mlp only; 0 for dot) */
};

/* "dot" or "mlp" into *kind; GNN_EINVAL for another name. */
int tr_decoder_parse(const char *name, enum tr_decoder_kind *kind);
const char *tr_decoder_name(enum tr_decoder_kind kind);

/* Floats of the decoder's parameter block (0 for dot). */
size_t tr_decoder_num_params(const struct tr_decoder *dec);

/* Initial parameters (a pure function of seed): W1 and w2 uniform in
 * +-1/sqrt(fan_in), biases 0. p: [tr_decoder_num_params], the caller's. */
void tr_decoder_init(const struct tr_decoder *dec, float *p, uint64_t seed);

/* The score of one pair from embeddings hu, hv (d floats each):
 * gnn_linkdec_score's. p: the decoder's parameters (ignored for dot). */
float tr_decoder_score(const struct tr_decoder *dec, const float *p, const float *hu, const float *hv);

/* Backward of one pair's score given dscore = dLoss/dscore: accumulates
 * (+=) into gp (the parameters' gradient, mlp), ghu and ghv (d floats
 * each). work: h floats (mlp only). */
void tr_decoder_backward(const struct tr_decoder *dec, const float *p, const float *hu, const float *hv,
			 float dscore, float *gp, float *ghu, float *ghv, float *work);

/* Binary cross-entropy with logits over n pairs: pair i joins rows
 * pairs[2i] and pairs[2i+1] of emb (rows of ld floats, the first d used),
 * label 1 for the first npos pairs and 0 for the rest; the positives
 * together weigh as much as the negatives (each positive (n - npos) / npos
 * times, GAE's pos_weight; the plain mean for as many of each). Writes
 * *loss, the scores (n floats, the caller's; may be NULL), and when demb
 * is not NULL the gradient with respect to emb (rows x ld, zeroed first
 * by the caller) and accumulates the parameters' into gp. GNN_ENOMEM. */
int tr_link_loss(const struct tr_decoder *dec, const float *p, const float *emb, size_t ld,
		 const uint32_t *pairs, size_t n, size_t npos, double *loss, float *scores, float *demb, float *gp);

/* AUC (ties count one half: the Mann-Whitney statistic) and average
 * precision (scikit-learn's average_precision_score: precision at each
 * distinct threshold weighted by the recall gained there) of positives
 * pos[np] against negatives neg[nn]. Sorts a copy (2 x 8 bytes per
 * score). GNN_EINVAL when either side is empty, GNN_ENOMEM. */
int tr_auc_ap(const float *pos, size_t np, const float *neg, size_t nn, double *auc, double *ap);

/* Ranking metrics summed over positives, each ranked against its own K
 * negatives as OGB's evaluator does: rank = 1 + (optimistic + pessimistic)
 * / 2 with optimistic = #(neg > pos), pessimistic = #(neg >= pos). */
struct tr_rank_sums {
	double n, mrr, hits1, hits3, hits10;
};
void tr_rank_add(struct tr_rank_sums *s, float pos, const float *neg, size_t k);

#endif
