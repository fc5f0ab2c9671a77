package scheduler

import (
	"errors"
	"fmt"
	"testing"

	"github.com/redcron/redcron/mutex"
)

// isTarget is an error whose Is method matches target.
type isTarget struct{ target error }

func (e isTarget) Error() string        { return "matches " + e.target.Error() }
func (e isTarget) Is(target error) bool { return target == e.target }

// TestRefusedAsErrorsIs: refused's one walk of an error's tree answers as
// errors.Is with each refusal would, for wrapped, joined and multi-wrapped
// errors and an error with an Is method of its own.
func TestRefusedAsErrorsIs(t *testing.T) {
	other := errors.New("other")
	for _, err := range []error{
		nil, other, mutex.ErrHeld, mutex.ErrNoQuorum, ErrOverlap, errPaused,
		fmt.Errorf("wrapped: %w", mutex.ErrAlreadyRun),
		fmt.Errorf("wrapped: %w", fmt.Errorf("twice: %w", ErrOverlap)),
		fmt.Errorf("two: %w, %w", other, mutex.ErrNoQuorum),
		fmt.Errorf("two: %w, %w", other, fmt.Errorf("deep: %w", mutex.ErrHeld)),
		errors.Join(other, errors.Join(mutex.ErrNoQuorum, errPaused)),
		errors.Join(other, mutex.ErrNoQuorum),
		isTarget{ErrOverlap}, isTarget{other},
		fmt.Errorf("wrapped: %w", isTarget{mutex.ErrAlreadyRun}),
	} {
		want := errors.Is(err, mutex.ErrHeld) || errors.Is(err, mutex.ErrAlreadyRun) || errors.Is(err, ErrOverlap) || errors.Is(err, errPaused)
		if got := refused(err); got != want {
			t.Errorf("refused(%v) = %v; errors.Is says %v", err, got, want)
		}
	}
}
