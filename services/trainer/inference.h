/* inference.h - `gnn-trainer infer`: predictions for every node of the graph
 * (of its label type, on a typed graph; embeddings for every node) from a
 * finished run's best parameters, by layer-wise full-neighbourhood
 * inference (docs/inference.md).
 *
 * Each of W workers (pods, or processes of gnn-local) computes layer l's
 * output for the nodes of its partitions (p mod W == worker) from layer
 * l-1's output of every node and its whole in-neighbourhood, writes it per
 * partition to OUT/.work-<params_crc>/, waits (bounded, logged) for every
 * other partition's, and goes on to layer l+1: the cost grows with layers
 * x edges, not with fanout^layers. The last layer writes OUT/part-<p>/
 * (predicted class, top-k classes and probabilities, original node IDs,
 * optionally the last hidden layer) and the per-split counts; worker 0
 * then writes OUT/summary.json (accuracy on train/valid/test next to the
 * trainer's sampled test accuracy) and removes the work folder.
 *
 * Exit status: 0 done (or found done), 1 failed (logged: missing or
 * damaged inputs, a checkpoint of another graph or model, a timeout), 2
 * bad options. */
#ifndef TR_INFER_H
#define TR_INFER_H

int tr_infer_main(int argc, char **argv);

#endif
