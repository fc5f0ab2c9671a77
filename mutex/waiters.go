package mutex

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/redcron/redcron/internal/engine"
	"github.com/redis/go-redis/v9"
)

// waiter is one Lock call waiting for its lock (wait.go).
type waiter struct {
	keys engine.LockKeys
	// channels are the lock keys whose releases wake it: its lock's; for
	// a lock of permits, every permit's.
	channels []string
	id       string        // as the nodes compare waiters (waiterID)
	first    chan struct{} // closed once it is first in line: it tries
	wake     chan struct{} // a release (or a resubscription) since it last looked
	// turned says it tried as a waiter since its last acquisition, so
	// that it may hold the turn on some nodes: it takes it back when it
	// stops waiting. Used by its own goroutine only.
	turned bool
}

// waits is a Redlock's waiters: by lock name, first come, first served;
// and, while a name's first waiter waits, a subscription to its lock's
// channel on every node, which wakes it.
type waits struct {
	r     *Redlock
	mu    sync.Mutex
	lines map[string][]*waiter // by lock name
	names map[string]string    // the subscribed channels (lock keys), to their names
	subs  []*nodeSub           // by node, while some channel is subscribed there
}

func newWaits(r *Redlock) *waits {
	return &waits{r: r, lines: map[string][]*waiter{}, names: map[string]string{}, subs: make([]*nodeSub, len(r.nodes))}
}

// join adds a waiter for keys at the end of its name's line, woken by the
// releases of the locks whose keys are channels.
func (ws *waits) join(keys engine.LockKeys, channels []string) *waiter {
	w := &waiter{keys: keys, channels: channels, id: waiterID(time.Now()), first: make(chan struct{}), wake: make(chan struct{}, 1)}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	line := append(ws.lines[keys.Name], w)
	ws.lines[keys.Name] = line
	if len(line) == 1 {
		close(w.first)
	}
	return w
}

// leave removes w from its line: the next in line, if any, tries at once;
// with none, the name's channel is unsubscribed. A turn w may hold is
// taken back on the nodes, in the background (Flush waits for it).
func (ws *waits) leave(w *waiter) {
	name := w.keys.Name
	ws.mu.Lock()
	line := ws.lines[name]
	i := slices.Index(line, w)
	line = slices.Delete(line, i, i+1)
	switch {
	case len(line) == 0:
		delete(ws.lines, name)
		for _, ch := range w.channels {
			if ws.names[ch] == name { // not another line's
				delete(ws.names, ch)
				ws.want(ch, false)
			}
		}
	case i == 0:
		ws.lines[name] = line
		close(line[0].first)
	default:
		ws.lines[name] = line
	}
	ws.mu.Unlock()
	if w.turned {
		ws.r.takeBack(w)
	}
}

// subscribe subscribes w's channels on every node, but those subscribed
// already (by its line, or, for a channel two lines share, by the other:
// its notifications then wake that line's first waiter only; w tries
// again after its wait delay). The subscription's confirmation wakes the
// first waiter, as any later notification does.
func (ws *waits) subscribe(w *waiter) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	for _, ch := range w.channels {
		if _, ok := ws.names[ch]; !ok {
			ws.names[ch] = w.keys.Name
			ws.want(ch, true)
		}
	}
}

// want marks channel wanted (or not) on every node. Called with ws.mu
// held.
func (ws *waits) want(channel string, on bool) {
	for i, n := range ws.r.nodes {
		if ws.subs[i] == nil {
			if !on {
				continue
			}
			ws.subs[i] = newNodeSub(ws, i, n.Client())
		}
		ws.subs[i].set(channel, on)
	}
}

// notify wakes the first waiter of the lock whose channel is channel.
func (ws *waits) notify(channel string) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	line := ws.lines[ws.names[channel]]
	if len(line) == 0 {
		return
	}
	select {
	case line[0].wake <- struct{}{}:
	default:
	}
}

// subIdle is how long a node's subscription connection is kept without a
// channel to listen to.
const subIdle = 5 * time.Second

// nodeSub is a Redlock's subscription on one node: one connection
// (go-redis's PubSub, which reconnects and subscribes again by itself)
// for the channels of the locks waited for. A goroutine reads its
// messages and another sends its (un)subscriptions, one at a time, so
// that no waiter blocks on a node; both end once it has had no channel
// for subIdle.
type nodeSub struct {
	ws    *waits
	i     int
	ps    *redis.PubSub
	mu    sync.Mutex
	want  map[string]bool // channel → wanted
	have  map[string]bool // the channels subscribed (by the sender goroutine)
	dirty chan struct{}
	empty time.Time // since when want has been empty (zero while not)
}

func newNodeSub(ws *waits, i int, client redis.UniversalClient) *nodeSub {
	s := &nodeSub{ws: ws, i: i, ps: client.Subscribe(context.Background()), want: map[string]bool{}, have: map[string]bool{},
		dirty: make(chan struct{}, 1)}
	go s.read()
	go s.send()
	return s
}

// set marks channel wanted or not. Called with ws.mu held.
func (s *nodeSub) set(channel string, on bool) {
	s.mu.Lock()
	if on {
		s.want[channel] = true
		s.empty = time.Time{}
	} else {
		delete(s.want, channel)
		if len(s.want) == 0 {
			s.empty = time.Now()
		}
	}
	s.mu.Unlock()
	select {
	case s.dirty <- struct{}{}:
	default:
	}
}

// read passes every message and (re)subscription confirmation to the
// waits: a confirmation may follow a reconnection, after which a release
// published meanwhile was missed.
func (s *nodeSub) read() {
	for m := range s.ps.ChannelWithSubscriptions() {
		switch m := m.(type) {
		case *redis.Message:
			s.ws.notify(m.Channel)
		case *redis.Subscription:
			if m.Kind == "subscribe" {
				s.ws.notify(m.Channel)
			}
		}
	}
}

// send brings the subscribed channels to the wanted ones, whenever they
// change, until the subscription has been idle for subIdle.
func (s *nodeSub) send() {
	idle := time.NewTimer(subIdle)
	defer idle.Stop()
	for {
		select {
		case <-s.dirty:
		case <-idle.C:
			if s.closeIdle() {
				return
			}
		}
		idle.Reset(subIdle)
		s.mu.Lock()
		var on, off []string
		for c := range s.want {
			if !s.have[c] {
				on = append(on, c)
			}
		}
		for c := range s.have {
			if !s.want[c] {
				off = append(off, c)
			}
		}
		s.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), s.ws.r.cfg.nodeTimeout)
		if len(on) > 0 {
			_ = s.ps.Subscribe(ctx, on...) // remembered even if it fails: subscribed again on reconnection
		}
		if len(off) > 0 {
			_ = s.ps.Unsubscribe(ctx, off...)
		}
		cancel()
		for _, c := range on {
			s.have[c] = true
		}
		for _, c := range off {
			delete(s.have, c)
		}
	}
}

// closeIdle closes the subscription if it has wanted no channel for
// subIdle, and reports whether it did.
func (s *nodeSub) closeIdle() bool {
	s.ws.mu.Lock()
	defer s.ws.mu.Unlock()
	s.mu.Lock()
	idle := len(s.want) == 0 && !s.empty.IsZero() && time.Since(s.empty) >= subIdle
	s.mu.Unlock()
	if !idle {
		return false
	}
	s.ws.subs[s.i] = nil
	_ = s.ps.Close() // ends read
	return true
}

// takeBack deletes w's turn on every node where it still holds it, in the
// background: a waiter that stops waiting does not keep the others
// waiting until it expires.
func (r *Redlock) takeBack(w *waiter) {
	r.pending.add(len(r.nodes))
	ctx, cancel := context.WithTimeout(context.Background(), r.releaseBound(r.turnTTL()))
	left := afterAll(len(r.nodes), cancel)
	for _, n := range r.nodes {
		n.DeleteIfValueAsync(ctx, w.keys.Turn, w.id, func(bool, error) {
			r.pending.done()
			left()
		})
	}
}
