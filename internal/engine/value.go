package engine

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// valueVersion starts every lock value the library writes, so that the
// leak scan can tell them from foreign values under the prefix.
const valueVersion = "rc1"

// TokenLen is the length of a token in hex characters (128 random bits).
const TokenLen = 32

// ErrBadValue is matched by the errors of ParseValue.
var ErrBadValue = errors.New("redcron: not a redcron lock value")

// Value is what a lock key holds: who holds the lock, since when, and for
// which occurrence. Release and extend compare the whole encoded value, so
// a lock that changed hands is never touched.
type Value struct {
	// Token is 128 random bits in hex, unique per acquisition.
	Token string
	// Acquired is when the acquisition started, by the owner's clock,
	// truncated to the millisecond.
	Acquired time.Time
	// Occurrence is the occurrence the lock was taken for, in unix
	// milliseconds, or 0.
	Occurrence int64
	// Owner identifies the process holding the lock (a scheduler's instance
	// id); it may be empty and may contain any character.
	Owner string
}

// NewToken returns a fresh random token of TokenLen hex characters.
func NewToken() string {
	var b [TokenLen / 2]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+).
	return hex.EncodeToString(b[:])
}

// String encodes v as stored in Redis:
// "rc1|<token>|<acquired unix ms>|<occurrence unix ms>|<owner>".
func (v Value) String() string {
	var b strings.Builder
	b.Grow(len(valueVersion) + TokenLen + len(v.Owner) + 32)
	b.WriteString(valueVersion)
	b.WriteByte('|')
	b.WriteString(v.Token)
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(v.Acquired.UnixMilli(), 10))
	b.WriteByte('|')
	b.WriteString(strconv.FormatInt(v.Occurrence, 10))
	b.WriteByte('|')
	b.WriteString(v.Owner)
	return b.String()
}

// ParseValue decodes a lock value written by String. Its errors match
// ErrBadValue and say which part is wrong.
func ParseValue(s string) (Value, error) {
	parts := strings.SplitN(s, "|", 5)
	if len(parts) != 5 || parts[0] != valueVersion {
		return Value{}, fmt.Errorf("%w: %.40q: no %q header", ErrBadValue, s, valueVersion)
	}
	tok := parts[1]
	if len(tok) != TokenLen {
		return Value{}, fmt.Errorf("%w: %.40q: token is %d characters, want %d", ErrBadValue, s, len(tok), TokenLen)
	}
	if _, err := hex.DecodeString(tok); err != nil {
		return Value{}, fmt.Errorf("%w: %.40q: token is not hex", ErrBadValue, s)
	}
	acq, err := parseMillis(parts[2])
	if err != nil {
		return Value{}, fmt.Errorf("%w: %.40q: acquired time: %w", ErrBadValue, s, err)
	}
	occ, err := parseMillis(parts[3])
	if err != nil {
		return Value{}, fmt.Errorf("%w: %.40q: occurrence: %w", ErrBadValue, s, err)
	}
	return Value{Token: tok, Acquired: time.UnixMilli(acq), Occurrence: occ, Owner: parts[4]}, nil
}

func parseMillis(s string) (int64, error) {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, err
	}
	if n < 0 || strconv.FormatInt(n, 10) != s {
		return 0, fmt.Errorf("%q is not a canonical non-negative integer", s)
	}
	return n, nil
}
