package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
	"github.com/redis/go-redis/v9"
)

// The JSON document as a script sees it: decoded into its own types, so
// that the test checks the documented schema, not report.go's structs.
type (
	docReport struct {
		Prefix     string         `json:"prefix"`
		Nodes      int            `json:"nodes"`
		Quorum     int            `json:"quorum"`
		Scanned    int            `json:"scanned"`
		LiveOwners []string       `json:"live_owners"`
		NodeErrors []docNodeError `json:"node_errors"`
		Leaks      []docLeak      `json:"leaks"`
		Counts     map[string]int `json:"counts"`
		Fixed      []docFix       `json:"fixed"`
	}
	docNodeError struct {
		Node  string `json:"node"`
		Error string `json:"error"`
	}
	docLeak struct {
		Name    string    `json:"name"`
		Kind    string    `json:"kind"`
		Classes []string  `json:"classes"`
		Copies  []docCopy `json:"copies"`
	}
	docCopy struct {
		Node     string   `json:"node"`
		Key      string   `json:"key"`
		Type     string   `json:"type"`
		TTLms    int64    `json:"ttl_ms"`
		Owner    string   `json:"owner"`
		Acquired *string  `json:"acquired"`
		Classes  []string `json:"classes"`
	}
	docFix struct {
		Node    string `json:"node"`
		Key     string `json:"key"`
		Deleted bool   `json:"deleted"`
		Reason  string `json:"reason"`
		Error   string `json:"error"`
	}
)

// buildCommand builds the command into the test's temporary directory
// with the go command from PATH, and returns the binary's path.
func buildCommand(t *testing.T) string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("go not on PATH: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "redcronctl")
	cmd := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// outcome is one run of the command.
type outcome struct {
	args           []string
	stdout, stderr string
	code           int
}

func (o outcome) String() string {
	return "redcronctl " + strings.Join(o.args, " ") + " → exit " + strconv.Itoa(o.code) +
		"\n--- stdout ---\n" + o.stdout + "--- stderr ---\n" + o.stderr
}

// exe runs the binary with args and the test process's environment minus
// every REDCRON_ variable, plus env ("NAME=value").
func exe(t *testing.T, bin string, env []string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDCRON_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	o := outcome{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		o.code = ee.ExitCode()
	default:
		t.Fatalf("running %s: %v\n%s", bin, err, o)
	}
	return o
}

// decode parses a run's stdout as the JSON document.
func decode(t *testing.T, o outcome) docReport {
	t.Helper()
	var doc docReport
	dec := json.NewDecoder(strings.NewReader(o.stdout))
	dec.DisallowUnknownFields() // the test's types must cover the whole schema
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("decoding the JSON document: %v\n%s", err, o)
	}
	return doc
}

// tableRow is one row of the human table, split into its cells.
type tableRow struct {
	name, kind, classes, seen, nodes, ttl, owner, age string
}

// tableRows parses the table at the start of stdout: a header, then
// "NAME KIND CLASSES n/N: nodes TTL OWNER AGE" (names without spaces).
func tableRows(t *testing.T, o outcome) map[string]tableRow {
	t.Helper()
	lines := strings.Split(o.stdout, "\n")
	if !strings.HasPrefix(lines[0], "NAME ") {
		t.Fatalf("no table header:\n%s", o)
	}
	rows := map[string]tableRow{}
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != 8 || !strings.HasSuffix(f[3], ":") {
			break // the summary line
		}
		rows[f[0]] = tableRow{name: f[0], kind: f[1], classes: f[2], seen: strings.TrimSuffix(f[3], ":"),
			nodes: f[4], ttl: f[5], owner: f[6], age: f[7]}
	}
	return rows
}

// nodesOf returns a store.Node per server, over the given clients.
func nodesOf(t *testing.T, c *redistest.Cluster, clients []*redis.Client) []*store.Node {
	t.Helper()
	var nodes []*store.Node
	for i, s := range c.Nodes() {
		n, err := store.NewNode(s.Addr(), clients[i])
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	return nodes
}

func clientsOf(t *testing.T, c *redistest.Cluster) []*redis.Client {
	var out []*redis.Client
	for _, s := range c.Nodes() {
		out = append(out, s.Client(t))
	}
	return out
}

// lockValue is a lock value as the library writes it.
func lockValue(owner string, age time.Duration) string {
	return engine.Value{Token: engine.NewToken(), Acquired: time.Now().Add(-age), Owner: owner}.String()
}

// plant sets key to v with ttl (0: none) through each of clients.
func plant(t *testing.T, clients []*redis.Client, key, v string, ttl time.Duration) {
	t.Helper()
	for _, c := range clients {
		if err := c.Set(context.Background(), key, v, ttl).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// plantEveryClass plants one leak of each class: forever (no_expiry),
// abandoned (orphaned), leftover (minority, on the second node only),
// ancient (over_age with -max-age 1h) and junk (unparseable).
func plantEveryClass(t *testing.T, clients []*redis.Client) {
	t.Helper()
	plant(t, clients, lockKeys(t, "", "forever").Lock, lockValue("live", time.Minute), 0)
	plant(t, clients, lockKeys(t, "", "abandoned").Lock, lockValue("dead", time.Minute), time.Minute)
	plant(t, clients[1:2], lockKeys(t, "", "leftover").Lock, lockValue("live", time.Minute), time.Minute)
	plant(t, clients, lockKeys(t, "", "ancient").Lock, lockValue("live", 3*time.Hour), time.Minute)
	plant(t, clients, lockKeys(t, "", "junk").Lock, "garbage", time.Minute)
}

// plantedKeys returns the keys plantEveryClass sets.
func plantedKeys(t *testing.T) []string {
	t.Helper()
	var keys []string
	for _, name := range []string{"forever", "abandoned", "leftover", "ancient", "junk"} {
		keys = append(keys, lockKeys(t, "", name).Lock)
	}
	return keys
}

// lockKeys returns the keys of the lock called name under prefix ("" for
// the default).
func lockKeys(t *testing.T, prefix, name string) engine.LockKeys {
	t.Helper()
	ks, err := engine.NewKeyspace(prefix)
	if err != nil {
		t.Fatal(err)
	}
	k, err := ks.Lock(name)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// TestEndToEnd builds the command, plants one leak of each class next to
// a live lock on three real redis-servers, and runs the binary: the table,
// the JSON document, -fix, and a clean scan afterwards.
func TestEndToEnd(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	clients := clientsOf(t, c)
	ctx := context.Background()
	// The servers are fresh: trusted, or they would not vote for a minute.
	locks, err := mutex.New(nodesOf(t, c, clients), mutex.WithTrustedNodes())
	if err != nil {
		t.Fatal(err)
	}
	for _, cl := range clients { // the live owner's heartbeat
		if err := cl.Set(ctx, "redcron:hb:live", time.Now().UnixMilli(), time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	live, err := locks.TryLock(ctx, "live-job", time.Minute, mutex.Owner("live"))
	if err != nil {
		t.Fatal(err)
	}
	plantEveryClass(t, clients)
	addrs := strings.Join(c.Addrs(), ",")
	wantClasses := map[string]string{
		"forever":   "no_expiry",
		"abandoned": "orphaned",
		"leftover":  "minority",
		"ancient":   "over_age",
		"junk":      "unparseable",
	}

	// The table.
	o := exe(t, bin, nil, "-addrs", addrs, "-max-age", "1h")
	if o.code != 1 {
		t.Fatalf("want exit 1 with leaks:\n%s", o)
	}
	rows := tableRows(t, o)
	for name, class := range wantClasses {
		r, ok := rows[name]
		switch {
		case !ok:
			t.Errorf("%s is not in the table:\n%s", name, o)
		case r.classes != class || r.kind != "lock":
			t.Errorf("%s: kind %s, classes %s; want lock, %s", name, r.kind, r.classes, class)
		}
	}
	if len(rows) != len(wantClasses) {
		t.Errorf("table has %d rows, want %d:\n%s", len(rows), len(wantClasses), o)
	}
	if strings.Contains(o.stdout, "live-job") {
		t.Errorf("the live lock is in the table:\n%s", o)
	}
	if r := rows["leftover"]; r.seen != "1/3" || r.nodes != c.Node(1).Addr() || r.owner != "live" || !strings.HasPrefix(r.age, "1m") {
		t.Errorf("leftover row %+v, want seen 1/3 on %s, owner live, age 1m", r, c.Node(1).Addr())
	}
	if r := rows["forever"]; r.ttl != "none" || r.seen != "3/3" || r.nodes != addrs {
		t.Errorf("forever row %+v, want TTL none on 3/3: %s", r, addrs)
	}
	if r := rows["ancient"]; r.age != "3h0m" || r.ttl == "none" || !strings.HasSuffix(r.ttl, "s") {
		t.Errorf("ancient row %+v, want age 3h0m and a TTL under a minute", r)
	}
	if r := rows["junk"]; r.owner != "-" || r.age != "-" {
		t.Errorf("junk row %+v, want no owner and no age", r)
	}
	if r := rows["abandoned"]; r.owner != "dead" {
		t.Errorf("abandoned row %+v, want owner dead", r)
	}
	for _, want := range []string{"on 3/3 nodes (0 failed)", "5 leaked (no_expiry=1 orphaned=1 minority=1 over_age=1 unparseable=1)", "live owners: 1"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, o)
		}
	}
	if o.stderr != "" {
		t.Errorf("unexpected stderr:\n%s", o)
	}

	// The JSON document, with the addresses from the environment.
	o = exe(t, bin, []string{"REDCRON_ADDRS=" + addrs}, "-json", "-max-age", "1h")
	if o.code != 1 {
		t.Fatalf("want exit 1 with leaks:\n%s", o)
	}
	if strings.Contains(o.stdout, `"fixed"`) {
		t.Errorf(`"fixed" present without -fix:\n%s`, o)
	}
	doc := decode(t, o)
	if doc.Prefix != "redcron" || doc.Nodes != 3 || doc.Quorum != 2 || doc.Scanned == 0 ||
		!slices.Equal(doc.LiveOwners, []string{"live"}) || doc.NodeErrors == nil || len(doc.NodeErrors) != 0 {
		t.Errorf("header: prefix %q nodes %d quorum %d scanned %d live %v errors %v", doc.Prefix, doc.Nodes,
			doc.Quorum, doc.Scanned, doc.LiveOwners, doc.NodeErrors)
	}
	wantCounts := map[string]int{"no_expiry": 1, "orphaned": 1, "minority": 1, "over_age": 1, "unparseable": 1}
	if !mapsEqual(doc.Counts, wantCounts) {
		t.Errorf("counts %v, want %v", doc.Counts, wantCounts)
	}
	var names []string
	for _, l := range doc.Leaks {
		names = append(names, l.Name)
		if class, ok := wantClasses[l.Name]; !ok || !slices.Equal(l.Classes, []string{class}) || l.Kind != "lock" {
			t.Errorf("leak %s: kind %s, classes %v; want lock, [%s]", l.Name, l.Kind, l.Classes, class)
		}
		wantCopies := 3
		if l.Name == "leftover" {
			wantCopies = 1
		}
		if len(l.Copies) != wantCopies {
			t.Errorf("leak %s: %d copies, want %d", l.Name, len(l.Copies), wantCopies)
		}
		if wantCopies == 3 {
			for i, cp := range l.Copies {
				if cp.Node != c.Node(i).Addr() {
					t.Errorf("leak %s: copy %d on %s, want the -addrs order %v", l.Name, i, cp.Node, c.Addrs())
				}
			}
		}
		for _, cp := range l.Copies {
			if cp.Type != "string" || cp.Key != lockKeys(t, "", l.Name).Lock || !slices.Contains(c.Addrs(), cp.Node) {
				t.Errorf("leak %s: copy %+v", l.Name, cp)
			}
			// Each leak here has one value, on every copy: the copies'
			// classes are the leak's.
			if !slices.Equal(cp.Classes, l.Classes) {
				t.Errorf("leak %s: copy on %s has classes %v, want the leak's %v", l.Name, cp.Node, cp.Classes, l.Classes)
			}
			switch l.Name {
			case "forever":
				if cp.TTLms != -1 {
					t.Errorf("forever on %s: ttl_ms %d, want -1", cp.Node, cp.TTLms)
				}
			default:
				if cp.TTLms <= 0 || cp.TTLms > 60000 {
					t.Errorf("%s on %s: ttl_ms %d, want in (0, 60000]", l.Name, cp.Node, cp.TTLms)
				}
			}
			if l.Name == "junk" {
				if cp.Acquired != nil || cp.Owner != "" {
					t.Errorf("junk on %s: owner %q, acquired %v; want none", cp.Node, cp.Owner, cp.Acquired != nil)
				}
				continue
			}
			if cp.Acquired == nil {
				t.Errorf("%s on %s: no acquisition time", l.Name, cp.Node)
				continue
			}
			at, err := time.Parse(time.RFC3339, *cp.Acquired)
			wantAge := time.Minute
			if l.Name == "ancient" {
				wantAge = 3 * time.Hour
			}
			if age := time.Since(at); err != nil || age < wantAge || age > wantAge+time.Minute {
				t.Errorf("%s on %s: acquired %q (%v), want about %v ago", l.Name, cp.Node, *cp.Acquired, err, wantAge)
			}
		}
	}
	if want := []string{"abandoned", "ancient", "forever", "junk", "leftover"}; !slices.Equal(names, want) {
		t.Errorf("leaks %v, want %v in this order", names, want)
	}

	// -fix: deletes every copy of every leak, reports what it found.
	o = exe(t, bin, nil, "-addrs", addrs, "-max-age", "1h", "-fix")
	if o.code != 1 {
		t.Fatalf("want exit 1 after fixing leaks:\n%s", o)
	}
	if len(tableRows(t, o)) != 5 || !strings.Contains(o.stdout, "fix: deleted 13 copies, left 0 alone") {
		t.Errorf("fix report:\n%s", o)
	}
	for _, key := range plantedKeys(t) {
		if !strings.Contains(o.stdout, key) {
			t.Errorf("fix report does not list %s:\n%s", key, o)
		}
		for i, cl := range clients {
			n, err := cl.Exists(ctx, key).Result()
			if err != nil {
				t.Fatalf("EXISTS %s on node %d: %v", key, i, err)
			}
			if n != 0 {
				t.Errorf("%s still on node %d after -fix", key, i)
			}
		}
	}
	for i, cl := range clients {
		if v, err := cl.Get(ctx, lockKeys(t, "", "live-job").Lock).Result(); err != nil || v != live.Value() {
			t.Errorf("live lock on node %d: %q, %v; want its value untouched", i, v, err)
		}
	}
	if err := live.Extend(ctx); err != nil {
		t.Errorf("the live lock cannot be extended after -fix: %v", err)
	}

	// A new scan is clean.
	o = exe(t, bin, nil, "-addrs", addrs, "-max-age", "1h")
	if o.code != 0 || !strings.HasPrefix(o.stdout, `no leaks under prefix "redcron"`) || !strings.Contains(o.stdout, "0 leaked;") {
		t.Errorf("want a clean scan after -fix:\n%s", o)
	}
	o = exe(t, bin, nil, "-addrs", addrs, "-json", "-fix")
	doc = decode(t, o)
	if o.code != 0 || len(doc.Leaks) != 0 || doc.Fixed == nil || len(doc.Fixed) != 0 {
		t.Errorf("want a clean JSON scan with an empty fixed list:\n%s", o)
	}
	for class, n := range doc.Counts {
		if n != 0 {
			t.Errorf("count of %s after -fix: %d", class, n)
		}
	}
	if len(doc.Counts) != 5 {
		t.Errorf("counts %v: want every class", doc.Counts)
	}
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestFixLeavesHashesAlone: a state hash without a TTL is a leak that
// compare-and-delete cannot remove; -fix says so, and it stays reported.
func TestFixLeavesHashesAlone(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	clients := clientsOf(t, c)
	ctx := context.Background()
	stuck := lockKeys(t, "", "stuck")
	for _, cl := range clients[:2] {
		if err := cl.HSet(ctx, stuck.State, stuck.FenceField(), 7).Err(); err != nil {
			t.Fatal(err)
		}
	}
	addrs := strings.Join(c.Addrs(), ",")

	o := exe(t, bin, nil, "-addrs", addrs, "-json", "-fix")
	doc := decode(t, o)
	if o.code != 1 || len(doc.Leaks) != 1 || doc.Leaks[0].Kind != "state" || !slices.Equal(doc.Leaks[0].Classes, []string{"no_expiry"}) {
		t.Fatalf("want the state hash as a no_expiry leak:\n%s", o)
	}
	if len(doc.Fixed) != 2 {
		t.Fatalf("fixed %+v, want one entry per copy", doc.Fixed)
	}
	for _, f := range doc.Fixed {
		if f.Deleted || f.Reason != "not_string" || f.Error != "" || f.Key != stuck.State {
			t.Errorf("fixed %+v, want left alone as not_string", f)
		}
	}
	o = exe(t, bin, nil, "-addrs", addrs, "-fix")
	if o.code != 1 || !strings.Contains(o.stdout, "fix: deleted 0 copies, left 2 alone") ||
		!strings.Contains(o.stdout, "left alone: not a string, cannot compare-and-delete") {
		t.Errorf("human fix report:\n%s", o)
	}
	for i, cl := range clients[:2] {
		n, err := cl.Exists(ctx, stuck.State).Result()
		if err != nil {
			t.Fatalf("EXISTS on node %d: %v", i, err)
		}
		if n != 1 {
			t.Errorf("the state hash was deleted on node %d", i)
		}
	}
}

// TestExitStatus2: usage errors and unreachable nodes exit with 2; a
// partial scan exits with 1 if it found leaks, 2 if not.
func TestExitStatus2(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)

	o := exe(t, bin, nil)
	if o.code != 2 || !strings.Contains(o.stderr, "-addrs is required") || o.stdout != "" {
		t.Errorf("want exit 2 naming -addrs without addresses:\n%s", o)
	}
	o = exe(t, bin, nil, "-addrs", "127.0.0.1:1", "-max-age", "soon")
	if o.code != 2 || !strings.Contains(o.stderr, `invalid value "soon" for flag -max-age`) {
		t.Errorf("want exit 2 naming -max-age:\n%s", o)
	}

	c := redistest.Start(t, 3)
	clients := clientsOf(t, c)
	addrs := strings.Join(c.Addrs(), ",")

	// One node down, nothing leaked on the others: incomplete, exit 2.
	c.Node(2).Kill()
	o = exe(t, bin, nil, "-addrs", addrs, "-json")
	doc := decode(t, o)
	if o.code != 2 || len(doc.NodeErrors) != 1 || doc.NodeErrors[0].Node != c.Node(2).Addr() ||
		!strings.Contains(o.stderr, "node "+c.Node(2).Addr()+" not scanned") || !strings.Contains(o.stderr, "the scan is incomplete") {
		t.Errorf("want exit 2 and the dead node reported:\n%s", o)
	}
	// One node down, a leak on the others: exit 1, the dead node on stderr.
	plant(t, clients[:2], lockKeys(t, "", "forever").Lock, lockValue("x", time.Minute), 0)
	o = exe(t, bin, nil, "-addrs", addrs)
	if o.code != 1 || !strings.Contains(o.stdout, "2/3 nodes (1 failed)") || !strings.Contains(o.stderr, c.Node(2).Addr()) {
		t.Errorf("want exit 1 with the leak and the dead node reported:\n%s", o)
	}

	// Every node down.
	c.Node(0).Kill()
	c.Node(1).Kill()
	for _, args := range [][]string{{"-addrs", addrs}, {"-addrs", addrs, "-json", "-fix"}} {
		o = exe(t, bin, nil, args...)
		if o.code != 2 || o.stdout != "" || !strings.Contains(o.stderr, "no node could be scanned") {
			t.Errorf("want exit 2 with every node down:\n%s", o)
		}
		for _, s := range c.Nodes() {
			if !strings.Contains(o.stderr, "node "+s.Addr()+" not scanned") {
				t.Errorf("stderr does not name %s:\n%s", s.Addr(), o)
			}
		}
	}
}

// TestPasswordNeverPrinted runs the command against servers that need a
// password, given through the environment (and once as a flag), and
// checks that no output ever contains it, also when it is wrong.
func TestPasswordNeverPrinted(t *testing.T) {
	t.Parallel()
	const (
		password     = "s3cret-Pa55"
		userPassword = "sc4nner-Pa55"
		wrong        = "wr0ng-Pa55"
	)
	bin := buildCommand(t)
	// redistest's readiness probe sends PING without AUTH, so the servers
	// cannot start with --requirepass; the password is set once they run.
	c := redistest.Start(t, 3)
	ctx := context.Background()
	var clients []*redis.Client
	for _, s := range c.Nodes() {
		admin := s.Client(t)
		if err := admin.ConfigSet(ctx, "requirepass", password).Err(); err != nil {
			t.Fatal(err)
		}
		if err := admin.Do(ctx, "ACL", "SETUSER", "scanner", "on", ">"+userPassword, "~redcron:*", "+@all").Err(); err != nil {
			t.Fatal(err)
		}
		cl := redis.NewClient(&redis.Options{Addr: s.Addr(), Password: password, MaxRetries: -1})
		t.Cleanup(func() { _ = cl.Close() })
		if err := cl.Ping(ctx).Err(); err != nil {
			t.Fatalf("authenticated PING: %v", err)
		}
		if err := s.Client(t).Ping(ctx).Err(); err == nil {
			t.Fatal("a client without the password was let in")
		}
		clients = append(clients, cl)
	}
	plantEveryClass(t, clients)
	addrs := strings.Join(c.Addrs(), ",")
	withPassword := []string{"REDCRON_PASSWORD=" + password}

	var all []outcome
	check := func(o outcome, code int, want string) {
		t.Helper()
		all = append(all, o)
		if o.code != code || !strings.Contains(o.stdout+o.stderr, want) {
			t.Errorf("want exit %d and %q:\n%s", code, want, o)
		}
	}
	check(exe(t, bin, nil, "-addrs", addrs), 2, "NOAUTH")
	check(exe(t, bin, []string{"REDCRON_PASSWORD=" + wrong}, "-addrs", addrs), 2, "WRONGPASS")
	check(exe(t, bin, []string{"REDCRON_USERNAME=scanner", "REDCRON_PASSWORD=" + password}, "-addrs", addrs), 2, "WRONGPASS")
	check(exe(t, bin, []string{"REDCRON_USERNAME=scanner", "REDCRON_PASSWORD=" + userPassword}, "-addrs", addrs, "-max-age", "1h"), 1, "over_age")
	check(exe(t, bin, withPassword, "-addrs", addrs, "-max-age", "1h", "-json"), 1, `"unparseable": 1`)
	check(exe(t, bin, withPassword, "-addrs", addrs, "-max-age", password), 2, `invalid value "[redacted]" for flag -max-age`)
	check(exe(t, bin, withPassword, "-addrs", addrs, password), 2, `unexpected argument "[redacted]"`)
	check(exe(t, bin, nil, "-addrs", addrs, "-password", password), 2, "comes from REDCRON_PASSWORD only")
	check(exe(t, bin, withPassword, "-addrs", addrs, "-max-age", "1h", "-fix"), 1, "fix: deleted 13 copies, left 0 alone")
	check(exe(t, bin, withPassword, "-addrs", addrs, "-max-age", "1h", "-json", "-fix"), 0, `"fixed": []`)
	for _, o := range all {
		for _, secret := range []string{password, userPassword, wrong} {
			if strings.Contains(o.stdout+o.stderr, secret) {
				t.Errorf("output contains the password %q:\n%s", secret, o)
			}
		}
	}
}

// TestTLS runs the command over TLS with a client certificate against
// servers that require one, and checks that verification is not skipped.
func TestTLS(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	dir := t.TempDir()
	pki := newPKI(t, dir)
	var (
		clients  []*redis.Client
		tlsAddrs []string
	)
	c := redistest.Start(t, 3, redistest.WithTLSPort(), redistest.WithArgs(
		"--tls-cert-file", pki.serverCert, "--tls-key-file", pki.serverKey,
		"--tls-ca-cert-file", pki.ca, "--tls-auth-clients", "yes"))
	for _, s := range c.Nodes() {
		clients = append(clients, s.Client(t))
		tlsAddrs = append(tlsAddrs, s.TLSAddr())
	}
	plant(t, clients, lockKeys(t, "", "forever").Lock, lockValue("", time.Minute), 0)
	addrs := strings.Join(tlsAddrs, ",")
	good := []string{"-addrs", addrs, "-tls", "-tls-ca", pki.ca, "-tls-cert", pki.clientCert, "-tls-key", pki.clientKey}

	o := exe(t, bin, nil, good...)
	if rows := tableRows(t, o); o.code != 1 || rows["forever"].classes != "no_expiry" || rows["forever"].seen != "3/3" {
		t.Errorf("want the leak found over TLS:\n%s", o)
	}
	o = exe(t, bin, nil, append(good, "-tls-server-name", "localhost")...)
	if o.code != 1 {
		t.Errorf("want the leak found over TLS with -tls-server-name localhost:\n%s", o)
	}
	for _, bad := range [][]string{
		{"-addrs", addrs, "-tls", "-tls-ca", pki.ca},                                      // no client certificate
		{"-addrs", addrs, "-tls", "-tls-cert", pki.clientCert, "-tls-key", pki.clientKey}, // unknown CA
		append(slices.Clone(good), "-tls-server-name", "redis.example"),                   // wrong name
		{"-addrs", addrs}, // plain TCP to a TLS port
		{"-addrs", addrs, "-tls", "-tls-ca", pki.ca, "-tls-cert", pki.serverCert, "-tls-key", pki.clientKey}, // mismatched pair
	} {
		if o := exe(t, bin, nil, bad...); o.code != 2 {
			t.Errorf("want exit 2:\n%s", o)
		}
	}
	o = exe(t, bin, nil, "-addrs", addrs, "-tls", "-tls-insecure-skip-verify", "-tls-cert", pki.clientCert, "-tls-key", pki.clientKey)
	if o.code != 1 {
		t.Errorf("want the leak found with -tls-insecure-skip-verify:\n%s", o)
	}
}

// pki is a test CA with a server certificate for 127.0.0.1 and localhost
// and a client certificate, as PEM files.
type pki struct {
	ca, serverCert, serverKey, clientCert, clientKey string
}

func newPKI(t *testing.T, dir string) pki {
	t.Helper()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return der
	}
	now := time.Now()
	caKey := newKey()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redcronctl test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	issue := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, *ecdsa.PrivateKey) {
		k := newKey()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, k
	}
	srvDER, srvKey := issue(2, "redis", x509.ExtKeyUsageServerAuth)
	cliDER, cliKey := issue(3, "redcronctl", x509.ExtKeyUsageClientAuth)
	return pki{
		ca:         write("ca.crt", "CERTIFICATE", caDER),
		serverCert: write("server.crt", "CERTIFICATE", srvDER),
		serverKey:  write("server.key", "PRIVATE KEY", keyDER(srvKey)),
		clientCert: write("client.crt", "CERTIFICATE", cliDER),
		clientKey:  write("client.key", "PRIVATE KEY", keyDER(cliKey)),
	}
}

// TestUsageErrors calls run in-process: every bad flag exits with 2 and a
// message naming it, before any connection is made.
func TestUsageErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	notPEM := filepath.Join(dir, "not.pem")
	if err := os.WriteFile(notPEM, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{nil, nil, "-addrs is required (or set REDCRON_ADDRS)"},
		{[]string{"-addrs", " , "}, nil, "-addrs: empty address"},
		{nil, map[string]string{"REDCRON_ADDRS": "redis-a"}, `REDCRON_ADDRS: "redis-a": address redis-a: missing port in address`},
		{[]string{"-addrs", "a:1,b:2,a:1"}, nil, "-addrs: a:1 appears twice"},
		{[]string{"-addrs", ":6379"}, nil, `-addrs: ":6379": want host:port`},
		{[]string{"-addrs", "a:1,ops:pw-in-addr@b:1"}, nil, `-addrs: an address holds "@": want host:port, the password in REDCRON_PASSWORD`},
		{[]string{"-addrs", "a:1", "-prefix", "red cron"}, nil, "-prefix: redcron: key prefix"},
		{[]string{"-addrs", "a:1", "-prefix", ""}, nil, "-prefix: empty"},
		{[]string{"-addrs", "a:1", "-max-age", "-1h"}, nil, "-max-age: -1h0m0s is negative"},
		{[]string{"-addrs", "a:1", "-timeout", "0s"}, nil, "-timeout: 0s: must be positive"},
		{[]string{"-addrs", "a:1", "-timeout", "x"}, nil, `invalid value "x" for flag -timeout`},
		{[]string{"-addrs", "a:1", "-tls-ca", notPEM}, nil, "-tls-ca needs -tls"},
		{[]string{"-addrs", "a:1", "-tls-insecure-skip-verify"}, nil, "-tls-insecure-skip-verify needs -tls"},
		{[]string{"-addrs", "a:1", "-tls", "-tls-ca", notPEM}, nil, "-tls-ca: " + notPEM + ": no PEM certificate found"},
		{[]string{"-addrs", "a:1", "-tls", "-tls-ca", filepath.Join(dir, "missing")}, nil, "-tls-ca: open "},
		{[]string{"-addrs", "a:1", "-tls", "-tls-cert", notPEM}, nil, "-tls-cert needs -tls-key"},
		{[]string{"-addrs", "a:1", "-tls", "-tls-key", notPEM}, nil, "-tls-key needs -tls-cert"},
		{[]string{"-addrs", "a:1", "-tls", "-tls-cert", notPEM, "-tls-key", notPEM}, nil, "-tls-cert/-tls-key: "},
		{[]string{"-addrs", "a:1", "-bogus"}, nil, "flag provided but not defined: -bogus"},
		{[]string{"-addrs", "a:1", "extra"}, nil, `unexpected argument "extra"`},
	} {
		var stdout, stderr bytes.Buffer
		env := func(k string) string { return tc.env[k] }
		code := run(context.Background(), tc.args, env, &stdout, &stderr)
		if code != 2 || !strings.Contains(stderr.String(), tc.want) || stdout.Len() != 0 {
			t.Errorf("run %q (env %v): exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q", tc.args, tc.env,
				code, stdout.String(), stderr.String(), tc.want)
		}
	}
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, func(string) string { return "" }, &stdout, &stderr); code != 0 ||
		!strings.Contains(stderr.String(), "Usage: redcronctl -addrs") {
		t.Errorf("-h: exit %d, stderr:\n%s", code, stderr.String())
	}
}

// TestInProcess runs a scan in-process (the path tests and embedders use),
// with the addresses and prefix of a non-default keyspace.
func TestInProcess(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, 1)
	cl := c.Node(0).Client(t)
	plant(t, []*redis.Client{cl}, lockKeys(t, "billing", "nightly").Lock, lockValue("", time.Minute), 0)
	plant(t, []*redis.Client{cl}, lockKeys(t, "", "other-prefix").Lock, lockValue("", time.Minute), 0)
	env := func(k string) string { return map[string]string{"REDCRON_ADDRS": c.Node(0).Addr()}[k] }
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"-prefix", "billing", "-json"}, env, &stdout, &stderr)
	var doc docReport
	if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil || code != 1 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, stdout.String(), stderr.String())
	}
	if doc.Prefix != "billing" || doc.Nodes != 1 || doc.Quorum != 1 || len(doc.Leaks) != 1 || doc.Leaks[0].Name != "nightly" ||
		doc.Leaks[0].Copies[0].Owner != "" || doc.Leaks[0].Copies[0].TTLms != -1 {
		t.Errorf("document %+v, want only billing's nightly lock, no owner, no expiry", doc)
	}
}

// TestShort pins the compact durations of the table.
func TestShort(t *testing.T) {
	for d, want := range map[time.Duration]string{
		850 * time.Millisecond:                       "850ms",
		59*time.Second + 999*time.Millisecond:        "59s",
		12*time.Minute + 5*time.Second:               "12m5s",
		3*time.Hour + 2*time.Minute + 59*time.Second: "3h2m",
		100 * time.Hour:                              "4d4h",
		-2 * time.Second:                             "-2s",
	} {
		if got := short(d); got != want {
			t.Errorf("short(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestTimeout: a node that accepts connections but never answers (paused
// with SIGSTOP) costs no more than -timeout; the others are still scanned.
func TestTimeout(t *testing.T) {
	t.Parallel()
	bin := buildCommand(t)
	c := redistest.Start(t, 3)
	clients := clientsOf(t, c)
	plant(t, clients[1:], lockKeys(t, "", "forever").Lock, lockValue("", time.Minute), 0)
	c.Node(0).Pause()
	begin := time.Now()
	o := exe(t, bin, nil, "-addrs", strings.Join(c.Addrs(), ","), "-timeout", "500ms")
	took := time.Since(begin)
	if o.code != 1 || tableRows(t, o)["forever"].seen != "2/3" || !strings.Contains(o.stderr, "node "+c.Node(0).Addr()+" not scanned") {
		t.Errorf("want the leak on the live nodes and the paused node reported:\n%s", o)
	}
	// The clients' own read timeout is 2s: ending well before it shows that
	// -timeout bounds the run.
	if took > 1800*time.Millisecond {
		t.Errorf("the run took %v with -timeout 500ms", took)
	}
}
