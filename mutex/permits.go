package mutex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

// maxPermits bounds a lock's permits: an acquisition tries them one by
// one, one round trip each, until one is free.
const maxPermits = 64

// Permits makes the lock called name admit n holders at once in the fleet
// ("at most n of these at once"), a semaphore: each holder holds one of its
// n permits, a lock of its own named name#0 to name#(n-1), won, kept alive,
// lost and fenced as any lock is (its Name is the permit's), so that a
// crashed holder's permit comes back when its TTL runs out. TryLock tries
// the permits one by one from a random one until one is won (ErrHeld when
// all are held, ErrNoQuorum when some could not be decided); Lock does so
// again when a permit is released (woken as Lock is for a lock), or after
// a retry delay at most, until one is won or its context ends. n is 1 to 64
// (Permits(1) is a semaphore of one permit, name#0, not the lock called
// name); a permit claims no occurrence (Occurrence is refused). Every user of a name must give it the same n. See
// docs/semaphore.md for why a permit is a lock rather than a count.
func Permits(n int) LockOption {
	return func(c *lockConfig) { c.permits = n }
}

// checkPermits refuses a count of permits out of range, permits that claim
// an occurrence, and a name whose permits' names are not valid.
func checkPermits(name string, lc lockConfig) error {
	switch {
	case lc.permits == 0: // no Permits: a lock
		return nil
	case lc.permits < 1 || lc.permits > maxPermits:
		return fmt.Errorf("%w: lock %q: %d permits: want 1 to %d", ErrInvalidOption, name, lc.permits, maxPermits)
	case lc.occurrence != 0:
		return fmt.Errorf("%w: lock %q: a permit claims no occurrence (Occurrence with Permits)", ErrInvalidOption, name)
	}
	if err := engine.CheckName(permitName(name, lc.permits-1)); err != nil {
		return fmt.Errorf("%w: lock %q: its permits' names: %v", ErrInvalidOption, name, err)
	}
	return nil
}

// permitName returns the name of permit i of the lock called name.
func permitName(name string, i int) string { return name + "#" + strconv.Itoa(i) }

// tryPermits makes one attempt at each permit of the lock called name
// (lc.permits of them), from a random one, until one is won.
func (r *Redlock) tryPermits(ctx context.Context, name string, ttl time.Duration, lc lockConfig) (*Lock, error) {
	n := lc.permits
	lc.permits = 0
	start := rand.N(n)
	held := 0
	var undecided error
	for k := range n {
		keys, _ := r.keys.Lock(permitName(name, (start+k)%n)) // checked by checkPermits
		l, err := r.tryLock(ctx, keys, ttl, lc)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, ErrHeld):
			held++
		case undecided == nil:
			undecided = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if undecided != nil {
		return nil, fmt.Errorf("%w: lock %q: %d of %d permits held, the others undecided: %w", ErrNoQuorum, name, held, n, undecided)
	}
	return nil, fmt.Errorf("%w: lock %q: all %d permits held", ErrHeld, name, n)
}

// lockPermits is Lock for a lock of several permits: tryPermits until a
// permit is won or ctx ends, woken by the release of any permit, as Lock
// is by its lock's (the Redlock's waiters for the permits form one line;
// across Redlocks there is no turn), and after a retry delay at most.
func (r *Redlock) lockPermits(ctx context.Context, name string, ttl time.Duration, lc lockConfig) (*Lock, error) {
	// The line's name is no lock's ("{" is not allowed in one), and says
	// n: waiters that (wrongly) give one name different counts do not
	// share a line (the channels they share then wake only one of them).
	group := engine.LockKeys{Name: "{permits " + strconv.Itoa(lc.permits) + "}" + name}
	channels := make([]string, lc.permits)
	for i := range channels {
		keys, _ := r.keys.Lock(permitName(name, i))
		channels[i] = keys.Lock
	}
	w := r.waits.join(group, channels)
	defer r.waits.leave(w)
	return r.wait(ctx, w, func(int) (*Lock, error) { return r.tryPermits(ctx, name, ttl, lc) })
}
