"""A kubelet-like supervisor over gnn-dist's real binaries on 127.0.0.1.

Graph stores, samplers and trainers run as separate processes with the
chart's settings (tests/chaos/README.md says which). Like a kubelet with
restartPolicy Always, the supervisor starts any process that exited again
after its restart delay, on the same ports (a pod keeps its DNS name), and
appends each incarnation's log to the same file. Faults are injected from
the scenarios (chaos.py) through kill(), freeze() and thaw(); every wait is
bounded and the whole cluster is stopped by stop(), also on errors.
"""
import os
import random
import re
import signal
import socket
import ssl
import subprocess
import time
import urllib.request

BUILD = os.environ.get("GNN_BUILD") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
BIN = os.path.join(BUILD, "bin")

# The chart's defaults where they matter for faults (charts/gnn-dist/values.yaml).
SAMPLER_ARGS = ["--timeout-ms=5000", "--retries=4", "--check-interval-ms=1000", "--store-down-grace-s=30"]
TRAINER_ARGS = ["--timeout-ms=30000", "--retries=2", "--peer-timeout-s=300", "--wait-s=600",
                "--resolve-interval-s=30", "--on-finish=serve", "--log-interval-s=5"]

TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d+)Z ")


def _port_candidates():
    """Ports outside the kernel's ephemeral range (and Kubernetes' NodePorts):
    a process killed here is restarted on its port while its peers keep
    dialling it, and a dial whose source port is the dialled port connects
    to itself and leaves the restarted listener without its port."""
    lo, hi = 32768, 60999
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            lo, hi = (int(x) for x in f.read().split())
    except (OSError, ValueError):
        pass
    return range(10000, min(lo, 30000)) if lo > 11024 else range(hi + 1, 65536)


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held open together while chosen)."""
    socks, ports = [], []
    cands = _port_candidates()
    try:
        for _ in range(100 * n + 100):
            if len(ports) == n:
                break
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", random.choice(cands)))
            except OSError:
                s.close()
                continue
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    if len(ports) < n:
        raise RuntimeError("no %d free ports outside the ephemeral range" % n)
    return ports


def make_certs(path):
    """Throwaway certificates for mutual TLS (docs/security.md): a data-plane
    CA and one certificate for every process, a ring CA and one for the
    trainers, each naming localhost (mbed TLS matches no IP address).
    Returns {"data": flags, "ring": flags}; raises on an openssl failure."""
    os.makedirs(path, exist_ok=True)

    def run(*args):
        subprocess.run(["openssl"] + list(args), check=True, cwd=path, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, timeout=60)
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    with open(os.path.join(path, "node.ext"), "w") as f:
        f.write("subjectAltName=DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    for ca, node in (("data", "node"), ("ring", "trainer")):
        run("req", "-x509", *ec, "-keyout", ca + "-ca.key", "-out", ca + "-ca.crt", "-days", "30",
            "-subj", "/CN=gnn-dist chaos " + ca)
        run("req", *ec, "-keyout", node + ".key", "-out", node + ".csr", "-subj", "/CN=" + node)
        run("x509", "-req", "-in", node + ".csr", "-CA", ca + "-ca.crt", "-CAkey", ca + "-ca.key",
            "-CAcreateserial", "-out", node + ".crt", "-days", "30", "-extfile", "node.ext")
    j = lambda n: os.path.join(path, n)  # noqa: E731
    return {"data": ["--tls-ca=" + j("data-ca.crt"), "--tls-cert=" + j("node.crt"), "--tls-key=" + j("node.key")],
            "ring": ["--ring-tls-ca=" + j("ring-ca.crt"), "--ring-tls-cert=" + j("trainer.crt"),
                     "--ring-tls-key=" + j("trainer.key")],
            "files": (j("data-ca.crt"), j("node.crt"), j("node.key"))}


def log_time(line):
    """Seconds since the epoch of a log line's ISO timestamp, or None."""
    m = TS.match(line)
    if not m:
        return None
    return time.mktime(time.strptime(m.group(1)[:19], "%Y-%m-%dT%H:%M:%S")) - time.timezone + \
        float("0" + m.group(1)[19:])


class Proc:
    """One component: its command line never changes across restarts."""

    def __init__(self, name, argv, log, http_port):
        self.name, self.argv, self.log, self.http_port = name, argv, log, http_port
        self.popen = None
        self.down_since = None      # when it was seen exited
        self.restart = True         # what a kubelet would do
        self.delay_s = 2.0
        self.exits = []             # (status, injected) per exit seen
        self.injected = 0           # kills by the scenario not yet matched to an exit
        self.frozen = False
        self.env_once = None        # more environment for the next start only (a fault's)

    def start(self):
        env = dict(os.environ, **self.env_once) if self.env_once else None
        self.env_once = None
        with open(self.log, "ab") as f:
            self.popen = subprocess.Popen(self.argv, stdout=f, stderr=f, stdin=subprocess.DEVNULL,
                                          start_new_session=True, env=env)
        self.down_since = None

    def alive(self):
        return self.popen is not None and self.popen.poll() is None

    def pid(self):
        return self.popen.pid if self.alive() else None


class Cluster:
    def __init__(self, work, partdir, parts, samplers, trainers, train_args, ckpt, tls=None, hosts=None,
                 replicas=1, emb_wal=False):
        """replicas: graph stores per partition, graphstore-i serving
        partition i mod parts (gnn-local --graphstore-replicas).
        emb_wal: each graph store logs its embeddings' changes in
        WORK/wal/NAME (--emb-wal-dir), kept across its restarts.
        tls: make_certs()'s answer, every link mutual TLS; None: plain.
        hosts: None, every process on 127.0.0.1; or an emulated network
        (tests/net/hosts.py's Hosts): each process in a network namespace
        of its own, started through `ip netns exec`, listening on its own
        address (hosts.add(name)) on the same two ports as the others."""
        self.work, self.partdir, self.ckpt, self.tls, self.hosts = work, partdir, ckpt, tls, hosts
        names = ["graphstore-%d" % i for i in range(parts * replicas)] + \
            ["sampler-%d" % i for i in range(samplers)] + \
            ["trainer-%d" % i for i in range(trainers)]
        os.makedirs(os.path.join(work, "logs"), exist_ok=True)
        if hosts is not None:
            addr = {n: hosts.add(n) for n in names}
            port = {n: (7000, 8000) for n in names}
        else:
            addr = {n: "127.0.0.1" for n in names}
            ports = free_ports(2 * len(names))
            port = {n: (ports[2 * i], ports[2 * i + 1]) for i, n in enumerate(names)}
        # Dialled as localhost with TLS: the name in the certificates.
        # With hosts, dialled by name when they say so (their hosts file).
        dial = {n: hosts.dial_host(n) for n in names} if hosts is not None else addr
        url = lambda n: "tcp://%s:%d" % ("localhost" if tls else dial[n], port[n][0])  # noqa: E731
        data, ring = (tls["data"], tls["ring"]) if tls else ([], [])
        stores = ",".join(url(n) for n in names if n.startswith("graphstore-"))
        smps = ",".join(url(n) for n in names if n.startswith("sampler-"))
        peers = ",".join(url(n) for n in names if n.startswith("trainer-"))
        self.procs = {}
        for n in names:
            i = int(n.rsplit("-", 1)[1])
            own = ["--listen=tcp://%s:%d" % (addr[n], port[n][0]), "--http-addr=" + addr[n],
                   "--http-port=%d" % port[n][1]]
            if n.startswith("graphstore-"):
                argv = [BIN + "/gnn-graphstore", "--data=" + partdir, "--part=%d" % (i % parts)] + own + \
                    ["--wait-data=0", "--workers=2"] + data + \
                    (["--emb-wal-dir=" + os.path.join(work, "wal", n)] if emb_wal else [])
            elif n.startswith("sampler-"):
                argv = [BIN + "/gnn-sampler", "--graphstores=" + stores] + own + \
                    ["--wait-stores=600", "--workers=2"] + SAMPLER_ARGS + data
            else:
                argv = [BIN + "/gnn-trainer", "--rank=%d" % i, "--world-size=%d" % trainers,
                        "--peers=" + peers, "--samplers=" + smps, "--graphstores=" + stores] + own + \
                    ["--threads=1", "--checkpoint-dir=" + ckpt] + TRAINER_ARGS + train_args + data + ring
            if hosts is not None:
                argv = hosts.exec_argv(n) + argv
            self._add(n, addr[n], port[n][1], argv)
        self.trainers = ["trainer-%d" % i for i in range(trainers)]

    def _add(self, name, http_addr, http_port, argv):
        p = Proc(name, argv, os.path.join(self.work, "logs", name + ".log"), http_port)
        p.http_addr = http_addr
        self.procs[name] = p

    def start(self):
        for p in self.procs.values():
            p.start()

    def tick(self):
        """The kubelet's loop: notice exits, restart after the delay."""
        now = time.time()
        for p in self.procs.values():
            if p.popen is None or p.alive():
                continue
            if p.down_since is None:
                p.down_since = now
                injected = p.injected > 0
                p.injected = max(0, p.injected - 1)
                p.exits.append((p.popen.returncode, injected))
            if p.restart and now - p.down_since >= p.delay_s:
                p.start()

    def sleep(self, s):
        end = time.time() + s
        while time.time() < end:
            self.tick()
            time.sleep(0.02)

    def wait(self, what, pred, timeout_s):
        """Polls pred (ticking the supervisor) until true; False after timeout_s."""
        end = time.time() + timeout_s
        while time.time() < end:
            self.tick()
            if pred():
                return True
            time.sleep(0.02)
        print("  gave up waiting for %s after %.0f s" % (what, timeout_s), flush=True)
        return False

    def kill(self, name, sig=signal.SIGKILL):
        p = self.procs[name]
        if p.alive():
            p.injected += sig in (signal.SIGKILL, signal.SIGTERM)
            os.kill(p.popen.pid, sig)

    def freeze(self, name):
        self.kill(name, signal.SIGSTOP)
        self.procs[name].frozen = True

    def thaw(self, name):
        self.kill(name, signal.SIGCONT)
        self.procs[name].frozen = False

    def stop(self):
        for p in self.procs.values():
            p.restart = False
            if p.alive():
                if p.frozen:
                    os.kill(p.popen.pid, signal.SIGCONT)
                os.kill(p.popen.pid, signal.SIGTERM)
        end = time.time() + 8
        for p in self.procs.values():
            while p.alive() and time.time() < end:
                time.sleep(0.02)
            if p.alive():
                os.kill(p.popen.pid, signal.SIGKILL)
                p.popen.wait()

    def text(self, name):
        try:
            with open(self.procs[name].log, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def lines(self, name, event):
        """Log lines of name whose event is `event`, oldest first."""
        pat = re.compile(r"^\S+ +\S+ +\S+ %s( |$)" % re.escape(event))
        return [ln for ln in self.text(name).splitlines() if pat.match(ln)]

    def epoch_reached(self, name, epoch):
        return any(kv(ln, "epoch") == str(epoch) for ln in self.lines(name, "epoch"))

    def finished(self):
        """Every trainer's latest incarnation has logged its summary."""
        return all(self.procs[t].alive() and self.lines(t, "summary") and
                   self.text(t).rfind(" summary ") > self.text(t).rfind(" config ") for t in self.trainers)

    def _get(self, name, path, timeout):
        """urlopen of a process's HTTP path: HTTPS with TLS, verified
        against the data plane's CA, with its certificate (for /metrics)."""
        if not self.tls:
            return urllib.request.urlopen("http://127.0.0.1:%d%s" % (self.procs[name].http_port, path),
                                          timeout=timeout)
        ca, cert, key = self.tls["files"]
        ctx = ssl.create_default_context(cafile=ca)
        ctx.load_cert_chain(cert, key)
        return urllib.request.urlopen("https://localhost:%d%s" % (self.procs[name].http_port, path),
                                      timeout=timeout, context=ctx)

    def readyz(self, name):
        try:
            with self._get(name, "/readyz", 1) as r:
                return r.status
        except Exception as e:  # HTTPError carries the status
            return getattr(e, "code", 0)

    def metrics(self, name):
        try:
            with self._get(name, "/metrics", 2) as r:
                return r.read().decode(errors="replace")
        except Exception:
            return ""


def kv(line, key):
    m = re.search(r"(?:^| )%s=(\S+)" % re.escape(key), line)
    return m.group(1) if m else None
