// Turns `helm template` output into the pods a cluster would run, for
// tests that run them as local processes (tests/e2e/chart_run.sh,
// tests/e2e/chart.sh).
//
//   node tests/k8s/pods.cjs TOOLS_DIR RENDERED.yaml OUT_DIR SUBNET_PREFIX [NAMESPACE]
//
// Writes into OUT_DIR:
//   pods.tsv        one line per pod: NAME  COMPONENT  ADDRESS  HOOK(test|-)
//                   READINESS_PORT  READINESS_PATH (- without a probe)
//                   READINESS_SCHEME (HTTP or HTTPS; - without a probe)
//                   (StatefulSet pods NAME-0..N-1, Deployment replicas
//                   NAME-0..N-1, the Job's one pod, the helm test pod)
//   hosts           the /etc/hosts every pod gets: each StatefulSet pod as
//                   POD.SERVICE (and its FQDN), each pod's own name, and
//                   each headless Service name as all its pods' addresses
//                   when it publishes not-ready pods
//   hosts-ready     POD<TAB>LINE: the lines of Services that publish only
//                   ready pods, to append to hosts once POD is ready
//   pod-NAME.sh     what the container runtime would do for the pod's one
//                   container, as a /bin/sh script run as root inside the
//                   pod's network namespace: set the host name, bind the
//                   volumes (VOLUME_ROOT/CLAIM for a claim, a tmpfs for an
//                   emptyDir, OUT_DIR/secrets/SECRET[/ITEMS] read-only for a
//                   Secret of the render; TEMPLATE-POD for a StatefulSet's
//                   volumeClaimTemplates) at their mount paths (read-only where the
//                   mount says so), the hosts file, the binaries at
//                   /usr/local/bin where the image has them, make the root
//                   filesystem read-only when readOnlyRootFilesystem says so,
//                   then exec the command + args with exactly the container's
//                   environment (plus PATH and HOSTNAME, as the runtime sets)
//                   as the pod's runAsUser/runAsGroup with fsGroup added.
//                   The script reads VOLUME_ROOT, BIN_DIR, HOSTS_FILE and
//                   CPUS from its environment.
//   claims          the claim names, one per line (the test creates
//                   VOLUME_ROOT/CLAIM owned by fsGroup, as a volume plugin
//                   honouring fsGroup would)
//   mountpoints     every mount path, one per line (they must exist as
//                   directories on the host for the bind mounts)
//   secrets/NAME/KEY  every Secret of the render, decoded (mode 0644, as a
//                   secret volume's default), for the pods and the test
"use strict";
const fs = require("fs");
const path = require("path");

const [toolsDir, renderedFile, outDir, subnet, namespace = "default"] = process.argv.slice(2);
if (!subnet) {
	console.error("usage: pods.cjs TOOLS_DIR RENDERED.yaml OUT_DIR SUBNET_PREFIX [NAMESPACE]");
	process.exit(2);
}
const YAML = require(path.resolve(toolsDir, "node_modules", "yaml"));
const docs = YAML.parseAllDocuments(fs.readFileSync(renderedFile, "utf8")).map((d) => d.toJS()).filter(Boolean);
fs.mkdirSync(outDir, { recursive: true });

const q = (s) => "'" + String(s).replace(/'/g, "'\\''") + "'";
const pods = [];
for (const o of docs) {
	if (!["StatefulSet", "Deployment", "Job", "Pod"].includes(o.kind)) continue;
	const tpl = o.kind === "Pod" ? o : o.spec.template;
	const n = o.kind === "StatefulSet" || o.kind === "Deployment" ? o.spec.replicas : 1;
	const hook = (o.metadata.annotations || {})["helm.sh/hook"] || "-";
	for (let i = 0; i < n; i++) {
		const name = o.kind === "Pod" ? o.metadata.name : o.kind === "Job" ? `${o.metadata.name}-0` : `${o.metadata.name}-${i}`;
		pods.push({
			name, kind: o.kind, owner: o.metadata.name, hook, spec: tpl.spec, labels: (tpl.metadata && tpl.metadata.labels) || {},
			subdomain: o.kind === "StatefulSet" ? o.spec.serviceName : null,
			claimTemplates: (o.kind === "StatefulSet" && o.spec.volumeClaimTemplates) || [],
			component: ((tpl.metadata && tpl.metadata.labels) || {})["app.kubernetes.io/component"] || "-",
		});
	}
}
if (pods.length > 200) throw new Error("too many pods for one /24");

// The render's Secrets, decoded: what a secret volume shows.
const secretDir = path.join(outDir, "secrets");
const secrets = {};
for (const o of docs.filter((o) => o.kind === "Secret")) {
	const data = {};
	for (const [k, v] of Object.entries(o.data || {})) data[k] = Buffer.from(v, "base64");
	for (const [k, v] of Object.entries(o.stringData || {})) data[k] = Buffer.from(v);
	secrets[o.metadata.name] = data;
	fs.mkdirSync(path.join(secretDir, o.metadata.name), { recursive: true, mode: 0o755 });
	for (const [k, v] of Object.entries(data)) fs.writeFileSync(path.join(secretDir, o.metadata.name, k), v, { mode: 0o644 });
}
// A volume's view of a Secret: all its keys, or only `items` (key -> path).
function secretVolume(pod, v) {
	const name = v.secret.secretName;
	if (!secrets[name]) throw new Error(`${pod}: Secret ${name} is not in the render`);
	if (!v.secret.items) return path.join(secretDir, name);
	const dir = path.join(secretDir, `${name}@${pod}-${v.name}`);
	fs.mkdirSync(dir, { recursive: true, mode: 0o755 });
	for (const it of v.secret.items) fs.writeFileSync(path.join(dir, it.path), secrets[name][it.key], { mode: 0o644 });
	return dir;
}
pods.forEach((p, i) => (p.addr = `${subnet}.${10 + i}`));

// /etc/hosts: what cluster DNS would answer.
const hosts = ["127.0.0.1 localhost"];
const svcDomain = `${namespace}.svc.cluster.local`;
for (const p of pods) {
	const names = [p.name];
	if (p.subdomain) names.unshift(`${p.name}.${p.subdomain}`, `${p.name}.${p.subdomain}.${svcDomain}`);
	hosts.push(`${p.addr} ${names.join(" ")}`);
}
// A Service that publishes only ready pods gets their lines in hosts-ready
// ("POD<TAB>LINE"): the test appends each line once the pod's readiness
// probe passes, as the endpoints controller would.
const gated = [];
for (const s of docs.filter((o) => o.kind === "Service")) {
	const sel = s.spec.selector || {};
	for (const p of pods.filter((p) => p.hook === "-" && Object.entries(sel).every(([k, v]) => p.labels[k] === v))) {
		const line = `${p.addr} ${s.metadata.name} ${s.metadata.name}.${svcDomain}`;
		if (s.spec.publishNotReadyAddresses) hosts.push(line);
		else gated.push(`${p.name}\t${line}`);
	}
}
fs.writeFileSync(path.join(outDir, "hosts"), hosts.join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "hosts-ready"), gated.map((l) => l + "\n").join(""));

const claims = new Set();
const mountpoints = new Set();
const tsv = [];
for (const p of pods) {
	if (p.spec.containers.length !== 1) throw new Error(`${p.name}: one container per pod expected`);
	const c = p.spec.containers[0];
	const psc = p.spec.securityContext || {};
	const csc = c.securityContext || {};
	const uid = csc.runAsUser ?? psc.runAsUser ?? 0;
	const gid = csc.runAsGroup ?? psc.runAsGroup ?? 0;
	const groups = [gid, ...(psc.fsGroup !== undefined ? [psc.fsGroup] : []), ...(psc.supplementalGroups || [])];
	const vols = Object.fromEntries((p.spec.volumes || []).map((v) => [v.name, v]));
	// volumeClaimTemplates: the claim TEMPLATE-POD, as the StatefulSet makes it.
	for (const t of p.claimTemplates) vols[t.metadata.name] = { persistentVolumeClaim: { claimName: `${t.metadata.name}-${p.name}` } };
	const lines = ["#!/bin/sh", `# pod ${p.name} (${p.kind} ${p.owner}), generated by tests/k8s/pods.cjs`, "set -eu"];
	lines.push(`echo ${q(p.name)} >/proc/sys/kernel/hostname`);
	// Volumes first: their sources may lie under a path an emptyDir covers.
	const mounts = (c.volumeMounts || []).slice().sort((a, b) => a.mountPath.length - b.mountPath.length);
	const later = [];
	for (const m of mounts) {
		const v = vols[m.name];
		mountpoints.add(m.mountPath);
		if (v.persistentVolumeClaim) {
			claims.add(v.persistentVolumeClaim.claimName);
			lines.push(`mount --bind "$VOLUME_ROOT"/${q(v.persistentVolumeClaim.claimName)} ${q(m.mountPath)}`);
			if (m.readOnly || v.persistentVolumeClaim.readOnly) lines.push(`mount -o remount,bind,ro ${q(m.mountPath)}`);
		} else if (v.secret) {
			lines.push(`mount --bind ${q(secretVolume(p.name, v))} ${q(m.mountPath)}`);
			lines.push(`mount -o remount,bind,ro ${q(m.mountPath)}`);
		} else if (v.emptyDir) {
			later.push(`mount -t tmpfs -o mode=1777,size=${v.emptyDir.sizeLimit ? "64m" : "256m"} tmpfs ${q(m.mountPath)}`);
		} else throw new Error(`${p.name}: volume ${m.name} is neither a claim, an emptyDir nor a Secret`);
	}
	lines.push(`mount --bind "$HOSTS_FILE" /etc/hosts`);
	// Nothing answers DNS in the namespace: cluster names come from /etc/hosts only.
	lines.push(`mount --bind /dev/null /etc/resolv.conf`);
	lines.push(`mount --bind "$BIN_DIR" /usr/local/bin`);
	lines.push(...later);
	if (csc.readOnlyRootFilesystem) lines.push("mount -o remount,bind,ro /");
	const env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", `HOSTNAME=${p.name}`];
	for (const e of c.env || []) {
		if (e.value !== undefined) env.push(`${e.name}=${e.value}`);
		else if (e.valueFrom && e.valueFrom.resourceFieldRef) {
			// limits.cpu: the limit divided by the divisor, rounded up; without
			// a limit the node's allocatable CPUs (here: this machine's).
			const r = e.valueFrom.resourceFieldRef;
			if (r.resource !== "limits.cpu") throw new Error(`${p.name}: resourceFieldRef ${r.resource} not emulated`);
			const milli = (q) => (/m$/.test(String(q)) ? parseInt(q, 10) : Math.round(+q * 1000));
			const div = milli(r.divisor || "1");
			const lim = ((c.resources || {}).limits || {}).cpu;
			env.push(lim === undefined ? `${e.name}=$((CPUS * 1000 / ${div}))` : `${e.name}=${Math.ceil(milli(lim) / div)}`);
		} else throw new Error(`${p.name}: env ${e.name} has a source that is not emulated`);
	}
	const argv = [...(c.command || []), ...(c.args || [])];
	if (!argv.length) throw new Error(`${p.name}: no command (the image's entrypoint is not emulated)`);
	const envWords = env.map((kv) => (kv.includes("=$((CPUS") ? `"${kv}"` : q(kv)));
	lines.push(`exec setpriv --reuid=${uid} --regid=${gid} --groups=${[...new Set(groups)].join(",")} --inh-caps=-all \\`);
	// The sanitizer build's options are the test harness's, not the pod's.
	lines.push(`  env -i \${ASAN_OPTIONS:+"ASAN_OPTIONS=$ASAN_OPTIONS"} \${UBSAN_OPTIONS:+"UBSAN_OPTIONS=$UBSAN_OPTIONS"} \\`);
	lines.push(`  ${envWords.join(" ")} \\`);
	lines.push(`  ${argv.map(q).join(" ")}`);
	fs.writeFileSync(path.join(outDir, `pod-${p.name}.sh`), lines.join("\n") + "\n", { mode: 0o755 });
	const rp = c.readinessProbe && c.readinessProbe.httpGet;
	const rport = rp && (typeof rp.port === "string" ? (c.ports || []).find((x) => x.name === rp.port).containerPort : rp.port);
	tsv.push([p.name, p.component, p.addr, p.hook, rp ? rport : "-", rp ? rp.path : "-", rp ? rp.scheme || "HTTP" : "-"].join("\t"));
}
fs.writeFileSync(path.join(outDir, "pods.tsv"), tsv.join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "claims"), [...claims].join("\n") + "\n");
fs.writeFileSync(path.join(outDir, "mountpoints"), [...mountpoints].join("\n") + "\n");
