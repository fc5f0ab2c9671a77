package main

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
)

// machine describes where the benchmark ran.
type machine struct {
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPUModel   string `json:"cpu_model"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Redis      string `json:"redis"`
}

func describeMachine(redisBin string) (machine, error) {
	out, err := exec.Command(redisBin, "--version").Output()
	if err != nil {
		return machine{}, fmt.Errorf("%s --version: %w", redisBin, err)
	}
	return machine{
		CPUs:       runtime.NumCPU(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		CPUModel:   cpuModel(),
		Go:         runtime.Version(),
		OS:         runtime.GOOS,
		Arch:       runtime.GOARCH,
		Redis:      strings.TrimSpace(string(out)),
	}, nil
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
