// Checks the PromQL of the alert rules and the Grafana dashboard against
// what the services export. Usage:
//   node check_names.cjs TOOLS_DIR REPO_ROOT [--rules FILE [--scope NS,RELEASE | --unscoped]]... [--dashboard FILE]...
// TOOLS_DIR holds node_modules/yaml (tests/k8s/install-tools.sh).
// Prints "ok WHAT" or "bad WHAT: why" lines; exits 1 on any "bad".
//   names      every metric an expression names is documented in
//              docs/metrics.md and registered in the C sources (string
//              literals "gnn_..." and "process_...", and libcommon/server.c's
//              NAME("...") under each gnn_server_opts name), or is one of
//              the standard ones of EXTERNAL; histogram samples (_bucket,
//              _count, _sum) count as their family
//   scope      --scope: every selector carries namespace="NS" and, for the
//              services' own metrics, release="RELEASE"; --unscoped: none
//              names a namespace or release; a dashboard: every selector
//              names namespace="$namespace" and release="$release"
//   dashboard  the datasource, namespace and release variables, every
//              panel on ${datasource} with a query, and the panels of
//              issue 24 (the metrics of PANEL_METRICS all queried)
"use strict";
const fs = require("fs");
const path = require("path");

const [toolsDir, root, ...rest] = process.argv.slice(2);
const YAML = require(path.join(path.resolve(toolsDir), "node_modules", "yaml"));

// The standard metrics of a kube-prometheus-stack the rules may use:
// Prometheus' own, cAdvisor's (through the kubelet) and kube-state-metrics'.
const EXTERNAL = new Set(["up", "container_memory_working_set_bytes", "kube_pod_container_resource_limits"]);
// What the dashboard must show: progress, throughput, the split of a step,
// sampler admission and fail-over, graph-store rates, latencies and
// errors, checkpoints and the inference, memory and CPU per pod.
const PANEL_METRICS = [
	"gnn_trainer_epoch", "gnn_trainer_step", "gnn_trainer_loss", "gnn_trainer_train_accuracy",
	"gnn_trainer_val_accuracy", "gnn_trainer_progress_ratio", "gnn_trainer_eta_seconds",
	"gnn_trainer_samples_total", "gnn_sampler_minibatches_total", "gnn_sampler_sampled_edges_total",
	"gnn_trainer_phase_seconds_total", "gnn_sampler_admission_queued", "gnn_sampler_admission_timeouts_total",
	"gnn_trainer_sampler_failures_total", "gnn_graphstore_requests_total", "gnn_graphstore_request_seconds",
	"gnn_graphstore_request_errors_total", "gnn_trainer_checkpoint_failures_total",
	"gnn_graphstore_predictions_timestamp_seconds", "process_resident_memory_bytes", "process_cpu_seconds_total",
];
const KEYWORDS = new Set(["and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right",
	"bool", "offset", "inf", "nan", "atan2"]);

let bad = 0;
const ok = (what) => console.log(`ok ${what}`);
const fail = (what, why) => { bad++; console.log(`bad ${what}: ${why}`); };

// ---- what the services export ----------------------------------------------------
function documented() {
	const names = new Set();
	for (const line of fs.readFileSync(path.join(root, "docs/metrics.md"), "utf8").split("\n")) {
		const m = /^\|([^|]*)\|/.exec(line);
		if (!m) continue;
		for (const t of m[1].matchAll(/`([^`]*)`/g)) {
			const n = /^([a-z_:][a-z0-9_:]*)(\{[a-z_, ]*\})?$/.exec(t[1]);
			if (n) names.add(n[1]);
		}
	}
	return names;
}
function registered() {
	const names = new Set(), servers = [], suffixes = [];
	const walk = (dir) => {
		for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
			const p = path.join(dir, e.name);
			if (e.isDirectory()) walk(p);
			else if (e.name.endsWith(".c")) {
				const text = fs.readFileSync(p, "utf8");
				for (const m of text.matchAll(/"((?:gnn|process)_[a-z0-9_]+)"/g)) names.add(m[1]);
				for (const m of text.matchAll(/gnn_server_opts \w+ = \{[^}]*\.name = "([a-z_]+)"/g)) servers.push(m[1]);
				if (p.endsWith(path.join("libcommon", "server.c")))
					for (const m of text.matchAll(/NAME\("([a-z_]+)"\)/g)) suffixes.push(m[1]);
			}
		}
	};
	walk(path.join(root, "services"));
	walk(path.join(root, "libcommon"));
	for (const s of servers) for (const x of suffixes) names.add(`gnn_${s}_${x}`);
	return names;
}
const DOCS = documented(), SRC = registered();

// ---- PromQL -----------------------------------------------------------------------
// Selectors of an expression: {name, matchers} for every metric name (with
// the text inside its braces, "" without), ignoring functions, keywords,
// label lists and label_values()' label argument.
function selectors(expr) {
	let s = expr.replace(/#[^\n]*/g, "");
	const out = [];
	// A selector's matchers hold strings with any character: cut them out
	// first, remembering them by position.
	const re = /([a-zA-Z_:][a-zA-Z0-9_:]*)?\s*\{((?:[^{}"']|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*')*)\}/g;
	let m, plain = "", last = 0;
	const withBraces = [];
	while ((m = re.exec(s)) !== null) {
		plain += s.slice(last, m.index) + (m[1] ? ` @SEL${withBraces.length}@ ` : " ");
		withBraces.push({ name: m[1] || null, matchers: m[2] });
		last = re.lastIndex;
	}
	plain += s.slice(last);
	plain = plain.replace(/"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'/g, " ")
		.replace(/\[[^\]]*\]/g, " ")
		.replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, " ")
		.replace(/label_values\(([^,()]*),[^)]*\)/g, "label_values($1)")
		.replace(/\$\{?[a-zA-Z_]+\}?/g, " ");
	for (const t of plain.matchAll(/@SEL(\d+)@|(?<![a-zA-Z0-9_:.])([a-zA-Z_:][a-zA-Z0-9_:]*)(?![a-zA-Z0-9_:])(?!\s*\()/g)) {
		if (t[1] !== undefined) out.push(withBraces[Number(t[1])]);
		else if (!KEYWORDS.has(t[2].toLowerCase())) out.push({ name: t[2], matchers: "" });
	}
	return out;
}
const family = (n) => n.replace(/_(bucket|count|sum)$/, "");
function known(n) {
	if (EXTERNAL.has(n)) return true;
	const f = [n, family(n)];
	return f.some((x) => DOCS.has(x) && SRC.has(x));
}
function checkNames(what, exprs) {
	const unknown = new Set();
	let n = 0;
	for (const e of exprs)
		for (const s of selectors(e)) {
			n++;
			if (!known(s.name)) unknown.add(`${s.name}${DOCS.has(family(s.name)) ? " (not in the sources)" : SRC.has(family(s.name)) ? " (not in docs/metrics.md)" : ""}`);
		}
	if (n === 0) fail(`names ${what}`, "no metric found at all");
	else if (unknown.size) fail(`names ${what}`, [...unknown].join(", "));
	else ok(`names ${what} (${n} selectors)`);
}
function checkScope(what, exprs, want) {
	const wrong = [];
	for (const e of exprs)
		for (const s of selectors(e)) {
			const has = (m) => s.matchers.split(",").map((x) => x.trim()).includes(m);
			const scoped = /(^|,)\s*(namespace|release)\s*=/.test(s.matchers);
			if (want === null ? scoped : !(has(want[0]) && (EXTERNAL.has(s.name) && s.name !== "up" || has(want[1]))))
				wrong.push(`${s.name}{${s.matchers}}`);
		}
	if (wrong.length) fail(`scope ${what}`, wrong.slice(0, 4).join("  "));
	else ok(`scope ${what}`);
}

// ---- files ------------------------------------------------------------------------------
const args = rest.slice();
while (args.length) {
	const kind = args.shift(), file = args.shift();
	if (kind === "--rules") {
		let doc;
		try { doc = YAML.parse(fs.readFileSync(file, "utf8")); } catch (e) { fail(`rules ${file}`, e.message); continue; }
		const exprs = (doc && doc.groups || []).flatMap((g) => (g.rules || []).map((r) => String(r.expr)));
		const what = path.basename(file);
		checkNames(what, exprs);
		if (args[0] === "--scope") {
			args.shift();
			const [ns, rel] = args.shift().split(",");
			checkScope(what, exprs, [`namespace="${ns}"`, `release="${rel}"`]);
		} else if (args[0] === "--unscoped") {
			args.shift();
			checkScope(what, exprs, null);
		}
	} else if (kind === "--dashboard") {
		let d;
		try { d = JSON.parse(fs.readFileSync(file, "utf8")); } catch (e) { fail(`dashboard ${file}`, e.message); continue; }
		const what = path.basename(file);
		const flat = (ps) => ps.flatMap((p) => [p, ...flat(p.panels || [])]);
		const panels = flat(d.panels || []).filter((p) => p.type !== "row");
		const exprs = panels.flatMap((p) => (p.targets || []).map((t) => String(t.expr || "")));
		const vars = (d.templating && d.templating.list) || [];
		const varQueries = vars.filter((v) => v.type === "query").map((v) => String(v.query && v.query.query || v.query || ""));
		checkNames(what, exprs.concat(varQueries));
		checkScope(what, exprs, ['namespace="$namespace"', 'release="$release"']);
		const v = (n) => vars.find((x) => x.name === n);
		const problems = [];
		if (!(d.schemaVersion >= 36)) problems.push(`schemaVersion ${d.schemaVersion}`);
		if (!d.uid || !d.title) problems.push("no uid or title");
		if (!(v("datasource") && v("datasource").type === "datasource" && v("datasource").query === "prometheus"))
			problems.push("no datasource variable of type prometheus");
		for (const n of ["namespace", "release"])
			if (!(v(n) && v(n).type === "query")) problems.push(`no ${n} query variable`);
		for (const p of panels) {
			if (!p.targets || p.targets.length === 0 || p.targets.some((t) => !t.expr)) problems.push(`panel "${p.title}" has no query`);
			if (!p.datasource || p.datasource.uid !== "${datasource}" ||
				(p.targets || []).some((t) => !t.datasource || t.datasource.uid !== "${datasource}"))
				problems.push(`panel "${p.title}" not on \${datasource}`);
		}
		const ids = panels.map((p) => p.id);
		if (new Set(ids).size !== ids.length) problems.push("panel ids repeat");
		const used = new Set(exprs.flatMap((e) => selectors(e).map((s) => family(s.name))));
		const missing = PANEL_METRICS.filter((m) => !used.has(m));
		if (missing.length) problems.push(`no panel queries ${missing.join(", ")}`);
		if (problems.length) fail(`dashboard ${what}`, problems.join("; "));
		else ok(`dashboard ${what} (${panels.length} panels, ${exprs.length} queries)`);
	} else {
		fail("usage", `unknown argument ${kind}`);
		break;
	}
}
process.exit(bad ? 1 : 0);
