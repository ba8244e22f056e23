"""Emulated hosts for the network-fault scenarios (tests/net/netfaults.py).

Each component gets a network namespace of its own (an emulated host),
joined by a veth pair to a bridge in a hub namespace, with an address in
198.19.0.0/16 (RFC 2544's benchmarking range, only inside our namespaces).
tests/chaos/cluster.py's Cluster(hosts=Hosts(...)) starts every process
through `ip netns exec`. Faults act on those namespaces only (the host's
own rules and links are never touched): iptables DROP rules inside a
namespace (partitions, one-way too), a veth set down (a host that vanishes
without FIN or RST), tc netem / tbf on both ends of a veth (delay, loss,
rate), or where the kernel has no netem, a delaying TCP relay in the hub
namespace (delay(), tests/net/delayrelay.py). close() removes every
namespace and kills whatever still runs in them, the relay too; it runs
at exit and on SIGTERM/SIGINT too.
"""
import atexit
import os
import re
import select
import shutil
import signal
import subprocess
import sys

SUBNET = "198.19"
RELAY_ADDR = SUBNET + ".255.254"    # br0's, in the hub: the delaying relay listens there
RELAY_PORT0 = 20000
RELAY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "delayrelay.py")


def sh(*argv, check=True):
    """Runs one command (bounded); raises with its stderr on failure."""
    r = subprocess.run(list(argv), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(argv), r.stderr.decode(errors="replace").strip()))
    return r


class Hosts:
    def __init__(self, prefix=None, by_name=False):
        """by_name: processes dial each other by name, through a hosts
        file of each namespace's own (/etc/netns/NS/hosts, which `ip netns
        exec` mounts over /etc/hosts), so that a pod moved to another host
        (move()) is found again; else by address."""
        self.prefix = prefix or "gnnnet%d-" % os.getpid()
        self.by_name = by_name
        self.hub = self.prefix + "hub"
        self.nses = []              # every namespace we made, the hub first
        self.host = {}              # name -> (namespace, address, hub-side veth)
        self.n = 0
        self.relay = None           # the delaying relay's Popen (delay())
        atexit.register(self.close)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._on_signal)
        sh("ip", "netns", "add", self.hub)
        self.nses.append(self.hub)
        sh("ip", "-n", self.hub, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.hub, "link", "set", "br0", "up")
        sh("ip", "-n", self.hub, "link", "set", "lo", "up")

    def _on_signal(self, signum, _frame):
        self.close()
        sys.exit(128 + signum)

    def add(self, name):
        """A new host for `name`: its namespace, veth and address (returned).
        Adding a name again makes another host (a pod restarted elsewhere)."""
        self.n += 1
        ns = "%s%d" % (self.prefix, self.n)
        addr = "%s.%d.%d" % (SUBNET, self.n // 250, 10 + self.n % 250)
        veth = "v%d" % self.n
        sh("ip", "netns", "add", ns)
        self.nses.append(ns)
        sh("ip", "-n", self.hub, "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "-n", self.hub, "link", "set", veth, "master", "br0", "up")
        sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", ns, "addr", "add", addr + "/16", "dev", "eth0")
        sh("ip", "-n", ns, "link", "set", "eth0", "up")
        self.host[name] = (ns, addr, veth)
        if self.by_name:
            os.makedirs("/etc/netns/" + ns, exist_ok=True)
            self.write_hosts()
        return addr

    def dial_host(self, name):
        return name if self.by_name else self.addr(name)

    def write_hosts(self):
        """Every namespace's hosts file, rewritten in place (the same
        file: a running process's mount of it sees the change)."""
        text = "127.0.0.1 localhost\n" + "".join("%s %s\n" % (a, n) for n, (_, a, _) in self.host.items())
        for ns in self.nses[1:]:
            with open("/etc/netns/%s/hosts" % ns, "w") as f:
                f.write(text)

    def move(self, name):
        """name's pod is started elsewhere: a new host (namespace, address)
        for it, the names pointing there. Returns (old, new) as
        (namespace, address) pairs; the old host stays, as it was."""
        old = self.host[name][:2]
        self.add(name)
        return old, self.host[name][:2]

    def ns(self, name):
        return self.host[name][0]

    def addr(self, name):
        return self.host[name][1]

    def exec_argv(self, name):
        return ["ip", "netns", "exec", self.ns(name)]

    # ---- faults ---------------------------------------------------------

    def ipt(self, name, *rule):
        sh("ip", "netns", "exec", self.ns(name), "iptables", "-w", *rule)

    def isolate(self, name):
        """Every packet to and from name's host dropped (no reset)."""
        self.ipt(name, "-A", "INPUT", "-i", "eth0", "-j", "DROP")
        self.ipt(name, "-A", "OUTPUT", "-o", "eth0", "-j", "DROP")

    def drop_from(self, name, other):
        """One way: name's host no longer receives what other's sends
        (other's packets vanish; name's still reach other)."""
        self.ipt(name, "-A", "INPUT", "-s", self.addr(other), "-j", "DROP")

    def lose(self, name, fraction):
        """Each packet name's host receives is dropped with this
        probability (iptables' statistic match: no netem needed)."""
        self.ipt(name, "-A", "INPUT", "-i", "eth0", "-m", "statistic", "--mode", "random",
                 "--probability", str(fraction), "-j", "DROP")

    def heal(self, name):
        self.ipt(name, "-F")

    def link(self, name, up):
        """The host's cable: down, nothing leaves or arrives, nobody is told."""
        sh("ip", "-n", self.hub, "link", "set", self.host[name][2], "up" if up else "down")

    def qdisc(self, name, *spec):
        """A qdisc on both ends of name's veth (each end shapes what it
        sends): tc's words, e.g. ("netem", "delay", "20ms", "5ms")."""
        ns, _, veth = self.host[name]
        sh("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", "eth0", "root", *spec)
        sh("ip", "netns", "exec", self.hub, "tc", "qdisc", "replace", "dev", veth, "root", *spec)

    def unshape(self, name):
        ns, _, veth = self.host[name]
        sh("ip", "netns", "exec", ns, "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
        sh("ip", "netns", "exec", self.hub, "tc", "qdisc", "del", "dev", veth, "root", check=False)

    def delay(self, delay_ms, jitter_ms, ports, limit_s=600):
        """Latency without netem: every TCP connection a host opens to
        another host's `ports` goes through a relay in the hub namespace
        (a DNAT rule in the dialling host's namespace, a relay port per
        destination host and port), which passes each chunk on delay_ms
        +- jitter_ms (uniform) after it arrived, in order, each way
        (delayrelay.py). For the hosts there now, before their processes
        dial; the relay exits after limit_s, or with us."""
        sh("ip", "-n", self.hub, "addr", "add", RELAY_ADDR + "/16", "dev", "br0")
        specs, rules = [], []
        for name, (_, addr, _) in self.host.items():
            for port in ports:
                rport = RELAY_PORT0 + len(specs)
                specs.append("%d=%s:%d" % (rport, addr, port))
                rules += [(other, addr, port, rport) for other in self.host if other != name]
        self.relay = subprocess.Popen(
            ["ip", "netns", "exec", self.hub, sys.executable, RELAY, str(delay_ms), str(jitter_ms),
             str(limit_s), RELAY_ADDR] + specs, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
        if not select.select([self.relay.stdout], [], [], 15)[0] or not self.relay.stdout.readline():
            raise RuntimeError("the delaying relay did not start")
        for other, addr, port, rport in rules:
            self.ipt(other, "-t", "nat", "-A", "OUTPUT", "-p", "tcp", "-d", addr, "--dport", str(port),
                     "-j", "DNAT", "--to-destination", "%s:%d" % (RELAY_ADDR, rport))

    def close(self):
        """Kills what still runs in our namespaces (only ours), removes them."""
        if self.relay is not None:
            self.relay.kill()
            self.relay.wait(10)
            self.relay = None
        for ns in self.nses:
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (OSError, ValueError):
                    pass
        for ns in reversed(self.nses):
            sh("ip", "netns", "del", ns, check=False)
            if self.by_name:
                shutil.rmtree("/etc/netns/" + ns, ignore_errors=True)
        self.nses = []


def remove_stale():
    """Namespaces of an earlier run of ours whose process is gone (killed
    with SIGKILL, its handlers never ran): what runs in them and they go."""
    for line in sh("ip", "netns", "list", check=False).stdout.decode().splitlines():
        ns = line.split()[0] if line.split() else ""
        m = re.match(r"gnnnet(?:probe)?(\d+)-", ns)
        if not m or os.path.exists("/proc/" + m.group(1)):
            continue
        for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        sh("ip", "netns", "del", ns, check=False)
        shutil.rmtree("/etc/netns/" + ns, ignore_errors=True)


def unavailable():
    """None when namespaces, veth pairs, a bridge and iptables inside a
    namespace all work here; else why not. The netem qdisc is probed apart
    (has_qdisc): some kernels are built without it."""
    if os.geteuid() != 0:
        return "needs root (ip netns)"
    remove_stale()
    h = None
    try:
        h = Hosts("gnnnetprobe%d-" % os.getpid())
        h.add("probe")
        h.ipt("probe", "-L", "-n")
        return None
    except Exception as e:
        return str(e)[:200]
    finally:
        if h is not None:
            h.close()


def _probe(fault):
    """Whether fault(hosts, name) works on a probe host of its own."""
    h = None
    try:
        h = Hosts("gnnnetprobe%d-" % os.getpid())
        h.add("probe")
        fault(h, "probe")
        return True
    except Exception:
        return False
    finally:
        if h is not None:
            h.close()


def has_qdisc(*spec):
    return _probe(lambda h, n: h.qdisc(n, *spec))


def has_nat():
    """iptables' nat table inside a namespace (Hosts.delay's DNAT rules)."""
    return _probe(lambda h, n: h.ipt(n, "-t", "nat", "-L", "-n"))
