#!/usr/bin/env python3
"""pod_sd.py PORT NAMESPACE: Prometheus HTTP service discovery of the pods of
NAMESPACE, with the target labels Prometheus' own Kubernetes discovery
(kubernetes_sd_configs, role pod) gives: one target per container port
(IP:PORT; IP alone for a container without ports), and the
__meta_kubernetes_pod_* labels (name, IP, phase, ready, node, labels and
annotations sanitised to [a-zA-Z0-9_], container name and port). So the
usual annotation-driven relabelling works unchanged.

Why: Debian's Prometheus (2.42) is built without Kubernetes discovery
("field kubernetes_sd_configs not found"); this feeds its HTTP discovery
from the same API server, every request a fresh `kubectl get pods`."""
import http.server
import json
import re
import subprocess
import sys


def sanitize(name):
    return re.sub(r"[^a-zA-Z0-9_]", "_", name)


def targets(namespace):
    out = subprocess.run(["kubectl", "-n", namespace, "get", "pods", "-o", "json"],
                         capture_output=True, text=True, timeout=10, check=True).stdout
    result = []
    for pod in json.loads(out)["items"]:
        meta, spec, status = pod["metadata"], pod["spec"], pod.get("status", {})
        ip = status.get("podIP")
        if not ip:
            continue
        ready = any(c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions", []))
        base = {
            "__meta_kubernetes_namespace": meta["namespace"],
            "__meta_kubernetes_pod_name": meta["name"],
            "__meta_kubernetes_pod_ip": ip,
            "__meta_kubernetes_pod_phase": status.get("phase", ""),
            "__meta_kubernetes_pod_ready": "true" if ready else "false",
            "__meta_kubernetes_pod_node_name": spec.get("nodeName", ""),
        }
        for k, v in meta.get("labels", {}).items():
            base["__meta_kubernetes_pod_label_" + sanitize(k)] = v
            base["__meta_kubernetes_pod_labelpresent_" + sanitize(k)] = "true"
        for k, v in meta.get("annotations", {}).items():
            base["__meta_kubernetes_pod_annotation_" + sanitize(k)] = v
            base["__meta_kubernetes_pod_annotationpresent_" + sanitize(k)] = "true"
        for c in spec.get("containers", []):
            ports = c.get("ports") or [None]
            for p in ports:
                labels = dict(base, __meta_kubernetes_pod_container_name=c["name"])
                addr = ip
                if p is not None:
                    addr = f"{ip}:{p['containerPort']}"
                    labels["__meta_kubernetes_pod_container_port_name"] = p.get("name", "")
                    labels["__meta_kubernetes_pod_container_port_number"] = str(p["containerPort"])
                    labels["__meta_kubernetes_pod_container_port_protocol"] = p.get("protocol", "TCP")
                result.append({"targets": [addr], "labels": labels})
    return result


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        try:
            body = json.dumps(targets(self.server.namespace)).encode()
            self.send_response(200)
        except Exception as e:  # the API server not answering: Prometheus keeps the last list
            body = str(e).encode()
            self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    server.namespace = sys.argv[2]
    server.serve_forever()


main()
