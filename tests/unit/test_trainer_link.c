/* test_trainer_link.c - link prediction's decoders (the score's float
 * order), loss and metrics (services/trainer/model/decoder.h) against
 * hand-computed values, and the pair
 * steps (pairs.h). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "err.h"
#include "decoder.h"
#include "hash.h"
#include "linkpred.h"
#include "log.h"
#include "pairs.h"
#include "proto.h"
#include "testlib.h"

static bool near(double a, double b, double tol)
{
	return fabs(a - b) <= tol;
}

/* pos {0.9, 0.8, 0.3}, neg {0.7, 0.3, 0.1}: of the 9 (pos, neg) pairs
 * 7 are ordered right and one (0.3 vs 0.3) ties: AUC = 7.5 / 9. AP
 * (scikit-learn): thresholds 0.9 (P=1, +1/3 recall), 0.8 (P=1, +1/3),
 * 0.7 (no positive), 0.3 (2 tied: 1 pos 1 neg, P=3/5, +1/3): (1 + 1 + 0.6)
 * / 3. */
static void test_auc_ap(void)
{
	const float pos[] = { 0.9f, 0.8f, 0.3f }, neg[] = { 0.7f, 0.3f, 0.1f };
	const float all_good[] = { 2, 3 }, all_bad[] = { 0, 1 };
	double auc, ap;

	CHECK(tr_auc_ap(pos, 3, neg, 3, &auc, &ap) == GNN_OK);
	CHECK(near(auc, 7.5 / 9, 1e-12));
	CHECK(near(ap, 2.6 / 3, 1e-12));
	CHECK(tr_auc_ap(all_good, 2, all_bad, 2, &auc, &ap) == GNN_OK && auc == 1.0 && ap == 1.0);
	/* reversed: AUC 0; AP: positives at ranks 3 and 4 -> (1/3 + 2/4) / 2 */
	CHECK(tr_auc_ap(all_bad, 2, all_good, 2, &auc, &ap) == GNN_OK && auc == 0.0 && near(ap, (1.0 / 3 + 0.5) / 2, 1e-12));
	/* all tied: one half, and AP the positives' share */
	CHECK(tr_auc_ap(all_good, 1, all_good, 1, &auc, &ap) == GNN_OK && auc == 0.5 && ap == 0.5);
	CHECK(tr_auc_ap(pos, 0, neg, 3, &auc, &ap) == GNN_EINVAL);
}

/* OGB's ranks: optimistic #(neg > pos), pessimistic #(neg >= pos), rank =
 * 1 + their mean. */
static void test_rank(void)
{
	const float a[] = { 0.1f, 0.2f, 0.3f }, b[] = { 0.6f, 0.5f, 0.9f, 0.1f }, c[] = { 0.5f, 0.5f };
	struct tr_rank_sums s = { 0 };

	tr_rank_add(&s, 0.5f, a, 3);   /* rank 1 */
	tr_rank_add(&s, 0.5f, b, 4);   /* opt 2 (0.6, 0.9), pes 3 (+0.5): rank 3.5 */
	tr_rank_add(&s, 0.5f, c, 2);   /* opt 0, pes 2: rank 2 */
	CHECK(s.n == 3);
	CHECK(near(s.mrr, 1 + 1 / 3.5 + 0.5, 1e-12));
	CHECK(s.hits1 == 1 && s.hits3 == 2 && s.hits10 == 3);
}

/* The largest difference between grad[0..n) and the central differences
 * of the loss over x[0..n) (x: emb's or p's own values, moved and put back). */
static double fd_worst(const struct tr_decoder *dec, float *p, float *emb, const uint32_t *pairs, size_t npos,
		       float *x, const float *grad, size_t n)
{
	double lp, lm, worst = 0;

	for (size_t i = 0; i < n; i++) {
		float keep = x[i];

		x[i] = keep + 1e-3f;
		tr_link_loss(dec, p, emb, 3, pairs, 4, npos, &lp, NULL, NULL, NULL);
		x[i] = keep - 1e-3f;
		tr_link_loss(dec, p, emb, 3, pairs, 4, npos, &lm, NULL, NULL, NULL);
		x[i] = keep;
		worst = fmax(worst, fabs((lp - lm) / 2e-3 - grad[i]));
	}
	return worst;
}

static double bce(double s, double y)
{
	return log1p(exp(s)) - y * s;
}

/* BCE with logits and its gradient against finite differences, both
 * decoders, 2 positives of 4 pairs and 1 (which then weighs as much as
 * the 3 negatives). */
static void test_loss_grad(void)
{
	float emb[4 * 3] = { 0.3f, -0.2f, 0.5f, 0.1f, 0.4f, -0.3f, -0.6f, 0.2f, 0.1f, 0.05f, -0.1f, 0.7f };
	const uint32_t pairs[] = { 0, 1, 2, 3, 0, 2, 1, 3 };
	for (int kind = 0; kind < 4; kind++) {
		size_t npos = kind < 2 ? 2 : 1;
		struct tr_decoder dec = { .kind = kind % 2 ? TR_DEC_MLP : TR_DEC_DOT, .dim = 3, .hidden = kind % 2 ? 4 : 0 };
		size_t np = tr_decoder_num_params(&dec);
		float p[32] = { 0 }, gp[32] = { 0 }, demb[12] = { 0 }, sc[4];
		double loss, worst;

		CHECK(np == (kind % 2 ? 4 * 3 + 4 + 4 + 1 : 0));
		tr_decoder_init(&dec, p, 7);
		for (size_t i = 12; i < 16 && kind % 2; i++)   /* biases away from the ReLU's kink */
			p[i] = 0.3f;
		CHECK(tr_link_loss(&dec, p, emb, 3, pairs, 4, npos, &loss, sc, demb, gp) == GNN_OK);
		if (kind == 0) {   /* scores by hand: 0.03-0.08-0.15, ... */
			double s0 = 0.3 * 0.1 + -0.2 * 0.4 + 0.5 * -0.3;

			CHECK(near(sc[0], s0, 1e-6));
		}
		if (kind % 2 == 0) {   /* the mean, or with 1 positive (3 + 3 negatives) / 6 */
			double want = npos == 2 ? (bce(sc[0], 1) + bce(sc[1], 1) + bce(sc[2], 0) + bce(sc[3], 0)) / 4
					      : (3 * bce(sc[0], 1) + bce(sc[1], 0) + bce(sc[2], 0) + bce(sc[3], 0)) / 6;

			CHECK(near(loss, want, 1e-6));
		}
		worst = fmax(fd_worst(&dec, p, emb, pairs, npos, emb, demb, 12),
			     fd_worst(&dec, p, emb, pairs, npos, p, gp, np));
		printf("  decoder=%s positives=%zu largest gradient difference %.2e\n", tr_decoder_name(dec.kind), npos,
		       worst);
		CHECK(worst < 1e-3);
	}
}

/* A step's seeds are the unique endpoints in order of appearance; its
 * pairs index them; the exclusion list is the positives. */
static void test_pair_steps(void)
{
	struct tr_pair_steps s = { 0 };
	const int64_t pos[] = { 5, 9, 9, 2 }, neg[] = { 5, 7, 9, 5 }, pos2[] = { 1, 2 };

	CHECK(tr_pair_steps_add(&s, pos, 2, neg, 2) == GNN_OK);
	CHECK(tr_pair_steps_add(&s, pos2, 1, NULL, 0) == GNN_OK);
	CHECK(s.steps == 2 && s.step_off[1] == 4 && s.step_off[2] == 6);
	CHECK(s.seeds[0] == 5 && s.seeds[1] == 9 && s.seeds[2] == 2 && s.seeds[3] == 7);
	CHECK(s.pairs[0] == 0 && s.pairs[1] == 1 && s.pairs[2] == 1 && s.pairs[3] == 2);
	CHECK(s.pairs[4] == 0 && s.pairs[5] == 3 && s.pairs[6] == 1 && s.pairs[7] == 0);
	CHECK(s.pair_off[2] == 5 && s.pairs[8] == 0 && s.pairs[9] == 1 && s.seeds[4] == 1 && s.seeds[5] == 2);
	CHECK(s.excl_off[1] == 2 && s.excl_off[2] == 3 && s.excl[4] == 1 && s.excl[5] == 2);
	tr_pair_steps_reset(&s);
	CHECK(s.steps == 0);
	tr_pair_steps_free(&s);
}

/* The score is libcommon's (linkpred.h), in float and in the order the
 * trainer always had: a model's params_crc depends on every bit, so the
 * reference here is that order written out, compared exactly. The
 * query-folded TOPK path must give the same bits. */
static void test_score_order(void)
{
	enum { D = 13, H = 7 };
	struct tr_decoder dot = { .kind = TR_DEC_DOT, .dim = D }, mlp = { .kind = TR_DEC_MLP, .dim = D, .hidden = H };
	float p[H * D + 2 * H + 1], hu[D], hv[D];
	bool same = true;

	for (uint64_t trial = 0; trial < 50; trial++) {
		float dref = 0, mref, z;
		struct gnn_linkq lq = { 0 };

		for (size_t i = 0; i < sizeof(p) / sizeof(p[0]); i++)
			p[i] = (float)(2 * gnn_unit64(gnn_draw64(trial, i)) - 1);
		for (size_t i = 0; i < D; i++) {
			hu[i] = (float)(4 * gnn_unit64(gnn_draw64(trial + 1000, i)) - 2);
			hv[i] = (float)(4 * gnn_unit64(gnn_draw64(trial + 2000, i)) - 2);
			dref += hu[i] * hv[i];
		}
		mref = p[H * D + 2 * H];
		for (size_t j = 0; j < H; j++) {
			z = p[H * D + j];
			for (size_t i = 0; i < D; i++)
				z += p[j * D + i] * hu[i] * hv[i];
			mref += p[H * D + H + j] * (z > 0 ? z : 0);
		}
		same = same && tr_decoder_score(&dot, NULL, hu, hv) == dref &&
		       tr_decoder_score(&mlp, p, hu, hv) == mref;
		if (CHECK(gnn_linkq_init(&lq, &(struct gnn_linkdec){ .kind = GNN_LINK_MLP, .dim = D, .hidden = H,
								     .params = p }, hu) == GNN_OK))
			same = same && gnn_linkq_score(&lq, hv) == mref;
		gnn_linkq_free(&lq);
	}
	CHECK(same);
}

static void test_decoder_parse(void)
{
	enum tr_decoder_kind k;

	CHECK(tr_decoder_parse("dot", &k) == GNN_OK && k == TR_DEC_DOT);
	CHECK(tr_decoder_parse("mlp", &k) == GNN_OK && k == TR_DEC_MLP);
	CHECK(tr_decoder_parse("cosine", &k) == GNN_EINVAL);
}

int main(void)
{
	gnn_log_init("test_trainer_link");
	RUN(test_auc_ap);
	RUN(test_rank);
	RUN(test_loss_grad);
	RUN(test_pair_steps);
	RUN(test_score_order);
	RUN(test_decoder_parse);
	return t_done();
}
