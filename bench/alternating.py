"""Side-by-side load benchmarks (bench/watch_load.py, bench/dashboard_load.py): the same job alone
and under load, alternating round by round so machine noise hits both alike, traind pinned to the
first half of the CPUs and the clients to the rest."""
import os
import sys


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` (its own threads, not its children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def split_cpus():
    """(traind's CPUs, the clients' CPUs): the first half of this process's CPUs and the rest."""
    cpus = sorted(os.sched_getaffinity(0))
    half = max(1, len(cpus) // 2)
    return set(cpus[:half]), set(cpus[half:] or cpus)


class Rounds:
    """Runs `train_once(loaded)` alone then loaded, `rounds` times. It returns (epoch seconds,
    clients that saw every event, clients, events, traind CPU seconds)."""

    def __init__(self, rounds, train_once, clients_noun):
        self.quiet, self.loaded, self.quiet_cpu, self.loaded_cpu, self.ratios = [], [], [], [], []
        self.misses = self.events = self.clients = 0
        for r in range(rounds):
            seconds, _, _, _, cpu = train_once(False)
            self.quiet.append(seconds)
            self.quiet_cpu.append(cpu)
            seconds, complete, total, self.events, cpu = train_once(True)
            self.loaded.append(seconds)
            self.loaded_cpu.append(cpu)
            self.ratios.append(self.loaded[-1] / self.quiet[-1])
            self.misses += total - complete
            self.clients += total
            print(f"round {r + 1}: no {clients_noun} {self.quiet[-1]:.2f} s (traind CPU "
                  f"{self.quiet_cpu[-1]:.2f} s), {total} {clients_noun} {seconds:.2f} s (traind CPU "
                  f"{cpu:.2f} s), {complete}/{total} {clients_noun} saw all {self.events} events",
                  file=sys.stderr)
