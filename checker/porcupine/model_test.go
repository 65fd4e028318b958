package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// The checker must be able to fail: each crafted history under testdata/bad breaks one promise
// and is rejected for that reason; each under testdata/ok is a legal history that looks close to one.
var badReasons = map[string]string{
	"duplicate-effect":               "a second effect for one approved execution ID",
	"success-before-effect":          "success reported (activity) before its effect",
	"effect-without-approval":        "ran without an approval",
	"effect-without-run":             "before any run of the call",
	"decided-success-without-effect": "success decided before the effect existed",
	"approved-after-reject":          "approved after it was rejected",
	"protected-retried":              "a protected call was retried by Temporal",
	"two-settling-decisions":         "a second recovery decision applied after a person settled the call",
}

func TestCraftedHistories(t *testing.T) {
	for _, dir := range []string{"ok", "bad"} {
		paths, _ := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		if len(paths) == 0 {
			t.Fatalf("no histories in testdata/%s", dir)
		}
		for _, p := range paths {
			name := strings.TrimSuffix(filepath.Base(p), ".json")
			t.Run(dir+"/"+name, func(t *testing.T) {
				h, err := readHistory(p)
				if err != nil {
					t.Fatal(err)
				}
				r := checkHistory(h, 10*time.Second)
				if dir == "ok" {
					if r.result != porcupine.Ok {
						t.Fatalf("rejected a legal history: %s", r.why)
					}
					return
				}
				want, ok := badReasons[name]
				if !ok {
					t.Fatalf("no expected reason for %s", name)
				}
				if r.result != porcupine.Illegal || !strings.Contains(r.why, want) {
					t.Fatalf("got %v %q, want Illegal with %q", r.result, r.why, want)
				}
			})
		}
	}
}

func TestMalformedHistoryIsRefused(t *testing.T) {
	p := filepath.Join(t.TempDir(), "h.json")
	if err := os.WriteFile(p, []byte(`{"format":"openworker-history/1","cell":"x","ops":[{"kind":"teleport"}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readHistory(p); err == nil || !strings.Contains(err.Error(), "unknown kind") {
		t.Fatalf("got %v", err)
	}
}
