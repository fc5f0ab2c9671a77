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

// maxPermits bounds a semaphore's permits: an acquisition tries them one
// by one, one round trip each, until one is free.
const maxPermits = 64

// Semaphore limits how many holders a name has at once across the nodes:
// "at most N of these at once in the fleet". Each of its permits is a
// lock of its own, named after the semaphore and the permit's number
// ("reports#0", "reports#1", ...), and held as any lock is: won on a
// quorum, for a TTL, kept alive with KeepAlive, lost (and its holder's
// context cancelled) when it can no longer be proven, with a fencing token
// that orders the holders of that permit. A permit whose holder crashed
// comes back when its TTL runs out.
//
// A permit is a lock rather than a count on each node because counts on a
// quorum do not bound the holders: with 5 nodes and 2 permits, three
// holders can each find room on a different majority. Every user of a
// semaphore must give it the same number of permits; with different
// numbers, the largest is the limit. Create it with Redlock.Semaphore.
type Semaphore struct {
	r     *Redlock
	name  string
	slots []string
}

// Semaphore returns the semaphore called name, of permits permits (1 to
// 64). It does no I/O. The name and its permits' names must be valid lock
// names: a bad name or count is an error matching ErrInvalidOption.
func (r *Redlock) Semaphore(name string, permits int) (*Semaphore, error) {
	if permits < 1 || permits > maxPermits {
		return nil, fmt.Errorf("%w: semaphore %q: %d permits: want 1 to %d", ErrInvalidOption, name, permits, maxPermits)
	}
	if err := engine.CheckName(name); err != nil {
		return nil, fmt.Errorf("%w: semaphore %q: %v", ErrInvalidOption, name, err)
	}
	s := &Semaphore{r: r, name: name, slots: make([]string, permits)}
	for i := range s.slots {
		s.slots[i] = name + "#" + strconv.Itoa(i)
		if err := engine.CheckName(s.slots[i]); err != nil {
			return nil, fmt.Errorf("%w: semaphore %q: its permit %q: %v", ErrInvalidOption, name, s.slots[i], err)
		}
	}
	return s, nil
}

// TryAcquire makes one attempt at each permit, starting from a random one,
// until one is won, and returns it: a Lock, released with Release. When
// none is, the error matches ErrNotAcquired, and ErrHeld if every permit
// is held by another owner, or ErrNoQuorum if some could not be decided
// (nodes down or slow); its text tells how many were held. opts are a
// lock's (Owner); a permit claims no occurrence: Occurrence is refused
// (ErrInvalidOption), as one occurrence could be won once per permit.
func (s *Semaphore) TryAcquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	var lc lockConfig
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("%w: semaphore %q: nil LockOption", ErrInvalidOption, s.name)
		}
		o(&lc)
	}
	if lc.occurrence != 0 {
		return nil, fmt.Errorf("%w: semaphore %q: a permit claims no occurrence (Occurrence)", ErrInvalidOption, s.name)
	}
	if err := s.r.checkTTL(s.name, ttl); err != nil {
		return nil, err
	}
	start := rand.N(len(s.slots))
	held := 0
	var undecided error
	for k := range s.slots {
		l, err := s.r.TryLock(ctx, s.slots[(start+k)%len(s.slots)], ttl, opts...)
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
		return nil, fmt.Errorf("%w: semaphore %q: %d of %d permits held, the others undecided: %w",
			ErrNoQuorum, s.name, held, len(s.slots), undecided)
	}
	return nil, fmt.Errorf("%w: semaphore %q: all %d permits held", ErrHeld, s.name, len(s.slots))
}

// Acquire waits for a permit: it calls TryAcquire until a permit is won or
// ctx ends, waiting about the retry delay (WithRetryDelay) between rounds,
// and returns the permit, or the last round's error joined with ctx's
// cause.
func (s *Semaphore) Acquire(ctx context.Context, ttl time.Duration, opts ...LockOption) (*Lock, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var last error
	for {
		l, err := s.TryAcquire(ctx, ttl, opts...)
		switch {
		case err == nil:
			return l, nil
		case errors.Is(err, ErrInvalidOption):
			return nil, err
		case ctx.Err() != nil && last != nil:
			return nil, errors.Join(last, context.Cause(ctx))
		case ctx.Err() != nil:
			return nil, errors.Join(err, context.Cause(ctx))
		}
		last = err
		d := s.r.cfg.retryDelay/2 + rand.N(s.r.cfg.retryDelay)
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		select {
		case <-timer.C:
		case <-ctx.Done():
			return nil, errors.Join(last, context.Cause(ctx))
		}
	}
}
