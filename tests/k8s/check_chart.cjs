// Checks `helm template` output of charts/gnn-dist without a cluster.
//
//   node tests/k8s/check_chart.cjs TOOLS_DIR BIN_DIR RENDERED.yaml
//
// Prints one line per check, "ok NAME" or "bad NAME: why", and exits 1 when
// any check is bad. The checks:
//   schema     every object validates against the Kubernetes OpenAPI schema
//              (kubernetes-models' validators; the ServiceMonitor against
//              prometheus-operator's CRD schema), and carries no field the
//              schema does not know (a misspelt readinessProbe is not an
//              error to the API server's lenient decoding, only a probe
//              that silently never runs)
//   flags      every --flag and GNN_* variable given to a gnn-* binary is one
//              its --help lists, with a value of the listed kind, range or
//              choices
//   ports      every port a binary listens on (--listen, --http-port or its
//              default) is a declared containerPort of the same name, and
//              every declared containerPort is listened on
//   services   every Service selects a workload's pods (or several
//              StatefulSets of one binary: graph store replicas), names ports they
//              declare, and (headless: clients dial pod addresses) uses the
//              container's port number
//   probes     HTTP probes and prometheus.io annotations hit the HTTP port
//              and paths the server answers (/healthz, /readyz, /metrics)
//   dns        every tcp:// name a binary dials is a pod or Service of the
//              chart (pattern %d for every ordinal), on that pod's port;
//              counts given (--graphstore-count, --world-size) equal the
//              replicas
//   storage    the graph stores read the folder the partitioner Job writes,
//              on the same claim, and so do the trainers given --data (link
//              prediction), mounted read-only; the trainers' checkpoint
//              folder is on a mounted claim; every mount names a volume
//   security   every pod runs as non-root with seccomp RuntimeDefault, every
//              container with a read-only root, no privilege escalation and
//              all capabilities dropped
"use strict";
const fs = require("fs");
const path = require("path");
const { execFileSync } = require("child_process");

const [toolsDir, binDir, renderedFile] = process.argv.slice(2);
if (!renderedFile) {
	console.error("usage: check_chart.cjs TOOLS_DIR BIN_DIR RENDERED.yaml");
	process.exit(2);
}
const mods = path.resolve(toolsDir, "node_modules");
const YAML = require(path.join(mods, "yaml"));

let bad = 0;
const problems = {};
const CHECKS = ["schema", "flags", "ports", "services", "probes", "dns", "storage", "security"];
for (const c of CHECKS) problems[c] = [];
function report(check, msg) {
	problems[check].push(msg);
}

const docs = YAML.parseAllDocuments(fs.readFileSync(renderedFile, "utf8"))
	.map((d) => d.toJS())
	.filter((d) => d && typeof d === "object");
const objName = (o) => `${o.kind}/${o.metadata && o.metadata.name}`;

// ---- schema ------------------------------------------------------------------
const GROUPS = {
	v1: "Core", "apps/v1": "Apps", "batch/v1": "Batch", "networking.k8s.io/v1": "Networking",
	"policy/v1": "Policy", "rbac.authorization.k8s.io/v1": "Rbac",
};
function validatorFor(o) {
	let file;
	if (o.apiVersion === "monitoring.coreos.com/v1")
		file = path.join(mods, "@kubernetes-models/prometheus-operator/_schemas", `MonitoringCoreosComV1${o.kind}.js`);
	else if (GROUPS[o.apiVersion]) {
		const v = o.apiVersion.split("/").pop().replace(/^v/, "V");
		file = path.join(mods, "kubernetes-models/_schemas", `IoK8sApi${GROUPS[o.apiVersion]}${v}${o.kind}.js`);
	}
	if (!file || !fs.existsSync(file)) return null;
	return require(file).validate;
}
// The compiled validators read every property the schema knows (data.name,
// data.spec, ...) and enumerate the keys of free-form maps (labels,
// resources.limits). Handing them a Proxy that records this tells which of
// an object's keys the schema never looked at: unknown fields.
function track(v, where, unknownFns) {
	if (v === null || typeof v !== "object") return v;
	const seen = new Set();
	let enumerated = false;
	const copy = Array.isArray(v)
		? v.map((x, i) => track(x, `${where}/${i}`, unknownFns))
		: Object.fromEntries(Object.entries(v).map(([k, x]) => [k, track(x, `${where}/${k}`, unknownFns)]));
	if (!Array.isArray(v))
		unknownFns.push(() => (enumerated ? [] : Object.keys(v).filter((k) => !seen.has(k)).map((k) => `${where}/${k}`)));
	return new Proxy(copy, {
		get(t, k, r) { if (typeof k === "string") seen.add(k); return Reflect.get(t, k, r); },
		has(t, k) { if (typeof k === "string") seen.add(k); return Reflect.has(t, k); },
		ownKeys(t) { enumerated = true; return Reflect.ownKeys(t); },
	});
}
for (const o of docs) {
	const validate = validatorFor(o);
	if (!validate) {
		report("schema", `${objName(o)}: no schema for apiVersion ${o.apiVersion}`);
		continue;
	}
	const unknownFns = [];
	if (!validate(track(o, "", unknownFns)))
		for (const e of validate.errors) report("schema", `${objName(o)}${e.instancePath}: ${e.message || e.keyword} ${JSON.stringify(e.params)}`);
	// Only the outermost unknown field: whatever lies below it was never visited either.
	const unknown = unknownFns.flatMap((f) => f());
	for (const u of unknown.filter((u) => !unknown.some((a) => u.startsWith(a + "/"))))
		report("schema", `${objName(o)}: unknown field ${u}`);
	if (!o.metadata || !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(o.metadata.name) || o.metadata.name.length > 63)
		report("schema", `${objName(o)}: name is not a DNS-1123 label`);
}

// ---- workloads -----------------------------------------------------------------
const workloads = docs.filter((o) => ["StatefulSet", "Deployment", "Job", "Pod"].includes(o.kind)).map((o) => {
	const tpl = o.kind === "Pod" ? o : o.spec.template;
	return {
		obj: o, kind: o.kind, name: o.metadata.name, labels: (tpl.metadata && tpl.metadata.labels) || {},
		annotations: (tpl.metadata && tpl.metadata.annotations) || {}, pod: tpl.spec,
		replicas: o.kind === "StatefulSet" || o.kind === "Deployment" ? o.spec.replicas : 1,
	};
});
const services = docs.filter((o) => o.kind === "Service");
const selects = (sel, labels) => sel && Object.entries(sel).every(([k, v]) => labels[k] === v);

// --help of each binary: option name -> {env, kind (N|X|VALUE|choices|bool), min, max}.
const helpCache = {};
function helpOf(bin, sub) {
	const key = sub ? `${bin} ${sub}` : bin;
	if (helpCache[key]) return helpCache[key];
	let text;
	try {
		text = execFileSync(path.join(binDir, bin), sub ? [sub, "--help"] : ["--help"],
				    { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
	} catch (e) {
		text = (e.stdout || "") + (e.stderr || "");
	}
	const opts = {};
	const lines = text.split("\n");
	for (let i = 0; i < lines.length; i++) {
		const m = /^  --([a-z0-9-]+)(?: (\S+))?  \[(GNN_[A-Z0-9_]+)\]$/.exec(lines[i]);
		if (!m) continue;
		const desc = lines[i + 1] || "";
		const r = /\(range (-?[0-9.]+(?:e[-+]?[0-9]+)?)\.\.(-?[0-9.]+(?:e[-+]?[0-9]+)?)\)/.exec(desc);
		const d = /\(default ([^)]*)\)/.exec(desc);
		opts[m[1]] = { env: m[3], arg: m[2] || "bool", min: r ? +r[1] : null, max: r ? +r[2] : null, def: d ? d[1] : null };
	}
	return (helpCache[key] = opts);
}
function checkValue(where, opt, value) {
	if (opt.arg === "bool") {
		if (value !== null && !/^(1|0|true|false|yes|no)$/.test(value)) return `${where}: not a boolean: ${value}`;
		return null;
	}
	if (value === null || value === "") return `${where}: needs a value`;
	if (opt.arg === "N" || opt.arg === "X") {
		const re = opt.arg === "N" ? /^-?[0-9]+$/ : /^-?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$/;
		if (!re.test(value)) return `${where}: ${value} is not ${opt.arg === "N" ? "an integer" : "a number"}`;
		if (opt.min !== null && (+value < opt.min || +value > opt.max)) return `${where}: ${value} outside ${opt.min}..${opt.max}`;
	} else if (opt.arg.includes("|") && !opt.arg.split("|").includes(value)) {
		return `${where}: ${value} is not one of ${opt.arg}`;
	}
	return null;
}
// The binary a container runs: its command, or the one a shell step execs.
function binaryOf(c) {
	const cmd = c.command || [];
	if (cmd.length && /^gnn-/.test(path.basename(cmd[0]))) return path.basename(cmd[0]);
	if (cmd.length >= 3 && /(^|\/)(ba)?sh$/.test(cmd[0]) && cmd[1] === "-c") {
		const m = /\bexec (gnn-[a-z]+)/.exec(cmd[2]);
		return m ? m[1] : null;
	}
	return null;
}

const dialed = []; // {who, url, port}
const listens = []; // per container
for (const w of workloads) {
	for (const c of w.pod.containers) {
		const where = `${w.kind}/${w.name}/${c.name}`;
		const bin = binaryOf(c);
		if (!bin) {
			if (w.kind !== "Pod") report("flags", `${where}: runs no gnn-* binary`);
			continue;
		}
		// `gnn-trainer infer ...`: a subcommand first, then its own options.
		const sub = c.args && c.args.length && !/^--/.test(c.args[0]) ? c.args[0] : null;
		const args = sub ? c.args.slice(1) : c.args || [];
		const opts = helpOf(bin, sub);
		if (!Object.keys(opts).length) {
			report("flags", `${where}: ${bin} --help listed no options (is ${binDir}/${bin} built?)`);
			continue;
		}
		const given = {};
		for (const a of args) {
			const m = /^--([a-z0-9-]+)(?:=(.*))?$/s.exec(a);
			if (!m) { report("flags", `${where}: argument ${JSON.stringify(a)} is not --flag or --flag=value`); continue; }
			if (!opts[m[1]]) { report("flags", `${where}: ${bin} has no option --${m[1]}`); continue; }
			const v = m[2] === undefined ? null : m[2];
			const err = checkValue(`${where} --${m[1]}`, opts[m[1]], v);
			if (err) report("flags", err);
			given[m[1]] = v;
		}
		const byEnv = Object.fromEntries(Object.entries(opts).map(([k, o]) => [o.env, k]));
		for (const e of c.env || []) {
			if (!/^GNN_/.test(e.name)) continue;
			const k = byEnv[e.name];
			if (!k) { report("flags", `${where}: ${bin} reads no variable ${e.name}`); continue; }
			if (e.valueFrom) {
				if (!e.valueFrom.resourceFieldRef || opts[k].arg !== "N")
					report("flags", `${where}: ${e.name} from ${JSON.stringify(e.valueFrom)} is not a numeric resource field`);
			} else {
				const err = checkValue(`${where} ${e.name}`, opts[k], e.value === undefined ? null : String(e.value));
				if (err) report("flags", err);
			}
			if (k in given) report("flags", `${where}: both --${k} and ${e.name}: the flag wins, the variable is dead`);
			given[k] = e.value === undefined ? "(from the pod)" : String(e.value);
		}
		const value = (k) => (k in given ? given[k] : opts[k] ? opts[k].def : null);
		// What the process listens on, against the declared ports.
		const want = {};
		if (opts.listen) {
			const m = /^tcp:\/\/[^:/]+:([0-9]+)$/.exec(value("listen") || "");
			if (!m) report("ports", `${where}: --listen ${value("listen")} is not tcp://ADDR:PORT`);
			else want.nng = +m[1];
		}
		if (opts["http-port"]) want.http = +value("http-port");
		const declared = Object.fromEntries((c.ports || []).map((p) => [p.name, p.containerPort]));
		for (const [n, p] of Object.entries(want))
			if (declared[n] !== p) report("ports", `${where}: listens on ${n} port ${p}, declares ${n}=${declared[n]}`);
		for (const [n, p] of Object.entries(declared))
			if (want[n] !== p) report("ports", `${where}: declares port ${n}=${p} that ${bin} does not listen on`);
		listens.push({ w, c, bin: sub ? `${bin} ${sub}` : bin, given, value, ports: declared });
		for (const k of ["graphstores", "graphstore-pattern", "peers", "peer-pattern", "samplers"])
			if (given[k]) dialed.push({ where, opt: k, value: given[k], l: listens[listens.length - 1] });

		// Probes and scrape annotations.
		for (const pk of ["livenessProbe", "readinessProbe", "startupProbe"]) {
			const p = c[pk];
			if (!p) {
				if (pk !== "startupProbe" && w.kind !== "Job" && w.kind !== "Pod") report("probes", `${where}: no ${pk}`);
				continue;
			}
			const g = p.httpGet;
			if (!g) { report("probes", `${where}: ${pk} is not an HTTP probe`); continue; }
			const port = typeof g.port === "string" ? declared[g.port] : g.port;
			if (port !== want.http) report("probes", `${where}: ${pk} port ${g.port} is not the HTTP port ${want.http}`);
			const wantPath = pk === "livenessProbe" ? "/healthz" : "/readyz";
			if (g.path !== wantPath) report("probes", `${where}: ${pk} path ${g.path}, the server's is ${wantPath}`);
		}
		if (want.http && w.kind !== "Job") {
			const a = w.annotations;
			if (a["prometheus.io/scrape"] === "true" &&
				(a["prometheus.io/port"] !== String(want.http) || a["prometheus.io/path"] !== "/metrics"))
				report("probes", `${where}: prometheus.io annotations ${a["prometheus.io/port"]}${a["prometheus.io/path"]} are not ${want.http}/metrics`);
		}
	}
}

// ---- services -------------------------------------------------------------------
for (const s of services) {
	const sel = s.spec.selector;
	const pods = workloads.filter((w) => w.kind !== "Pod" && selects(sel, w.labels));
	// several workloads only as StatefulSets of one binary sharing the
	// Service (graph store replicas: graphstore, graphstore-r1, ...)
	const bins = new Set(pods.map((w) => w.pod.containers[0].command && w.pod.containers[0].command[0]));
	if (pods.length === 0 || (pods.length > 1 && (bins.size !== 1 || !pods.every((w) => w.kind === "StatefulSet")))) {
		report("services", `Service/${s.metadata.name} selects ${pods.length} workloads`);
		continue;
	}
	if (s.spec.clusterIP !== "None") report("services", `Service/${s.metadata.name} is not headless`);
	for (const w of pods) {
		if (w.kind === "StatefulSet" && w.obj.spec.serviceName !== s.metadata.name)
			report("services", `StatefulSet/${w.name} has serviceName ${w.obj.spec.serviceName}, its Service is ${s.metadata.name}`);
		for (const sp of s.spec.ports) {
			const cp = w.pod.containers.flatMap((c) => c.ports || [])
				.find((p) => (typeof sp.targetPort === "string" ? p.name === sp.targetPort : p.containerPort === (sp.targetPort || sp.port)));
			if (!cp) report("services", `Service/${s.metadata.name} port ${sp.name}: ${w.name} declares no port ${sp.targetPort}`);
			else if (cp.containerPort !== sp.port)
				report("services", `Service/${s.metadata.name} port ${sp.name}=${sp.port}: headless, so clients dial the pod's ${cp.containerPort}`);
		}
	}
}

// ---- dns ------------------------------------------------------------------------
// The names a pod can resolve: POD.SERVICE of StatefulSet pods (with the
// Service's port numbers), and every headless Service's own name.
function resolve(host) {
	const m = /^(.+)-([0-9]+)\.([^.]+)$/.exec(host);
	if (m) {
		const s = services.find((x) => x.metadata.name === m[3]);
		const w = workloads.find((x) => x.kind === "StatefulSet" && x.name === m[1]);
		if (!s || !w) return null;
		if (w.obj.spec.serviceName !== s.metadata.name || +m[2] >= w.replicas) return null;
		return w;
	}
	const s = services.find((x) => x.metadata.name === host);
	return s ? workloads.find((w) => w.kind !== "Pod" && selects(s.spec.selector, w.labels)) || null : null;
}
// gnn-trainer's --graphstore-pattern (learnable embeddings) takes no count:
// it dials one graph store per partition, the partitioner's --parts.
const partitioner = listens.find((l) => l.bin === "gnn-partition");
// Who must answer each option's URLs.
const SERVED_BY = {
	graphstores: "gnn-graphstore", "graphstore-pattern": "gnn-graphstore",
	peers: "gnn-trainer", "peer-pattern": "gnn-trainer", samplers: "gnn-sampler",
};
for (const d of dialed) {
	let urls;
	const pattern = d.opt.endsWith("-pattern");
	if (pattern) {
		let countOpt = d.opt === "peer-pattern" ? "world-size" : "graphstore-count";
		let count = d.l.value(countOpt);
		if ((count === null || count === undefined) && d.opt === "graphstore-pattern" && partitioner) {
			countOpt = "parts of the partitioner";
			count = partitioner.value("parts");
		}
		const n = +count;
		if (!Number.isInteger(n) || n < 1) {
			report("dns", `${d.where}: --${d.opt} ${d.value} with no count (--${countOpt} ${count})`);
			continue;
		}
		urls = [...Array(n).keys()].map((i) => d.value.replace("%d", String(i)));
		const target = resolve(new URL(urls[0] || d.value.replace("%d", "0")).hostname);
		if (target && target.replicas !== n)
			report("dns", `${d.where}: --${countOpt}=${n} but ${target.kind}/${target.name} has ${target.replicas} replicas`);
	} else urls = d.value.split(",");
	for (const u of urls) {
		const m = /^tcp:\/\/([^:/]+):([0-9]+)$/.exec(u);
		if (!m) { report("dns", `${d.where}: --${d.opt} URL ${u} is not tcp://HOST:PORT`); continue; }
		const w = resolve(m[1]);
		if (!w) { report("dns", `${d.where}: --${d.opt} dials ${m[1]}, which no pod or Service of the chart is`); continue; }
		const serves = binaryOf(w.pod.containers[0]);
		if (serves !== SERVED_BY[d.opt]) {
			report("dns", `${d.where}: --${d.opt} dials ${m[1]}, which runs ${serves}, not ${SERVED_BY[d.opt]}`);
			continue;
		}
		const nng = w.pod.containers.flatMap((c) => c.ports || []).find((p) => p.name === "nng");
		if (!nng || nng.containerPort !== +m[2])
			report("dns", `${d.where}: dials ${m[1]}:${m[2]}, but ${w.name} listens on nng ${nng && nng.containerPort}`);
	}
}

// ---- storage --------------------------------------------------------------------
const claims = new Set(docs.filter((o) => o.kind === "PersistentVolumeClaim").map((o) => o.metadata.name));
// mountOf(w, c, file) -> the claim and mount holding file, or null.
// A StatefulSet's volumeClaimTemplates count as claims named TEMPLATE-POD.
function volumesOf(w) {
	const vols = Object.fromEntries((w.pod.volumes || []).map((v) => [v.name, v]));
	for (const t of (w.kind === "StatefulSet" && w.obj.spec.volumeClaimTemplates) || [])
		vols[t.metadata.name] = { name: t.metadata.name, persistentVolumeClaim: { claimName: `${t.metadata.name}-${w.name}-N` }, template: true };
	return vols;
}
function mountOf(w, c, file) {
	const vols = volumesOf(w);
	let best = null;
	for (const m of c.volumeMounts || []) {
		if (!vols[m.name]) continue;
		if (file === m.mountPath || file.startsWith(m.mountPath.replace(/\/$/, "") + "/"))
			if (!best || m.mountPath.length > best.m.mountPath.length) best = { m, v: vols[m.name] };
	}
	return best;
}
for (const w of workloads) {
	const vols = volumesOf(w);
	for (const c of w.pod.containers)
		for (const m of c.volumeMounts || []) if (!vols[m.name]) report("storage", `${w.name}/${c.name}: mount ${m.name} names no volume`);
	for (const v of Object.values(vols))
		if (v.persistentVolumeClaim && !v.template && !claims.has(v.persistentVolumeClaim.claimName))
			console.log(`note storage: ${w.name} uses claim ${v.persistentVolumeClaim.claimName}, not created by the chart (existingClaim)`);
}
const job = listens.find((l) => l.bin === "gnn-partition");
const out = job && (job.c.env || []).find((e) => e.name === "GNN_OUT");
const jobMount = out && mountOf(job.w, job.c, out.value);
if (!out || !jobMount || jobMount.m.readOnly) report("storage", `the partitioner Job writes GNN_OUT=${out && out.value} outside a writable volume`);
// The trainers read it for link prediction (--data), and must not write it.
for (const l of listens.filter((x) => x.bin === "gnn-graphstore" || (x.bin === "gnn-trainer" && x.value("data")))) {
	const data = l.value("data");
	const mnt = data && mountOf(l.w, l.c, data);
	if (!out || data !== out.value) report("storage", `${l.w.name}: --data=${data}, the Job writes ${out && out.value}`);
	if (!mnt || !jobMount || !mnt.v.persistentVolumeClaim || !jobMount.v.persistentVolumeClaim ||
		mnt.v.persistentVolumeClaim.claimName !== jobMount.v.persistentVolumeClaim.claimName ||
		path.relative(mnt.m.mountPath, data) !== path.relative(jobMount.m.mountPath, out.value))
		report("storage", `${l.w.name}: --data=${data} is not the Job's output on the same claim`);
	if (l.bin === "gnn-trainer" && mnt && !mnt.m.readOnly) report("storage", `${l.w.name}: --data=${data} is mounted writable`);
}
for (const l of listens.filter((x) => x.bin === "gnn-trainer")) {
	const dir = l.value("checkpoint-dir");
	const mnt = dir && mountOf(l.w, l.c, dir);
	if (!mnt || mnt.m.readOnly || !mnt.v.persistentVolumeClaim)
		report("storage", `${l.w.name}: --checkpoint-dir=${dir} is not on a writable claim`);
}

for (const l of listens.filter((x) => x.bin === "gnn-trainer infer")) {
	const where = l.w.name, trainer = listens.find((x) => x.bin === "gnn-trainer");
	const ck = l.value("checkpoint-dir"), ckMnt = ck && mountOf(l.w, l.c, ck);
	const outDir = l.value("out"), outMnt = outDir && mountOf(l.w, l.c, outDir);
	if (!trainer || ck !== trainer.value("checkpoint-dir") || !ckMnt || !ckMnt.v.persistentVolumeClaim)
		report("storage", `${where}: --checkpoint-dir=${ck} is not the trainers' on a claim`);
	if (!outMnt || outMnt.m.readOnly || !outMnt.v.persistentVolumeClaim)
		report("storage", `${where}: --out=${outDir} is not on a writable claim`);
	for (const g of listens.filter((x) => x.bin === "gnn-graphstore"))
		if (g.value("predictions") !== outDir)
			report("storage", `${g.w.name}: --predictions=${g.value("predictions")}, the inference writes ${outDir}`);
}

// ---- security -------------------------------------------------------------------
for (const w of workloads) {
	const ps = w.pod.securityContext || {};
	if (ps.runAsNonRoot !== true || !(ps.runAsUser > 0)) report("security", `${w.name}: pod does not run as a non-root UID`);
	if (!ps.seccompProfile || ps.seccompProfile.type !== "RuntimeDefault") report("security", `${w.name}: seccomp is not RuntimeDefault`);
	if (w.pod.automountServiceAccountToken !== false) report("security", `${w.name}: mounts a service account token it does not need`);
	for (const c of w.pod.containers) {
		const s = c.securityContext || {};
		if (s.readOnlyRootFilesystem !== true) report("security", `${w.name}/${c.name}: root filesystem is writable`);
		if (s.allowPrivilegeEscalation !== false) report("security", `${w.name}/${c.name}: privilege escalation allowed`);
		if (!s.capabilities || !(s.capabilities.drop || []).includes("ALL")) report("security", `${w.name}/${c.name}: capabilities not dropped`);
	}
}

for (const c of CHECKS) {
	if (problems[c].length) {
		bad++;
		for (const p of problems[c]) console.log(`bad ${c}: ${p}`);
	} else console.log(`ok ${c}`);
}
console.log(`objects ${docs.length}: ${docs.map(objName).join(" ")}`);
process.exit(bad ? 1 : 0);
