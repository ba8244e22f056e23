#!/usr/bin/env bash
# OGB's binary layout (raw/data.npz, raw/node-label.npz: ogbn-papers100M's)
# into gnn-partition: Cora written again in it by tests/tools/ogb_to_binary.py
# (np.savez, np.savez_compressed, features unzipped beside data.npz) gives
# partitions byte for byte those of the CSV layout, and gnn-local trains on
# it to the CSV run's accuracy and params_crc; damaged arrays are refused,
# naming the file and the member, with nothing written. Reads
# ../shared/datasets/cora (skipped when absent) and needs NumPy (Debian's
# python3-numpy, which `make deps` installs; skipped without it).
. "$(dirname "$0")/lib.bash"
P=$BIN/gnn-partition
L=$BIN/gnn-local
CORA=$DATASETS/cora
TESTS="binary_savez binary_savez_compressed binary_unzipped_features binary_extra_array_logged binary_trains_like_csv
	binary_bad_truncated binary_bad_dtype binary_bad_shape binary_bad_edge binary_bad_label binary_bad_split
	binary_bad_too_many_nodes binary_not_recognised"
PY=$(numpy_python)
if ! have_cora || [ -z "$PY" ]; then
	for t in $TESTS; do
		skip "$t" "$(have_cora || echo "no Cora at $DATASETS/cora (CI has it)")$(have_cora && echo "no python3 with NumPy (python3-numpy)")"
	done
	exit 0
fi
CONV=$ROOT/tests/tools/ogb_to_binary.py

"$P" --input "$CORA" --parts 2 --out "$WORK/csv" 2>/dev/null >/dev/null
for v in savez:--extra savez_compressed:--compressed unzipped_features:--unzip-features; do
	name=${v%%:*} flag=${v#*:}
	"$PY" "$CONV" "$CORA" "$WORK/bin-$name" $flag
	"$P" --input "$WORK/bin-$name" --parts 2 --out "$WORK/p-$name" 2>"$WORK/err-$name" >/dev/null
	rc=$?
	case $name in
	savez) t=binary_savez ;;
	savez_compressed) t=binary_savez_compressed ;;
	*) t=binary_unzipped_features ;;
	esac
	same=true
	same_partitions "$WORK/csv" "$WORK/p-$name" || same=false
	check "$t" "data.npz by np.$name: exit 0 ($rc), partitions identical to the CSV layout's ($same), layout=binary logged" \
		bash -c "[ $rc -eq 0 ] && $same && grep -q 'import_start .*layout=binary' '$WORK/err-$name'"
done
check binary_extra_array_logged "an array it does not read (node_year) is named in an INFO line; the compressed one is inflated once, logged" \
	bash -c "grep -q 'npz_member_ignored .*member=node_year' '$WORK/err-savez' && grep -q 'npz_inflate .*member=node_feat' '$WORK/err-savez_compressed' &&
		 ! grep -q npz_inflate '$WORK/err-savez' && grep -q 'features file=.*node_feat.npy ' '$WORK/err-unzipped_features'"

# ---- training: the same run as on the CSV layout ----------------------------
if [ "${GNN_SAN:-0}" = 1 ]; then
	skip binary_trains_like_csv "run by make test (the plain build): the partitions are checked identical above"
else
	MODEL=(--parts 2 --samplers 1 --trainers 1 --fanouts 10,25 --eval-fanouts -1,-1 --hidden 64 --lr 0.003
		--epochs 15 --seed 1 --no-infer --ready-timeout-s 60 --timeout-s 300 --stop-timeout-s 10)
	trains_alike binary_trains_like_csv "gnn-local on Cora's CSV layout and its np.savez_compressed conversion" \
		"--dataset $CORA" "--dataset $WORK/bin-savez_compressed" "${MODEL[@]}"
fi

# ---- bad input: the file and the array named, nothing written --------------
B=$WORK/bad
fresh() {  # a copy of the np.savez conversion in $B
	rm -rf "$B" && cp -r "$WORK/bin-savez" "$B"
}
# rewrite MEMBER-PYTHON: data.npz (d) and node-label.npz (l) loaded as
# dicts, changed by the code, saved again.
rewrite() {
	"$PY" - "$B/raw" "$1" <<'PY'
import sys, numpy as np
raw, code = sys.argv[1], sys.argv[2]
d = dict(np.load(raw + "/data.npz")); l = dict(np.load(raw + "/node-label.npz"))
exec(code)
np.savez(raw + "/data.npz", **d); np.savez(raw + "/node-label.npz", **l)
PY
}
bad() {  # NAME MESSAGE
	refused "$1" "$2" "$WORK/bad-out" "$P" --input "$B" --parts 2 --out "$WORK/bad-out"
}
fresh
head -c 3000000 "$WORK/bin-savez/raw/data.npz" >"$B/raw/data.npz"
bad binary_bad_truncated "file=$B/raw/data.npz reason=.*truncated"
fresh && rewrite 'd["edge_index"] = d["edge_index"].astype(np.float32)'
bad binary_bad_dtype "member=edge_index reason=\"expected a (2, E) integer array, got float32"
fresh && rewrite 'd["node_feat"] = d["node_feat"][:100]'
bad binary_bad_shape "member=node_feat reason=\"expected (2708, D) floats"
fresh && rewrite 'd["edge_index"][1, 7] = 2708'
bad binary_bad_edge "member=edge_index reason=\"edge 7: destination node 2708 does not exist"
fresh && rewrite 'l["node_label"][5, 0] = 2.5'
bad binary_bad_label "member=node_label reason=\"node 5: label 2.5 out of range"
# a node of the train split (Cora's first train node is 0) made unlabelled
fresh && rewrite 'l["node_label"][0, 0] = np.nan'
bad binary_bad_split "train.csv.gz.*node in the split has no label"
fresh && rewrite 'd["num_nodes_list"] = np.array([3000000000])'
bad binary_bad_too_many_nodes "member=num_nodes_list reason=\"count out of range \[0, 2147483647\] (METIS 5.1's 32-bit IDs)"
rm -rf "$B" && mkdir -p "$B/raw" "$B/split/x"
bad binary_not_recognised "no OGB layout recognised: looked for raw/data.npz"
