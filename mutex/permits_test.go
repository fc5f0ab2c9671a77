package mutex_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redcron/redcron/internal/redistest"
	"github.com/redcron/redcron/mutex"
	"github.com/redcron/redcron/store"
)

// semaphoreChildEnv starts the test binary as a contender for a semaphore
// (semaphoreChild): "nodes|witness|permits|limit|rounds|hold", the nodes'
// addresses comma-separated; rounds 0: acquire once and hold until
// killed.
const semaphoreChildEnv = "REDCRON_SEMAPHORE_CHILD"

// semaphoreChild acquires a permit of the lock "sem" rounds times,
// holding each for hold: while it holds one, it counts itself in the
// witness server's "holders" (INCR after the acquisition, DECR before the
// release), and counts in "over" each time it saw more holders than
// limit (the permits, but to see the check fail), in "full" each time it
// saw exactly as many.
func semaphoreChild(spec string) int {
	f := strings.Split(spec, "|")
	permits, _ := strconv.Atoi(f[2])
	limit, _ := strconv.Atoi(f[3])
	rounds, _ := strconv.Atoi(f[4])
	hold, _ := time.ParseDuration(f[5])
	var nodes []*store.Node
	for _, addr := range strings.Split(f[0], ",") {
		n, err := store.NewNode(addr, redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1}))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		nodes = append(nodes, n)
	}
	locks, err := mutex.New(nodes, mutex.WithTrustedNodes(), mutex.WithRetryDelay(20*time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	w := redis.NewClient(&redis.Options{Addr: f[1]})
	ctx := context.Background()
	for i := 0; rounds == 0 || i < rounds; i++ {
		actx, cancel := context.WithTimeout(ctx, time.Minute)
		l, err := locks.Lock(actx, "sem", 5*time.Second, mutex.Permits(permits))
		cancel()
		if err != nil {
			fmt.Fprintln(os.Stderr, "acquire:", err)
			return 1
		}
		n := w.Incr(ctx, "holders").Val()
		switch {
		case n > int64(limit):
			w.Incr(ctx, "over")
		case n == int64(limit):
			w.Incr(ctx, "full")
		}
		if rounds == 0 { // hold until killed
			_, stop := l.KeepAlive(ctx)
			defer stop()
			w.RPush(ctx, "ready", os.Getpid())
			select {}
		}
		time.Sleep(hold)
		w.Decr(ctx, "holders")
		if err := l.Release(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
			return 1
		}
	}
	return 0
}

// startContender starts a contender process (semaphoreChild).
func startContender(t *testing.T, c *redistest.Cluster, witness string, permits, limit, rounds int, hold time.Duration) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|%s|%d|%d|%d|%v", semaphoreChildEnv, strings.Join(c.Addrs(), ","), witness, permits, limit, rounds, hold))
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd
}

// TestSemaphoreLimit: five processes contending for a semaphore of two
// permits never hold more than two at once, and do hold two at once.
func TestSemaphoreLimit(t *testing.T) {
	c := redistest.Start(t, 5)
	ws := redistest.Start(t, 1).Node(0)
	w := ws.Client(t)
	permits := 2
	if p := os.Getenv("REDCRON_SEMAPHORE_CHILD_PERMITS"); p != "" { // a broken limit, to see this test fail
		permits, _ = strconv.Atoi(p)
	}
	var cmds []*exec.Cmd
	for range 5 {
		cmds = append(cmds, startContender(t, c, ws.Addr(), permits, 2, 20, 15*time.Millisecond))
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("contender %d: %v", i, err)
		}
	}
	ctx := context.Background()
	over, _ := w.Get(ctx, "over").Int()
	full, _ := w.Get(ctx, "full").Int()
	if over > 0 {
		t.Errorf("more than 2 holders at once, %d times", over)
	}
	if full == 0 {
		t.Error("never 2 holders at once: the limit was not reached, so the test proves nothing")
	}
	t.Logf("2 holders at once %d times over 100 acquisitions", full)
}

// TestSemaphorePermitBack: of a semaphore of two permits, both held by
// processes, the permit of the one SIGKILLed comes back within its TTL
// (5 s), and not before the kill; the other's, kept alive, does not.
func TestSemaphorePermitBack(t *testing.T) {
	c := redistest.Start(t, 5)
	ws := redistest.Start(t, 1).Node(0)
	w := ws.Client(t)
	ctx := context.Background()
	a := startContender(t, c, ws.Addr(), 2, 2, 0, 0)
	startContender(t, c, ws.Addr(), 2, 2, 0, 0)
	for range 2 {
		if err := w.BLPop(ctx, time.Minute, "ready").Err(); err != nil {
			t.Fatal("contenders not ready:", err)
		}
	}
	locks := newRedlock(t, c, mutex.WithRetryDelay(20*time.Millisecond))
	if l, err := locks.TryLock(ctx, "sem", 5*time.Second, mutex.Permits(2)); !errors.Is(err, mutex.ErrHeld) {
		t.Fatalf("a third permit while both are held: %v, %v; want ErrHeld", l, err)
	}
	if err := a.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	actx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	l, err := locks.Lock(actx, "sem", 5*time.Second, mutex.Permits(2))
	if err != nil {
		t.Fatalf("the killed holder's permit did not come back: %v", err)
	}
	back := time.Since(killed)
	t.Logf("permit %q back %v after the kill", l.Name(), back)
	if back > 5*time.Second+time.Second {
		t.Errorf("permit back %v after the kill: beyond its TTL (5s) and a second", back)
	}
	if _, err := locks.TryLock(ctx, "sem", 5*time.Second, mutex.Permits(2)); !errors.Is(err, mutex.ErrHeld) {
		t.Errorf("a permit beyond the two held: %v; want ErrHeld (the live holder keeps its permit)", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Error(err)
	}
}

// TestSemaphoreBadInput: a count out of range, a name that makes a bad
// permit name, and an occurrence are refused, naming the lock.
func TestSemaphoreBadInput(t *testing.T) {
	r := newRedlock(t, redistest.Start(t, 1))
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts []mutex.LockOption
	}{
		{"sem", []mutex.LockOption{mutex.Permits(-1)}},
		{"sem", []mutex.LockOption{mutex.Permits(65)}},
		{strings.Repeat("x", 199), []mutex.LockOption{mutex.Permits(2)}},
		{"sem", []mutex.LockOption{mutex.Permits(2), mutex.Occurrence(time.Now())}},
	} {
		if _, err := r.TryLock(ctx, tc.name, 5*time.Second, tc.opts...); !errors.Is(err, mutex.ErrInvalidOption) || !strings.Contains(err.Error(), fmt.Sprintf("%q", tc.name)) {
			t.Errorf("TryLock(%.20q, %d options): %v; want ErrInvalidOption naming it", tc.name, len(tc.opts), err)
		}
		if _, err := r.Lock(ctx, tc.name, 5*time.Second, tc.opts...); !errors.Is(err, mutex.ErrInvalidOption) {
			t.Errorf("Lock(%.20q, %d options): %v; want ErrInvalidOption", tc.name, len(tc.opts), err)
		}
	}
}

// TestSemaphoreNoQuorum: with a majority of the nodes down, an acquisition
// is undecided (ErrNoQuorum), not held.
func TestSemaphoreNoQuorum(t *testing.T) {
	c := redistest.Start(t, 3)
	locks := newRedlock(t, c)
	c.Node(0).Kill()
	c.Node(1).Kill()
	_, err := locks.TryLock(context.Background(), "sem", 5*time.Second, mutex.Permits(2))
	if !errors.Is(err, mutex.ErrNoQuorum) || errors.Is(err, mutex.ErrHeld) {
		t.Errorf("no majority: %v; want ErrNoQuorum", err)
	}
}

// TestSemaphoreWokenByRelease: a Lock waiting for a permit of a lock whose
// permits are all held is woken by the release of one of them, not by its
// retry delay (a minute here: polling would not try again within the
// test's 20 s).
func TestSemaphoreWokenByRelease(t *testing.T) {
	c := redistest.Start(t, 3)
	holder := newRedlock(t, c)
	refused := make(chan struct{}, 10)
	waiter := newRedlock(t, c, mutex.WithRetryDelay(time.Minute), mutex.WithObserver(func(e mutex.Event) {
		if e.Op == "acquire" && errors.Is(e.Err, mutex.ErrHeld) {
			select {
			case refused <- struct{}{}:
			default:
			}
		}
	}))
	ctx := ctxTimeout(t, 20*time.Second)
	var held []*mutex.Lock
	for range 2 {
		l, err := holder.TryLock(ctx, "export", 10*time.Second, mutex.Permits(2))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, l)
	}
	got := make(chan error, 1)
	go func() {
		l, err := waiter.Lock(ctx, "export", 10*time.Second, mutex.Permits(2))
		if err == nil {
			err = l.Release(ctx)
		}
		got <- err
	}()
	// Released once the waiter's first try was refused; before or after
	// its subscription: either wakes it (the subscription's confirmation
	// makes it try again).
	select {
	case <-refused:
	case err := <-got:
		t.Fatalf("waiter returned before a release: %v", err)
	}
	if err := held[1].Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	_ = held[0].Release(ctx)
}

// TestSemaphoreLineOfItsOwn: the waiters for a lock's permits do not
// share a line with a plain lock's waiters, whatever its name: a plain
// Lock waiting for a held "export#-1" does not hold back a Lock of a free
// permit of "export" (first come, first served applies within a line).
func TestSemaphoreLineOfItsOwn(t *testing.T) {
	c := redistest.Start(t, 3)
	holder := newRedlock(t, c)
	ctx := ctxTimeout(t, 20*time.Second)
	busy, err := holder.TryLock(ctx, "export#-1", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Release(ctx)
	refused := make(chan struct{}, 1)
	plain, cancel := context.WithCancel(ctx)
	defer cancel()
	observed := newRedlock(t, c, mutex.WithObserver(func(e mutex.Event) {
		if e.Op == "acquire" && e.Name == "export#-1" && errors.Is(e.Err, mutex.ErrHeld) {
			select {
			case refused <- struct{}{}:
			default:
			}
		}
	}))
	go func() { _, _ = observed.Lock(plain, "export#-1", 10*time.Second) }() // waits until cancel
	<-refused
	// The same Redlock's permits waiter: a line of its own.
	short, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	p, err := observed.Lock(short, "export", 10*time.Second, mutex.Permits(2))
	if err != nil {
		t.Fatalf("a free permit, with a plain waiter for export#-1 in the same Redlock: %v", err)
	}
	_ = p.Release(ctx)
}
