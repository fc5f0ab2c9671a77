package engine_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redcron/redcron/internal/engine"
)

func TestValueRoundTrip(t *testing.T) {
	v := engine.Value{Token: engine.NewToken(), Acquired: time.UnixMilli(1795240366123), Occurrence: 1795240366000, Owner: "replica|7 ü"}
	got, err := engine.ParseValue(v.String())
	if err != nil {
		t.Fatal(err)
	}
	if got.Token != v.Token || !got.Acquired.Equal(v.Acquired) || got.Occurrence != v.Occurrence || got.Owner != v.Owner {
		t.Fatalf("round trip: got %+v, want %+v", got, v)
	}
}

func TestNewTokenUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		tok := engine.NewToken()
		if len(tok) != engine.TokenLen || seen[tok] {
			t.Fatalf("token %q: wrong length or repeated", tok)
		}
		seen[tok] = true
	}
}

func TestParseValueRejects(t *testing.T) {
	tok := strings.Repeat("a", engine.TokenLen)
	for _, s := range []string{
		"",
		"someone else",
		"rc1|" + tok + "|1|2",        // too few fields
		"rc2|" + tok + "|1|2|o",      // unknown version
		"rc1|" + tok[:31] + "|1|2|o", // short token
		"rc1|" + strings.Repeat("g", 32) + "|1|2|o", // not hex
		"rc1|" + tok + "|-1|2|o",                    // negative time
		"rc1|" + tok + "|01|2|o",                    // not canonical
		"rc1|" + tok + "|1|x|o",                     // bad occurrence
		"rc1|" + tok + "|99999999999999999999|2|o",  // overflow
	} {
		if _, err := engine.ParseValue(s); !errors.Is(err, engine.ErrBadValue) {
			t.Errorf("ParseValue(%q) = %v, want ErrBadValue", s, err)
		}
	}
}

// FuzzParseValue: parsing never panics, and whatever parses encodes back
// to the same string.
func FuzzParseValue(f *testing.F) {
	f.Add(engine.Value{Token: strings.Repeat("0f", 16), Acquired: time.UnixMilli(5), Occurrence: 7, Owner: "a|b"}.String())
	f.Add("rc1|||||")
	f.Add("garbage")
	f.Fuzz(func(t *testing.T, s string) {
		v, err := engine.ParseValue(s)
		if err != nil {
			if !errors.Is(err, engine.ErrBadValue) {
				t.Fatalf("error %v does not match ErrBadValue", err)
			}
			return
		}
		if got := v.String(); !strings.EqualFold(got, s) {
			t.Fatalf("ParseValue(%q).String() = %q", s, got)
		}
	})
}
