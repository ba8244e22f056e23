#!/usr/bin/env bash
# The code's layout rules (docs/HACKING.md, "Layout rules"), over the tree
# and the build's objects (tests/tools/layout_check.py):
#   - no function over 80 lines in libcommon/ or services/;
#   - no import circle between the files of one service (or libcommon);
#   - no file name in two folders of services/;
# and the checker itself catches each breach, on a small tree made here.
. "$(dirname "$0")/lib.bash"
CHECKER=$ROOT/tests/tools/layout_check.py
command -v ctags >/dev/null || { skip layout "ctags (universal-ctags, make deps) is not installed"; exit 0; }

python3 "$CHECKER" "$ROOT" "$BUILD/obj" >"$WORK/out" 2>&1
rc=$?
for rule in long circle samename; do
	check "layout_no_$rule" "$(grep "^$rule " "$WORK/out" | head -n 3 | tr '\n' ';')" \
		bash -c "[ $rc -le 1 ] && ! grep -q '^$rule ' '$WORK/out'"
done
[ $rc -le 1 ] || { fail layout_checker_ran "exit $rc: $(tail -n 3 "$WORK/out" | tr '\n' ' ')"; }

# A tree with one breach of each rule: an 81-line function, two files of a
# service calling each other, and a name in two services.
T=$WORK/tree
mkdir -p "$T/libcommon" "$T/services/a" "$T/services/b" "$T/obj/services/a"
{
	echo "int a_long(int x)"
	echo "{"
	for i in $(seq 1 77); do echo "	x += $i;"; done
	echo "	return x;"
	echo "}"
} >"$T/services/a/one.c"
printf 'int a_two(int x);\nint a_one(int x)\n{\n\treturn x ? a_two(x - 1) : 0;\n}\n' >"$T/services/a/ping.c"
printf 'int a_one(int x);\nint a_two(int x)\n{\n\treturn x ? a_one(x - 1) : 1;\n}\n' >"$T/services/a/pong.c"
cp "$T/services/a/pong.c" "$T/services/b/pong.c"
cc -c -o "$T/obj/services/a/ping.o" "$T/services/a/ping.c" && cc -c -o "$T/obj/services/a/pong.o" "$T/services/a/pong.c"
python3 "$CHECKER" "$T" "$T/obj" >"$WORK/mut" 2>&1
mrc=$?
check layout_checker_catches_breaches "exit 1 with one line per rule: $(tr '\n' ';' <"$WORK/mut")" \
	bash -c "[ $mrc -eq 1 ] && grep -q '^long services/a/one.c:1 a_long is 81 lines' '$WORK/mut' &&
		grep -q '^circle services/a/ping.o services/a/pong.o$' '$WORK/mut' &&
		grep -q '^samename pong.c: services/a/pong.c services/b/pong.c$' '$WORK/mut'"
