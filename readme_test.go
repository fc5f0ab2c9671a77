package redcron_test

import (
	"os"
	"strings"
	"testing"
)

// TestReadmeEmbeddingCode: the README's embedding code is the body of the
// compiled ExampleNewRedlockLocker, so that it cannot drift from the API.
func TestReadmeEmbeddingCode(t *testing.T) {
	src, err := os.ReadFile("scheduler/example_redis_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "func ExampleNewRedlockLocker() {\n")
	if !ok {
		t.Fatal("ExampleNewRedlockLocker not found")
	}
	body, _, ok = strings.Cut(body, "\n}\n")
	if !ok {
		t.Fatal("end of ExampleNewRedlockLocker not found")
	}
	var lines []string
	for line := range strings.Lines(body) {
		lines = append(lines, strings.TrimPrefix(line, "\t"))
	}
	want := strings.Join(lines, "") + "\n"
	if !strings.Contains(string(readme), "```go\n"+want+"```") {
		t.Errorf("README.md does not show the body of ExampleNewRedlockLocker verbatim; it should read:\n%s", want)
	}
}
