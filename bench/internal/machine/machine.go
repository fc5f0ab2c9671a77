// Package machine describes where a benchmark ran.
package machine

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// Machine describes where the benchmark ran.
type Machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Redis      string `json:"redis"`
	// Library is the commit of the repository the benchmark runs in
	// (the library under test, through the replace directive), with
	// "+changes" when its store, mutex, scheduler or internal packages, or
	// the benchmarks themselves (bench/), differ from it.
	Library string `json:"library"`
}

// Describe returns this machine, with the version of the redis-server at
// redisBin.
func Describe(redisBin string) (Machine, error) {
	out, err := exec.Command(redisBin, "--version").Output()
	if err != nil {
		return Machine{}, fmt.Errorf("%s --version: %w", redisBin, err)
	}
	return Machine{
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel:   cpuModel(),
		Go:         runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Redis:      strings.TrimSpace(string(out)),
		Library:    libraryCommit(),
	}, nil
}

// libraryCommit describes the checked-out commit (git, read only), or
// "unknown" outside a git work tree, with "+changes" when tracked files
// differ from it in what a benchmark runs: the library's store, mutex,
// scheduler and internal packages (redisproc, tcpproxy, ...) and the
// bench module itself.
func libraryCommit() string {
	out, err := exec.Command("git", "log", "-1", "--format=%h %cI").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--",
		":(top)store", ":(top)mutex", ":(top)scheduler", ":(top)internal", ":(top)bench").Output()
	if err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += " +changes"
	}
	return c
}

// WriteHeader writes the two header lines of a report.
func (m Machine) WriteHeader(w io.Writer) {
	fmt.Fprintf(w, "machine: %d CPUs (GOMAXPROCS %d), %s, %s %s/%s\n", m.CPUs, m.GOMAXPROCS, m.CPUModel, m.Go, m.OS, m.Arch)
	fmt.Fprintf(w, "redis:   %s\n", m.Redis)
	fmt.Fprintf(w, "library: %s\n", m.Library)
}

// cpuModel returns the CPU's model name from /proc/cpuinfo, or "unknown
// CPU" where there is none.
func cpuModel() string {
	data, _ := os.ReadFile("/proc/cpuinfo")
	for line := range strings.Lines(string(data)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown CPU"
}
