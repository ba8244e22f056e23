"""Emulated hosts for the network-fault scenarios (tests/net/netfaults.py).

Each component gets a network namespace of its own (an emulated host),
joined by a veth pair to a bridge in a hub namespace, with an address in
198.19.0.0/16 (RFC 2544's benchmarking range, only inside our namespaces).
tests/chaos/cluster.py's Cluster(hosts=Hosts(...)) starts every process
through `ip netns exec`. Faults act on those namespaces only (the host's
own rules and links are never touched): iptables DROP rules inside a
namespace (partitions, one-way too), a veth set down (a host that vanishes
without FIN or RST), tc netem / tbf on both ends of a veth (delay, loss,
rate). close() removes every namespace and kills whatever still runs in
them; it runs at exit and on SIGTERM/SIGINT too.
"""
import atexit
import os
import re
import shutil
import signal
import subprocess
import sys

SUBNET = "198.19"


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

    def close(self):
        """Kills what still runs in our namespaces (only ours), removes them."""
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


def has_qdisc(*spec):
    h = None
    try:
        h = Hosts("gnnnetprobe%d-" % os.getpid())
        h.add("probe")
        h.qdisc("probe", *spec)
        return True
    except Exception:
        return False
    finally:
        if h is not None:
            h.close()
