package systemtest_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
)

// The nemesis' settings: short TTLs, so that faults come and go within
// seconds; five nodes; three replicas, each an OS process of its own.
const (
	nemesisNodes    = 5
	nemesisReplicas = 3
	nemesisMaxTTL   = 2 * time.Second
	nemesisLockTTL  = 2 * time.Second
	nemesisGrace    = 3 * time.Second
	nemesisCatchUp  = 30 * time.Second
	nemesisBulk     = 10000 // bulk jobs of a front-door run (REDCRON_NEMESIS_BULK sets another number)
)

// TestNemesis runs a fleet of replica processes over real redis-servers
// while a nemesis draws faults at random from a seed: nodes killed, paused
// and restarted empty, alone and in majorities, and restarted in turn;
// latency and cut connections between a replica and its nodes; replicas
// paused past their leases, killed mid-run and restarted (with catch-up
// on, at times), and restarted in turn; replicas' clocks stepped forward
// and back; corrupt values at lock and state keys. Then it checks the
// history (checkHistory). Two seeds of three build the replicas with the
// front door (shards, ticks claimed in bulk) and add nemesisBulk jobs
// (REDCRON_NEMESIS_BULK=n: n of them), the third a scheduler with a lock
// per tick. CI runs a fixed set of seeds;
// REDCRON_NEMESIS_SOAK=1h runs random seeds for that long, and
// REDCRON_NEMESIS_SEED=n (with REDCRON_NEMESIS_DURATION) reruns one seed.
func TestNemesis(t *testing.T) {
	seeds, each := []uint64{1, 2, 3}, 45*time.Second
	if v := os.Getenv("REDCRON_NEMESIS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("REDCRON_NEMESIS_DURATION: %v", err)
		}
		each = d
	}
	if v := os.Getenv("REDCRON_NEMESIS_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("REDCRON_NEMESIS_SEED: %v", err)
		}
		seeds = []uint64{seed}
	}
	if v := os.Getenv("REDCRON_NEMESIS_SOAK"); v != "" {
		soak, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("REDCRON_NEMESIS_SOAK: %v", err)
		}
		end := time.Now().Add(soak)
		for time.Now().Before(end) {
			seed := uint64(time.Now().UnixNano())
			t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runNemesis(t, seed, 3*time.Minute) })
		}
		return
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runNemesis(t, seed, each) })
	}
}

// nemesis drives one run: the servers, the replica processes, the faults.
type nemesis struct {
	t        *testing.T
	rng      *rand.Rand
	dir      string
	cluster  *redistest.Cluster
	storeSrv *redistest.Server
	proxies  [][]*redistest.Proxy // by replica, then node
	replicas []*replicaProc
	world    world
	exe      string
	lead     time.Duration
	once     time.Time // if set, the replicas also run a one-time job "once" at it
	front    bool      // the replicas are built with the front door (shards, ticks claimed in bulk)
	limited  bool      // the replicas also run the limited jobs (replicaConfig.Limited)
}

// replicaProc is the current process of one replica.
type replicaProc struct {
	idx    int
	name   string // this incarnation's name, for the history
	n      int    // incarnations so far
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	offset time.Duration
}

func runNemesis(t *testing.T, seed uint64, d time.Duration) {
	t.Logf("nemesis seed %d for %v: rerun with REDCRON_NEMESIS_SEED=%d REDCRON_NEMESIS_DURATION=%v go test -run 'TestNemesis' ./systemtest/", seed, d, seed, d)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	n := &nemesis{t: t, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), dir: t.TempDir(), exe: exe}
	if seed%2 == 1 {
		n.lead = 300 * time.Millisecond
	}
	// Two seeds of three build the replicas with the front door, with
	// nemesisBulk bulk jobs besides; the third, a lock per tick.
	bulk := 0
	if n.front = seed%3 != 1; n.front {
		bulk = nemesisBulk
		if v := os.Getenv("REDCRON_NEMESIS_BULK"); v != "" {
			if bulk, err = strconv.Atoi(v); err != nil || bulk < 0 {
				t.Fatalf("REDCRON_NEMESIS_BULK: %q is not a number of jobs", v)
			}
		}
	}
	t.Logf("seed %d: front door %v, %d bulk jobs, lock-ahead %v", seed, n.front, bulk, n.lead)
	begin := time.Now()
	n.cluster = redistest.Start(t, nemesisNodes)
	n.storeSrv = redistest.Start(t, 1).Node(0)
	n.world = world{nodes: nemesisNodes, quorum: nemesisNodes/2 + 1, maxTTL: nemesisMaxTTL, grace: nemesisGrace,
		starts: make([][]time.Time, nemesisNodes), procs: map[string]proc{}, bulk: bulk}
	for i := range nemesisNodes {
		n.world.starts[i] = []time.Time{begin}
	}
	n.startReplicas()
	// The brand-new servers vote after their quarantine; ticks are checked
	// from then on.
	n.world.from = begin.Add(nemesisMaxTTL + 4*time.Second)
	n.sleep(nemesisMaxTTL + 4*time.Second)
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		n.step()
		n.calm()
	}
	n.healAll()
	n.sleep(nemesisGrace + time.Second)
	n.world.to = time.Now().Add(-nemesisGrace - time.Second)
	for _, p := range n.replicas {
		n.stopReplica(p, syscall.SIGTERM)
	}
	h := n.histories()
	violations := checkHistory(n.world, h)
	t.Logf("seed %d: %s; %d faults, %d violations", seed, tally(h), len(n.world.faults), len(violations))
	for i, v := range violations {
		if i == 40 {
			t.Errorf("seed %d: %d violations more", seed, len(violations)-i)
			break
		}
		t.Errorf("seed %d: %s", seed, v)
	}
	if len(violations) > 0 || testing.Verbose() {
		for _, f := range n.world.faults {
			t.Logf("fault: %s", f)
		}
	}
}

// step applies one fault drawn at random, and waits for it to heal.
func (n *nemesis) step() {
	switch k := n.rng.IntN(15); k {
	case 0, 1:
		n.downNodes("node-down", 1)
	case 2:
		n.downNodes("node-pause", 1)
	case 3:
		n.restartNodes(n.pick(nemesisNodes, 1))
	case 4:
		n.downNodes("node-down", 3)
	case 5:
		n.downNodes("node-pause", 3)
	case 6:
		n.restartNodes(n.pick(nemesisNodes, 3))
	case 7:
		for _, i := range n.pick(nemesisNodes, nemesisNodes) { // rolling
			n.restartNodes([]int{i})
			n.sleep(n.between(500*time.Millisecond, 3*time.Second))
		}
		if n.rng.IntN(2) == 0 { // then a replica restarted to catch up
			p := n.replicas[n.rng.IntN(nemesisReplicas)]
			n.stopReplica(p, syscall.SIGKILL)
			n.startReplica(p, true)
		}
	case 8:
		n.links("latency")
	case 9:
		n.links("cut")
	case 10:
		n.pauseReplica()
	case 11:
		p := n.replicas[n.rng.IntN(nemesisReplicas)]
		n.stopReplica(p, syscall.SIGKILL)
		n.sleep(n.between(500*time.Millisecond, 2*time.Second))
		n.startReplica(p, n.rng.IntN(2) == 0)
	case 12:
		for _, r := range n.pick(nemesisReplicas, nemesisReplicas) { // rolling
			p := n.replicas[r]
			n.stopReplica(p, []syscall.Signal{syscall.SIGTERM, syscall.SIGKILL}[n.rng.IntN(2)])
			n.startReplica(p, n.rng.IntN(2) == 0)
			n.sleep(n.between(time.Second, 2*time.Second))
		}
	case 13:
		n.stepClock()
	case 14:
		n.corrupt()
	}
}

// calm waits between faults: briefly, or at times long enough for the
// nodes' quarantine and a tick's grace, so that calm stretches are checked.
func (n *nemesis) calm() {
	if n.rng.IntN(4) == 0 {
		n.sleep(nemesisMaxTTL + nemesisGrace + 7*time.Second)
		return
	}
	n.sleep(n.between(300*time.Millisecond, 2*time.Second))
}

// downNodes kills or pauses k nodes for a while, then restarts (empty) or
// resumes them.
func (n *nemesis) downNodes(kind string, k int) {
	nodes := n.pick(nemesisNodes, k)
	from := time.Now()
	for _, i := range nodes {
		if kind == "node-down" {
			n.cluster.Node(i).Kill()
		} else {
			n.cluster.Node(i).Pause()
		}
	}
	n.sleep(n.between(time.Second, 4*time.Second))
	for _, i := range nodes {
		if kind == "node-down" {
			n.world.starts[i] = append(n.world.starts[i], time.Now())
			n.cluster.Node(i).Restart()
		} else {
			n.cluster.Node(i).Resume()
		}
		n.world.faults = append(n.world.faults, fault{Kind: kind, Node: i, Replica: -1, From: from, To: time.Now()})
	}
}

// restartNodes restarts nodes empty, at once.
func (n *nemesis) restartNodes(nodes []int) {
	for _, i := range nodes {
		at := time.Now()
		n.world.starts[i] = append(n.world.starts[i], at)
		n.cluster.Node(i).Restart()
		n.world.faults = append(n.world.faults, fault{Kind: "node-restart", Node: i, Replica: -1, From: at, To: time.Now()})
	}
}

// links slows or cuts one replica's connections to some nodes for a while.
func (n *nemesis) links(kind string) {
	r := n.rng.IntN(nemesisReplicas)
	nodes := n.pick(nemesisNodes, 1+n.rng.IntN(nemesisNodes))
	latency := n.between(20*time.Millisecond, 300*time.Millisecond)
	from := time.Now()
	for _, i := range nodes {
		if kind == "cut" {
			n.proxies[r][i].Cut()
		} else {
			n.proxies[r][i].SetLatency(latency)
		}
	}
	n.sleep(n.between(time.Second, 5*time.Second))
	for _, i := range nodes {
		if kind == "cut" {
			n.proxies[r][i].Heal()
		} else {
			n.proxies[r][i].SetLatency(0)
		}
		n.world.faults = append(n.world.faults, fault{Kind: kind, Node: i, Replica: r, From: from, To: time.Now()})
	}
}

// pauseReplica stops a replica process (SIGSTOP) past its leases' TTL.
func (n *nemesis) pauseReplica() {
	p := n.replicas[n.rng.IntN(nemesisReplicas)]
	from := time.Now()
	_ = p.cmd.Process.Signal(syscall.SIGSTOP)
	n.sleep(nemesisLockTTL + n.between(500*time.Millisecond, 2*time.Second))
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	n.world.faults = append(n.world.faults, fault{Kind: "replica-pause", Node: -1, Replica: p.idx, From: from, To: time.Now()})
}

// stepClock steps one replica's scheduler clock to an offset within a
// second of the true time, forward or back: replicas stay within the 2 s
// skew margin of one another.
func (n *nemesis) stepClock() {
	p := n.replicas[n.rng.IntN(nemesisReplicas)]
	p.offset = n.between(-time.Second, time.Second)
	fmt.Fprintf(p.stdin, "offset %v\n", p.offset)
	now := time.Now()
	n.world.faults = append(n.world.faults, fault{Kind: "clock", Node: -1, Replica: p.idx, From: now, To: now})
}

// corrupt writes a foreign value at one job's lock key, or a mark that is
// not a number in its state, on one node, and puts the state back after a
// while (a lock key's junk expires with its TTL).
func (n *nemesis) corrupt() {
	ctx := context.Background()
	i := n.rng.IntN(nemesisNodes)
	job := []string{"short", "long"}[n.rng.IntN(2)]
	c := n.cluster.Node(i).Client(n.t)
	keys, err := engine.NewKeyspace("")
	if err != nil {
		n.t.Error(err)
		return
	}
	k, err := keys.Lock(job)
	if err != nil {
		n.t.Error(err)
		return
	}
	from := time.Now()
	if n.rng.IntN(2) == 0 {
		_ = c.Set(ctx, k.Lock, "junk", nemesisLockTTL).Err()
		n.sleep(nemesisLockTTL)
	} else {
		old, _ := c.HGet(ctx, k.State, k.MarkField()).Result()
		_ = c.HSet(ctx, k.State, k.MarkField(), "garbage").Err()
		n.sleep(n.between(time.Second, 4*time.Second))
		if old == "" {
			old = "0"
		}
		_ = c.HSet(ctx, k.State, k.MarkField(), old).Err() // as a node that missed the commits meanwhile
	}
	n.world.faults = append(n.world.faults, fault{Kind: "corrupt", Node: i, Replica: -1, From: from, To: time.Now()})
}

// healAll ends what may still be in force: nothing, as every fault heals
// itself, except the clocks, which are set right.
func (n *nemesis) healAll() {
	for _, p := range n.replicas {
		if p.offset != 0 {
			p.offset = 0
			fmt.Fprintf(p.stdin, "offset 0s\n")
		}
	}
}

// startReplica starts a new process for replica p.
func (n *nemesis) startReplica(p *replicaProc, catchUp bool) {
	t := n.t
	p.n++
	p.name = fmt.Sprintf("replica-%d.%d", p.idx, p.n)
	cfg := replicaConfig{ID: fmt.Sprintf("replica-%d", p.idx), Store: n.storeSrv.Addr(),
		History: filepath.Join(n.dir, p.name+".jsonl"), MaxTTL: nemesisMaxTTL, LockTTL: nemesisLockTTL,
		Grace: nemesisGrace, LockAhead: n.lead, Offset: p.offset, FrontDoor: n.front, Bulk: n.world.bulk, Limited: n.limited}
	if catchUp {
		cfg.CatchUp = nemesisCatchUp
	}
	if !n.once.IsZero() {
		cfg.Once = n.once.UTC().Format(time.RFC3339)
	}
	for i, s := range n.cluster.Nodes() {
		cfg.Nodes = append(cfg.Nodes, n.proxies[p.idx][i].Addr())
		cfg.Names = append(cfg.Names, s.ServerAddr())
	}
	raw, _ := json.Marshal(cfg)
	logf, err := os.Create(filepath.Join(n.dir, p.name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(n.exe, "-test.run=^$")
	p.cmd.Env = append(os.Environ(), nemesisEnv+"="+string(raw))
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	n.world.procs[p.name] = proc{replica: p.idx, start: time.Now()}
}

// stopReplica ends replica p's process with sig (SIGTERM: a graceful
// shutdown, bounded by 10 s) and waits for it.
func (n *nemesis) stopReplica(p *replicaProc, sig syscall.Signal) {
	if p.cmd == nil {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(sig)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
	pr := n.world.procs[p.name]
	pr.stop = time.Now()
	n.world.procs[p.name] = pr
	n.world.faults = append(n.world.faults, fault{Kind: "replica-down", Node: -1, Replica: p.idx, From: pr.stop, To: pr.stop})
	p.cmd = nil
}

// killReplica kills p's process, if it runs, at the end of the test.
func (n *nemesis) killReplica(p *replicaProc) {
	if p.cmd != nil {
		n.stopReplica(p, syscall.SIGKILL)
	}
}

// histories reads every replica process's history.
func (n *nemesis) histories() historyOf {
	h := historyOf{}
	for name := range n.world.procs {
		f, err := os.Open(filepath.Join(n.dir, name+".jsonl"))
		if err != nil {
			continue // it died before writing anything
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var r record
			if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
				h[name] = append(h[name], r)
			}
		}
		f.Close()
	}
	return h
}

// pick returns k distinct numbers below n, in random order.
func (n *nemesis) pick(of, k int) []int {
	return n.rng.Perm(of)[:k]
}

// between returns a random duration in [lo, hi).
func (n *nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)))
}

// sleep lets the fleet run for d: the nemesis acts on wall time.
func (n *nemesis) sleep(d time.Duration) {
	<-time.After(d)
}

// tally counts the history's runs by job and its skips by reason.
func tally(h historyOf) string {
	counts := map[string]int{}
	for _, recs := range h {
		for _, r := range recs {
			switch r.Ev {
			case "start":
				job := r.Job
				if strings.HasPrefix(job, "bulk-") {
					job = "bulk"
				}
				counts[job+" runs"]++
			case "skip":
				counts["skipped "+r.Reason]++
			case "write":
				if !r.OK {
					counts["writes refused"]++
				}
			}
		}
	}
	keys := slices.Sorted(maps.Keys(counts))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, counts[k])
	}
	return strings.Join(parts, ", ")
}

// startReplicas starts the nemesis's replica processes, each behind a
// proxy of its own to every node, and kills them at the test's end.
func (n *nemesis) startReplicas() {
	t := n.t
	for r := range nemesisReplicas {
		var ps []*redistest.Proxy
		for _, s := range n.cluster.Nodes() {
			ps = append(ps, s.NewProxy(t))
		}
		n.proxies = append(n.proxies, ps)
		n.replicas = append(n.replicas, &replicaProc{idx: r})
		n.startReplica(n.replicas[r], false)
	}
	t.Cleanup(func() {
		for _, p := range n.replicas {
			n.killReplica(p)
		}
	})
}
