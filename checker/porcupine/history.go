package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// The history format the fault matrix writes (test/matrix/histories.ts), one JSON file per cell.
// Times are nanoseconds after Origin on one clock: the host's wall clock, read by the Temporal
// server (history event times) and by the external systems (their ledgers), all on one machine.

const historyFormat = "openworker-history/1"

// History is one matrix cell: the calls it made and everything that happened to them.
type History struct {
	Format string `json:"format"`
	Cell   string `json:"cell"`
	Clock  string `json:"clock"`
	Origin string `json:"origin"`
	Calls  []Call `json:"calls"`
	Ops    []Op   `json:"ops"`
	// Path is where the history was read from (not in the file).
	Path string `json:"-"`
}

// Call is one tool call under check, named by its execution ID.
type Call struct {
	ExecutionID   string `json:"executionId"`
	Tool          string `json:"tool"`
	Policy        string `json:"policy"`
	NeedsApproval bool   `json:"needsApproval"`
	Protected     bool   `json:"protected"`
}

// Op is one operation: a person's decision, an activity run, a request or an effect at the
// external system, or a reported success. Call and Return bound the instant it took effect.
type Op struct {
	ExecutionID string `json:"executionId"`
	Kind        string `json:"kind"`
	Call        int64  `json:"call"`
	Return      int64  `json:"return"`
	Source      string `json:"source"`
	// Decisions: applied | ignored | unknown (a run whose audit is gone); invoke: how the run
	// ended; request: the external system's answer; lookup: what reconcile() found.
	Outcome string `json:"outcome,omitempty"`
	// approve: bound to this execution ID and to the digest of the arguments that ran.
	Bound      bool   `json:"bound,omitempty"`
	Decision   string `json:"decision,omitempty"`
	By         string `json:"by,omitempty"`
	DecisionID string `json:"decisionId,omitempty"`
	ActivityID string `json:"activityId,omitempty"`
	Attempt    int    `json:"attempt,omitempty"`
	// report: activity (the tool's activity completed) | reconcile (a lookup found it applied).
	Via string `json:"via,omitempty"`
	// Another caller's request or effect under the same key (F10): not this call's.
	Foreign bool   `json:"foreign,omitempty"`
	Event   int64  `json:"event,omitempty"`
	RunID   string `json:"runId,omitempty"`
	// Filled from the call when read: the model needs it per operation.
	NeedsApproval bool `json:"-"`
	Protected     bool `json:"-"`
}

var kinds = map[string]bool{
	"approve": true, "reject": true, "decide": true, "invoke": true, "lookup": true,
	"request": true, "effect": true, "report": true,
}

// readHistories reads every *.json file of dir (sorted), or the one file dir names.
func readHistories(dir string) ([]History, error) {
	var paths []string
	if st, err := os.Stat(dir); err != nil {
		return nil, err
	} else if st.IsDir() {
		paths, err = filepath.Glob(filepath.Join(dir, "*.json"))
		if err != nil {
			return nil, err
		}
	} else {
		paths = []string{dir}
	}
	sort.Strings(paths)
	out := make([]History, 0, len(paths))
	for _, p := range paths {
		h, err := readHistory(p)
		if err != nil {
			return nil, err
		}
		out = append(out, h)
	}
	return out, nil
}

func readHistory(path string) (History, error) {
	var h History
	raw, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		return h, fmt.Errorf("%s: %v", path, err)
	}
	h.Path = path
	if h.Format != historyFormat {
		return h, fmt.Errorf("%s: format %q, expected %q", path, h.Format, historyFormat)
	}
	calls := map[string]Call{}
	for _, c := range h.Calls {
		calls[c.ExecutionID] = c
	}
	for i := range h.Ops {
		op := &h.Ops[i]
		if !kinds[op.Kind] {
			return h, fmt.Errorf("%s: op %d: unknown kind %q", path, i, op.Kind)
		}
		if op.Return < op.Call {
			return h, fmt.Errorf("%s: op %d (%s): returns before its call", path, i, op.Kind)
		}
		// Operations on calls the cell did not run (another session's ID in an ignored decision)
		// are checked as calls that need an approval.
		c, ok := calls[op.ExecutionID]
		op.NeedsApproval = !ok || c.NeedsApproval
		op.Protected = ok && c.Protected
	}
	return h, nil
}
