#!/usr/bin/env python3
"""The cost model of docs/scale.md ("ogbn-papers100M: a cost model"): epoch
time and memory per pod for ogbn-papers100M on N machines, built from the
parts measured at ogbn-products' size (docs/scale.md) and from
`gnn-trainer bench` at both graphs' shapes. Every input below names where it
was measured; nothing is fitted to the check point (tests/net/costcheck.py,
which uses pipeline_epoch() on inputs of its own).

Usage: costmodel.py [--cores C] [--threads K]   prints the tables of docs/scale.md
"""
import argparse
import math

# ---- ogbn-papers100M (OGB's dataset page) ----------------------------------
PAPERS = {"nodes": 111_059_956, "edges": 1_615_685_872, "train": 1_207_179, "feat_dim": 128, "classes": 172}

# ---- measured at ogbn-products' size, docs/scale.md -------------------------
# stores:0.2 path, f32, 2 stores, 2 samplers, 2 trainers, 1 epoch, one 2-core
# machine ("The cost of TLS", plain column: GNN_BENCH_REUSE_PARTITION=1
# GNN_BENCH_NO_INFER=1 GNN_BENCH_PATHS="stores:0.2 stores:0.2:tls"
# tests/bench_products.sh): training system 204 CPU-s, the stores 31-33 s
# each, the trainers 63 s each, so the samplers 204 - 64 - 126 = 14 s.
PRODUCTS = {
    "steps": 97, "trainers": 2,                     # per trainer, one epoch ("What the figures say")
    "cpu_trainer_s": 63.0, "cpu_stores_s": 64.0, "cpu_system_s": 204.0,
    "step_cpu_s": 0.333,                            # compute_cpu_ms_per_step ("What the figures say")
    "bench_step_s": 0.236,                          # gnn-trainer bench, same run, 1 thread
    # bytes per minibatch ("Feature movement", run of 2026-11-27): FEAT
    # answers (stores to trainers), other store traffic (to samplers),
    # the samplers' own (blocks to the trainers)
    "feat_mb": 114.1, "store_other_mb": 9.5, "sampler_mb": 10.8, "hit": 0.475,
    # peak RSS, stores:0.2 after the row pool (MB): trainers 1679-1687,
    # stores 983-1010, samplers 199; the cache 187 MB, its index 10 MB
    "rss_trainer_mb": 1687, "rss_sampler_mb": 212, "store_own_mb": 22, "cache_mb": 187, "index_mb": 10,
    # blocks: gnn-trainer bench's generator at products' N (docs/model.md;
    # the real sampler gives 605k input nodes), 100 features
    "n_in": 606_886, "edges_sampled": 884_250 + 59_800 + 5_120, "feat_dim": 100,
}

# ---- measured now (docs/scale.md gives the commands) ------------------------
# gnn-trainer bench --threads 1 --steps 10, alternating the products shape
# (default) and papers100M's (--graph-nodes 111059956 --in-dim 128
# --classes 172), three pairs beside a CI run: step ms 305.3/376.6,
# 283.7/308.4, 310.5/373.9 (papers/products 1.23, 1.09, 1.20); at papers'
# shape the matmuls took 298.8/244.4/301.0 ms and the rest 72.1/54.9/64.0.
BENCH = {"papers_over_products": 1.20, "papers_n_in": 992_634, "papers_edges_sampled": 994_050 + 61_230 + 5_120,
         "papers_params": 285_356, "serial_share": 64.0 / 373.9}
# docs/model.md: sgemm took 181.2 ms at 1 thread, 105.2 at 2 (efficiency
# 181.2 / (2 x 105.2) = 0.86); the rest (47.4, 50.3 ms) did not shrink.
SGEMM_EFF = 181.2 / (2 * 105.2)
# docs/allreduce.md, "Measured": 1 MiB over T=4 ranks on loopback, 3.0 ms:
# 2(T-1) = 6 messages, so 0.5 ms per ring message, bytes included.
RING_MSG_S = 3.0e-3 / 6
# TCP payload per byte on an Ethernet wire at MTU 1500 (1448 of 1538 with
# timestamps, framing, preamble and gap).
WIRE_EFF = 1448 / 1538
BATCH = 1024


def pipeline_epoch(head, m, stages):
    """m minibatches through overlapping stages (each taking stages[i] per
    minibatch; the loader keeps `--prefetch` in flight, enough for them to
    overlap): the slowest stage sets the pace, the others add once (the
    first minibatch fills the pipeline, the last drains it); head is what
    precedes the first stage."""
    return head + (m - 1) * max(stages) + sum(stages)


def per_minibatch(dtype="f32", hit=PRODUCTS["hit"]):
    """Bytes and core-seconds per papers100M minibatch, scaled from the
    products figures: rows (and so feature bytes, the stores' and the
    trainers' non-model CPU) by input nodes x width; blocks and the
    samplers' CPU by input nodes; the model step by the bench ratio."""
    p = PRODUCTS
    nodes = BENCH["papers_n_in"] / p["n_in"]
    rows = nodes * PAPERS["feat_dim"] / p["feat_dim"]
    width = 0.5 if dtype == "f16" else 1.0
    mb = 1e6
    feat = p["feat_mb"] * mb * rows * width * (1 - hit) / (1 - p["hit"])
    trained = p["steps"] * p["trainers"]
    cpu_samplers = p["cpu_system_s"] - p["cpu_trainer_s"] * p["trainers"] - p["cpu_stores_s"]
    return {
        "nodes_ratio": nodes, "rows_ratio": rows,
        "feat_b": feat, "other_b": p["store_other_mb"] * mb * nodes, "blocks_b": p["sampler_mb"] * mb * nodes,
        "step_cpu": p["step_cpu_s"] * BENCH["papers_over_products"],
        "trainer_cpu": (p["cpu_trainer_s"] / p["steps"] - p["step_cpu_s"]) * rows,
        "store_cpu": p["cpu_stores_s"] / trained * rows,
        "sampler_cpu": cpu_samplers / trained * nodes,
    }


def step_wall(step_cpu, threads):
    """The model step on `threads` OpenBLAS threads: the sgemm share spread
    at the 2-thread efficiency, the rest serial (as measured)."""
    s = BENCH["serial_share"]
    return step_cpu * (s + (1 - s) / (threads * SGEMM_EFF))


def predict(n, gbit, cores, threads=None, dtype="f32", hit=PRODUCTS["hit"], stores=None, samplers=None,
            trainers=None, local_rows=None):
    """Training time of one epoch (s) on n machines of `cores` cores, one
    NIC of gbit Gbit/s each, with P stores, S samplers and T trainers spread
    evenly (default one of each per machine). Returns the terms too."""
    P, S, T = stores or n, samplers or n, trainers or n
    # half the machine's cores to its trainers' OpenBLAS threads (the rest
    # to their loaders, the store and the sampler)
    threads = threads or max(1, cores // 2 // max(1, T // n))
    q = per_minibatch(dtype, hit)
    m = math.ceil(PAPERS["train"] / (T * BATCH))                 # steps per trainer (shares padded)
    per_machine = T / n                                          # minibatches per machine per step
    remote = 1 - (1.0 / n if local_rows is None else local_rows)  # rows from the machine's own store stay
    ring = 2 * (T - 1) / T * 4 * BENCH["papers_params"] if T > 1 else 0.0
    bw = gbit * 1e9 / 8 * WIRE_EFF
    # each way through a machine's NIC (stores send what trainers receive)
    nic_b = per_machine * ((q["feat_b"] + q["other_b"] + q["blocks_b"]) * remote + ring)
    t_net = nic_b / bw
    cpu_b = per_machine * (q["step_cpu"] + q["trainer_cpu"] + q["store_cpu"] + q["sampler_cpu"])
    t_cpu = cpu_b / cores
    t_ring = 2 * (T - 1) * RING_MSG_S + ring / bw if T > 1 else 0.0
    t_chain = step_wall(q["step_cpu"], threads) + t_ring
    epoch = pipeline_epoch(0.0, m, [t_net, t_cpu, t_chain])
    bound = max((t_net, "network"), (t_cpu, "cpu"), (t_chain, "step"))[1]
    return {"epoch_s": epoch, "m": m, "t_net": t_net, "t_cpu": t_cpu, "t_chain": t_chain, "t_ring": t_ring,
            "nic_mb": nic_b / 1e6, "cpu_core_s": cpu_b, "bound": bound, "P": P, "S": S, "T": T}


def memory(P, dtype="f32", cache_ratio=0.2):
    """Peak RSS per pod (GB): a store maps its partition's share (its RSS at
    products' size was its share of the partition output plus ~22 MB); a
    trainer holds its minibatches in flight and workspace (products' 1490
    MB without the cache, scaled by rows) plus the cache and its index."""
    p = PRODUCTS
    n, e = PAPERS["nodes"], 2 * PAPERS["edges"]                  # symmetrised (gnn-partition's default)
    s = 2 if dtype == "f16" else 4
    feats = n * PAPERS["feat_dim"] * s
    csr = 8 * e + 8 * n                                          # i64 indices and indptr (docs/formats.md)
    other = 4 * n + 1 * n                                        # labels, split
    q = per_minibatch(dtype)
    gb = 1e9
    store = (feats + csr + other) / P / gb + p["store_own_mb"] / 1e3
    sampler = p["rss_sampler_mb"] * q["nodes_ratio"] / 1e3
    index = 4 * n / gb
    cache = cache_ratio * feats / gb
    trainer = (p["rss_trainer_mb"] - p["cache_mb"] - p["index_mb"]) * q["rows_ratio"] / 1e3 + index + cache
    return {"store": store, "sampler": sampler, "trainer": trainer, "cache": cache, "index": index,
            "partition": (feats + csr + other) / gb, "features": feats / gb, "csr": csr / gb}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cores", type=int, default=16, help="cores per machine (default 16)")
    ap.add_argument("--threads", type=int, default=0, help="OpenBLAS threads per trainer (default cores/2)")
    a = ap.parse_args()
    for dt in ("f32", "f16"):
        q = per_minibatch(dt)
        print("per_minibatch dtype=%s rows_ratio=%.3f nodes_ratio=%.3f feat_mb=%.1f other_mb=%.1f blocks_mb=%.1f "
              "step_cpu_s=%.3f trainer_cpu_s=%.3f store_cpu_s=%.3f sampler_cpu_s=%.3f total_core_s=%.3f" % (
                  dt, q["rows_ratio"], q["nodes_ratio"], q["feat_b"] / 1e6, q["other_b"] / 1e6, q["blocks_b"] / 1e6,
                  q["step_cpu"], q["trainer_cpu"], q["store_cpu"], q["sampler_cpu"],
                  q["step_cpu"] + q["trainer_cpu"] + q["store_cpu"] + q["sampler_cpu"]))
    print("epoch cores=%d threads=%s (training only; P=S=T=N unless said; cache 0.2 with products' hit rate 0.475)"
          % (a.cores, a.threads or "cores/2"))
    cases = [(n, None) for n in (4, 8, 16, 32)] + [(16, 32)]
    for dt in ("f32", "f16"):
        for n, t in cases:
            cols = []
            for g in (10, 25):
                r = predict(n, g, a.cores, a.threads or None, dt, trainers=t)
                cols.append("%dG=%.1fs(%s: net %.3f cpu %.3f step %.3f)" % (
                    g, r["epoch_s"], r["bound"], r["t_net"], r["t_cpu"], r["t_chain"]))
            print("epoch dtype=%s N=%d P=%d S=%d T=%d m=%d nic_mb_per_step=%.0f %s" % (
                dt, n, n, n, t or n, r["m"], predict(n, 10, a.cores, None, dt, trainers=t)["nic_mb"], " ".join(cols)))
    for dt in ("f32", "f16"):
        cols = []
        for g in (10, 25):
            r = predict(16, g, a.cores, a.threads or None, dt, hit=0.0)
            cols.append("%dG=%.1fs(%s: net %.3f cpu %.3f step %.3f)" % (
                g, r["epoch_s"], r["bound"], r["t_net"], r["t_cpu"], r["t_chain"]))
        print("epoch dtype=%s N=16 no cache (hit 0; CPU still at products' hit rate) nic_mb_per_step=%.0f %s" % (
            dt, predict(16, 10, a.cores, None, dt, hit=0.0)["nic_mb"], " ".join(cols)))
    for dt in ("f32", "f16"):
        for n in (4, 8, 16, 32):
            mm = memory(n, dt)
            print("memory dtype=%s P=%d store_gb=%.1f sampler_gb=%.2f trainer_gb=%.1f (cache %.1f, index %.2f) "
                  "machine_gb=%.1f partition_gb=%.1f (features %.1f, csr %.1f)" % (
                      dt, n, mm["store"], mm["sampler"], mm["trainer"], mm["cache"], mm["index"],
                      mm["store"] + mm["sampler"] + mm["trainer"], mm["partition"], mm["features"], mm["csr"]))
    # The anchors.
    q = per_minibatch("f32")
    total = q["step_cpu"] + q["trainer_cpu"] + q["store_cpu"] + q["sampler_cpu"]
    m16 = math.ceil(PAPERS["train"] / (16 * BATCH))
    print("anchor distdgl machines=16 epoch_s=13 core_s_per_epoch=%.0f cores_per_machine_for_13s=%.1f "
          "steps_per_trainer=%d step_budget_s=%.3f" % (total * m16 * 16, total * m16 * 16 / 16 / 13, m16, 13 / m16))
    for dt in ("f32", "f16"):
        for g in (10, 25):
            part = predict(8, g, a.cores, a.threads or None, dt)
            full = predict(8, g, a.cores, a.threads or None, dt, hit=1.0)
            print("anchor salientpp machines=8 dtype=%s gbit=%d cache0.2_s=%.1f full_copy_s=%.1f ratio=%.2f "
                  "(the CPU held equal)" % (dt, g, part["epoch_s"], full["epoch_s"], part["epoch_s"] / full["epoch_s"]))


if __name__ == "__main__":
    main()
